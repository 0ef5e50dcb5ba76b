// The dashboard (docs/dashboard.md, D-95…D-99): sign-in, the navigation, and a page per hash route.
// Plain DOM (D-95): a handful of pages of forms and tables, no framework to ship or to keep up to date.
import { ApiFailure, api, onExpired, setCsrf } from './api.ts';
import { auditPage } from './audit.ts';
import { conversationPage, conversationsPage } from './conversations.ts';
import { h, notice } from './dom.ts';
import { keysPage } from './keys.ts';
import type { Session } from './types.ts';
import { usagePage } from './usage.ts';

const root = document.getElementById('root')!;
let session: Session | null = null;

export interface PageContext {
  session: Session;
  /** The page's own region, below its heading. */
  main: HTMLElement;
  /** Query parameters of the route (after `?` in the hash). */
  params: URLSearchParams;
  /** Path segments after the page's name. */
  rest: string[];
  canWrite: boolean;
}

const PAGES: { path: string; label: string; render: (c: PageContext) => Promise<void> }[] = [
  { path: 'keys', label: 'API keys', render: keysPage },
  { path: 'conversations', label: 'Conversations', render: conversationsPage },
  { path: 'usage', label: 'Usage and credits', render: usagePage },
  { path: 'audit', label: 'Audit log', render: auditPage },
];

function signIn(message?: string): void {
  session = null;
  setCsrf(null);
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username', required: true, id: 'email' });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true, id: 'password' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const status = h('div', { class: 'status' });
  if (message) status.append(notice('error', message));
  let timer: ReturnType<typeof setInterval> | undefined;
  const form = h(
    'form',
    { class: 'card sign-in', 'aria-labelledby': 'sign-in-title', novalidate: true },
    h('h1', { id: 'sign-in-title', tabindex: -1 }, 'Sign in to Parley'),
    h('div', { class: 'field' }, h('label', { for: 'email' }, 'Email'), email),
    h('div', { class: 'field' }, h('label', { for: 'password' }, 'Password'), password),
    status,
    submit,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    status.replaceChildren();
    if (!email.value || !password.value) {
      status.append(notice('error', 'Enter your email and your password.'));
      (email.value ? password : email).focus();
      return;
    }
    submit.disabled = true;
    try {
      const s = await api<Session>('POST', '/sessions', { email: email.value, password: password.value });
      password.value = '';
      start(s);
    } catch (err) {
      const f = err instanceof ApiFailure ? err : new ApiFailure(0, null, String(err), null, null);
      password.value = '';
      if (f.status === 429 && f.retryAfter) {
        // D-69's back-off, shown: the button waits as long as the server will.
        let left = f.retryAfter;
        const line = notice('error', '');
        const tick = () => {
          line.textContent = `Too many failed sign-ins. Try again in ${left} second${left === 1 ? '' : 's'}.`;
        };
        tick();
        status.append(line);
        clearInterval(timer);
        timer = setInterval(() => {
          left -= 1;
          if (left > 0) return tick();
          clearInterval(timer);
          line.textContent = 'You can try again now.';
          submit.disabled = false;
        }, 1000);
        password.focus();
        return;
      }
      status.append(
        notice('error', f.status === 401 ? 'That email and password do not match a member. Check both and try again.' : f.message),
      );
      submit.disabled = false;
      password.focus();
    }
  });
  root.replaceChildren(h('main', { id: 'main', class: 'center' }, form));
  (message ? form.querySelector<HTMLElement>('h1') : email)?.focus();
}

function start(s: Session): void {
  session = s;
  setCsrf(s.csrf_token);
  if (!location.hash.startsWith('#/')) history.replaceState(null, '', '#/keys');
  render();
}

async function signOut(): Promise<void> {
  try {
    await api('DELETE', '/sessions/current');
  } catch {
    // Signed out already (an expired session): the sign-in page is where this ends either way.
  }
  signIn();
}

function shell(s: Session, current: string): HTMLElement {
  const nav = h(
    'nav',
    { 'aria-label': 'Dashboard' },
    h(
      'ul',
      {},
      ...PAGES.map((p) => h('li', {}, h('a', { href: `#/${p.path}`, 'aria-current': p.path === current ? 'page' : undefined }, p.label))),
    ),
  );
  return h(
    'header',
    { class: 'top' },
    h('a', { href: '#main', class: 'skip' }, 'Skip to content'),
    h(
      'div',
      { class: 'brand' },
      h('span', { class: 'product' }, 'Parley'),
      h('span', { class: 'team', 'data-testid': 'team' }, s.team.name),
    ),
    nav,
    h(
      'div',
      { class: 'who' },
      h('span', { 'data-testid': 'member' }, `${s.member.email} (${s.member.role})`),
      h('button', { type: 'button', onclick: () => void signOut() }, 'Sign out'),
    ),
  );
}

async function render(): Promise<void> {
  const s = session;
  if (!s) return signIn();
  const [path = '', query = ''] = location.hash.slice(2).split('?');
  const [name = 'keys', ...rest] = path.split('/').map(decodeURIComponent);
  const page =
    name === 'conversation'
      ? { path: 'conversations', label: 'Conversation', render: conversationPage }
      : PAGES.find((p) => p.path === name);
  const heading = h('h1', { tabindex: -1 }, page?.label ?? 'Not found');
  const region = h('div', { class: 'page', 'aria-busy': 'true', 'data-route': location.hash });
  const main = h('main', { id: 'main', tabindex: -1 }, heading, region);
  root.replaceChildren(shell(s, page?.path ?? ''), main);
  document.title = `${page?.label ?? 'Not found'} · Parley dashboard`;
  heading.focus();
  if (!page) return void region.append(h('p', {}, 'No such page. Choose one in the navigation.'));
  try {
    await page.render({ session: s, main: region, params: new URLSearchParams(query), rest, canWrite: s.member.role === 'admin' });
  } catch (err) {
    if (session) region.append(notice('error', err instanceof Error ? err.message : String(err)));
  }
  region.setAttribute('aria-busy', 'false');
}

onExpired(() => signIn('Your session has ended. Sign in again to continue.'));
window.addEventListener('hashchange', () => void render());

(async () => {
  try {
    start(await api<Session>('GET', '/session'));
  } catch {
    signIn();
  }
})();
