// The dashboard (docs/dashboard.md, D-95…D-99): sign-in, the navigation, and a page per hash route.
// Plain DOM (D-95): a handful of pages of forms and tables, no framework to ship or to keep up to date.
import { ApiFailure, api, onExpired, setCsrf } from './api.ts';
import { appPage, appsPage } from './apps.ts';
import { auditPage } from './audit.ts';
import { conversationPage, conversationsPage } from './conversations.ts';
import { errorNotice, h, notice } from './dom.ts';
import { keysPage } from './keys.ts';
import { membersPage } from './members.ts';
import { tokensPage } from './tokens.ts';
import type { Balance, Session } from './types.ts';
import { creditsBanner, usagePage } from './usage.ts';
import { endpointPage, eventPage } from './webhook-log.ts';
import { webhooksPage } from './webhooks.ts';

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

interface PageDef {
  path: string;
  label: string;
  render: (c: PageContext) => Promise<void>;
  /** A route of the admin surface the page needs, asked once after sign-in: a server without it shows no link. */
  needs?: string;
  /** Under Settings in the navigation (§5.3: keys "are created and found in the dashboard under Settings, then API Keys"). */
  settings?: true;
}

const ALL_PAGES: PageDef[] = [
  { path: 'apps', label: 'Apps', render: appsPage, needs: '/apps' },
  { path: 'conversations', label: 'Conversations', render: conversationsPage },
  { path: 'usage', label: 'Usage and credits', render: usagePage },
  { path: 'audit', label: 'Audit log', render: auditPage },
  { path: 'keys', label: 'API keys', render: keysPage, settings: true },
  { path: 'tokens', label: 'Access tokens', render: tokensPage, settings: true },
  { path: 'members', label: 'Members', render: membersPage, needs: '/members', settings: true },
  { path: 'webhooks', label: 'Webhooks', render: webhooksPage, needs: '/webhook_endpoints', settings: true },
];
let PAGES = ALL_PAGES.filter((p) => !p.needs);
/** Pages under a navigation entry (`#/<name>/<id>`), shown when that entry is. */
const SUBPAGES: (PageDef & { name: string })[] = [
  { name: 'conversation', path: 'conversations', label: 'Conversation', render: conversationPage },
  { name: 'app', path: 'apps', label: 'App', render: appPage },
  { name: 'webhook', path: 'webhooks', label: 'Webhook endpoint', render: endpointPage },
  { name: 'webhook-event', path: 'webhooks', label: 'Webhook event', render: eventPage },
];

/** D-95: pages over routes this server may not have yet (apps, members) appear only when it answers them. */
async function discover(): Promise<void> {
  const there = await Promise.all(
    ALL_PAGES.map((p) =>
      p.needs
        ? api('GET', p.needs).then(
            () => true,
            () => false,
          )
        : true,
    ),
  );
  PAGES = ALL_PAGES.filter((_, i) => there[i]);
}

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
      await start(s);
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
  const invited = h('button', { type: 'button', class: 'link' }, 'I have an invitation');
  invited.addEventListener('click', () => acceptInvite());
  root.replaceChildren(h('main', { id: 'main', class: 'center' }, h('div', { class: 'stack' }, form, invited)));
  (message ? form.querySelector<HTMLElement>('h1') : email)?.focus();
}

/**
 * D-72, D-98: an invitation link is `/dashboard#/invite/<token>`. The token is read once, at load, and the
 * URL replaced at once by `#/invite` (history.replaceState), so that it stays in no URL, history entry or
 * reload; it lives in this closure only, never in web storage. The fragment never reaches a server.
 */
function takeInviteToken(): string | null {
  const m = /^#\/invite\/([^/?]+)$/.exec(location.hash);
  if (!m) return null;
  history.replaceState(null, '', `${location.pathname}#/invite`);
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return m[1]!; // refused by the server as any bad token is
  }
}

/** D-72: an invited member sets a password with the link (or token) an admin passed on, and is signed in. */
function acceptInvite(fromLink: string | null = null): void {
  let linked = fromLink;
  const token = h('input', { type: 'text', id: 'invite-token', required: true, autocomplete: 'off' });
  const tokenField = h('div', { class: 'field' }, h('label', { for: 'invite-token' }, 'Invitation token'), token);
  const password = h('input', { type: 'password', id: 'invite-password', required: true, autocomplete: 'new-password', minlength: 8 });
  const status = h('div', { class: 'status' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Set password and sign in');
  const form = h(
    'form',
    { class: 'card sign-in', 'aria-labelledby': 'invite-title', novalidate: true },
    h('h1', { id: 'invite-title', tabindex: -1 }, 'Set your password'),
    linked === null ? tokenField : h('p', { id: 'invite-from-link' }, 'Your invitation is open: choose a password to join your team.'),
    h('div', { class: 'field' }, h('label', { for: 'invite-password' }, 'New password (8 characters or more)'), password),
    status,
    submit,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    status.replaceChildren();
    const t = linked ?? token.value.trim();
    if (!t || password.value.length < 8) {
      status.append(notice('error', t ? 'Choose a password of 8 characters or more.' : 'Paste the invitation token you were given.'));
      return (t ? password : token).focus();
    }
    submit.disabled = true;
    try {
      const member = await api<{ email: string }>('POST', '/invites/accept', { token: t, password: password.value });
      linked = null;
      const s = await api<Session>('POST', '/sessions', { email: member.email, password: password.value });
      password.value = '';
      history.replaceState(null, '', `${location.pathname}#/keys`);
      await start(s);
    } catch (err) {
      submit.disabled = false;
      password.value = '';
      const badToken = err instanceof ApiFailure && err.param === 'token';
      status.append(
        notice(
          'error',
          badToken ? 'This invitation is unknown, used or expired: ask an admin of your team for a new one.' : (err as Error).message,
        ),
      );
      if (badToken && linked !== null) {
        // The link's token is spent: the form now takes a new one, pasted.
        linked = null;
        form.querySelector('#invite-from-link')?.replaceWith(tokenField);
      }
      (badToken ? token : password).focus();
    }
  });
  const back = h(
    'button',
    {
      type: 'button',
      class: 'link',
      onclick: () => {
        history.replaceState(null, '', location.pathname);
        signIn();
      },
    },
    'Back to sign-in',
  );
  root.replaceChildren(h('main', { id: 'main', class: 'center' }, h('div', { class: 'stack' }, form, back)));
  (linked === null ? token : password).focus();
}

async function start(s: Session): Promise<void> {
  session = s;
  setCsrf(s.csrf_token);
  if (!location.hash.startsWith('#/')) history.replaceState(null, '', '#/keys');
  await discover();
  await render();
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
  const link = (p: PageDef) =>
    h('li', {}, h('a', { href: `#/${p.path}`, 'aria-current': p.path === current ? 'page' : undefined }, p.label));
  const nav = h(
    'nav',
    { 'aria-label': 'Dashboard' },
    h(
      'ul',
      {},
      ...PAGES.filter((p) => !p.settings).map(link),
      h(
        'li',
        { class: 'nav-group' },
        h('span', { id: 'nav-settings', class: 'nav-group-label' }, 'Settings'),
        h('ul', { 'aria-labelledby': 'nav-settings' }, ...PAGES.filter((p) => p.settings).map(link)),
      ),
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
  const page = SUBPAGES.find((p) => p.name === name && PAGES.some((q) => q.path === p.path)) ?? PAGES.find((p) => p.path === name);
  const heading = h('h1', { tabindex: -1 }, page?.label ?? 'Not found');
  const region = h('div', { class: 'page', 'aria-busy': 'true', 'data-route': location.hash });
  const main = h('main', { id: 'main', tabindex: -1 }, heading, region);
  // D-154: spent or nearly spent credits are said on every page, above its heading (a server without
  // `GET /credits` shows none).
  const banner = api<Balance>('GET', '/credits').then(
    (b) => b && creditsBanner(b),
    () => null,
  );
  root.replaceChildren(shell(s, page?.path ?? ''), main);
  document.title = `${page?.label ?? 'Not found'} · Parley dashboard`;
  heading.focus();
  if (!page) return void region.append(h('p', {}, 'No such page. Choose one in the navigation.'));
  try {
    await page.render({ session: s, main: region, params: new URLSearchParams(query), rest, canWrite: s.member.role === 'admin' });
  } catch (err) {
    if (session) region.append(errorNotice(err));
  }
  const said = await banner;
  if (said && session === s) main.prepend(said);
  region.setAttribute('aria-busy', 'false');
}

/**
 * An invitation link opened in a tab that is signed in (D-72): the link is for the person invited, so the
 * page says who is signed in and offers to sign out and accept it; the token is held as at load (D-98).
 */
function invitedWhileSignedIn(s: Session, token: string | null): void {
  const accept = h('button', { type: 'button', class: 'primary', id: 'invite-sign-out' }, 'Sign out and accept the invitation');
  accept.addEventListener('click', async () => {
    try {
      await api('DELETE', '/sessions/current');
    } catch {
      // Signed out already: the invitation form is where this goes either way.
    }
    session = null;
    setCsrf(null);
    acceptInvite(token);
  });
  const heading = h('h1', { tabindex: -1 }, 'An invitation');
  const region = h(
    'div',
    { class: 'page', 'aria-busy': 'false', 'data-route': '#/invite' },
    h(
      'p',
      {},
      `You are signed in as ${s.member.email}. An invitation link is for the person invited: to accept it, sign out first; it then asks for their new password.`,
    ),
    h('div', { class: 'row-actions' }, accept, h('a', { href: '#/keys' }, `Stay signed in as ${s.member.email}`)),
  );
  root.replaceChildren(shell(s, ''), h('main', { id: 'main', tabindex: -1 }, heading, region));
  document.title = 'An invitation · Parley dashboard';
  heading.focus();
}

onExpired(() => signIn('Your session has ended. Sign in again to continue.'));
window.addEventListener('hashchange', () => {
  // A link pasted into the address bar of an open dashboard arrives here, not at load.
  if (/^#\/invite(\/|$)/.test(location.hash)) {
    const token = takeInviteToken();
    return session ? invitedWhileSignedIn(session, token) : acceptInvite(token);
  }
  void render();
});

const invitation = takeInviteToken();
const invited = invitation !== null || location.hash === '#/invite';
(async () => {
  let s: Session;
  try {
    s = await api<Session>('GET', '/session');
  } catch {
    return invited ? acceptInvite(invitation) : signIn();
  }
  try {
    if (!invited) return await start(s);
    // A link opened in a new tab of a signed-in browser: as when pasted into an open dashboard.
    session = s;
    setCsrf(s.csrf_token);
    await discover();
    invitedWhileSignedIn(s, invitation);
  } catch {
    signIn();
  }
})();
