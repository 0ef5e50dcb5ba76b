// Conversations as the team sees them (D-73): a list per app with q search and the deleted filter, and a
// conversation's whole history as text (D-97: content is never markup), restorable while kept.
import { ApiFailure, api, qs } from './api.ts';
import { confirmDialog } from './dialog.ts';
import { errorNotice, field, h, notice, table, when } from './dom.ts';
import type { PageContext } from './main.ts';
import { applyPatch, formOf, renderForm } from '../widget/form.ts';
import type { Conversation, ConversationDetail, Item, List, UsageDay } from './types.ts';

/** The team's app ids: from /apps when the server has it (D-71), else from the apps that have usage. */
async function knownApps(): Promise<{ id: string; name: string }[]> {
  try {
    return (await api<List<{ id: string; name: string }>>('GET', '/apps')).data;
  } catch {
    const since = new Date(Date.now() - 365 * 86_400_000).toISOString().slice(0, 10);
    const usage = await api<{ data: UsageDay[] }>('GET', `/usage${qs({ since })}`).catch(() => ({ data: [] as UsageDay[] }));
    return [...new Set(usage.data.map((d) => d.app_id))].map((id) => ({ id, name: id }));
  }
}

const go = (params: Record<string, string | undefined>) => {
  location.hash = `#/conversations${qs(params)}`;
};

function history(c: Conversation): string {
  if (!c.deleted_at) return 'Live';
  if (c.history === 'kept') return `Deleted ${when(c.deleted_at)}; history kept until ${when(c.history_purge_at)}`;
  return `Deleted ${when(c.deleted_at)}; history purged`;
}

export async function conversationsPage(c: PageContext): Promise<void> {
  const { main, params } = c;
  const apps = await knownApps();
  const appId = params.get('app') ?? apps[0]?.id ?? '';
  const app = h('input', { type: 'text', id: 'conv-app', list: 'conv-apps', value: appId, required: true, autocomplete: 'off' });
  const q = h('input', { type: 'search', id: 'conv-q', value: params.get('q') ?? '' });
  const deleted = h(
    'select',
    { id: 'conv-deleted' },
    ...[
      ['exclude', 'Not deleted'],
      ['include', 'All'],
      ['only', 'Deleted only'],
    ].map(([v, label]) => h('option', { value: v, selected: (params.get('deleted') ?? 'exclude') === v }, label!)),
  );
  const form = h(
    'form',
    { class: 'inline-form', role: 'search', 'aria-label': 'Find conversations', novalidate: true },
    field('App', app),
    h('datalist', { id: 'conv-apps' }, ...apps.map((a) => h('option', { value: a.id }, a.name))),
    field('Title or user id contains', q),
    field('Show', deleted),
    h('button', { type: 'submit', class: 'primary' }, 'Search'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    go({ app: app.value.trim(), q: q.value.trim(), deleted: deleted.value });
  });
  main.append(form);
  if (!appId) return void main.append(h('p', {}, 'Enter an app id to list its conversations.'));
  let list: List<Conversation>;
  try {
    list = await api<List<Conversation>>(
      'GET',
      `/apps/${encodeURIComponent(appId)}/conversations${qs({ q: params.get('q'), deleted: params.get('deleted'), after: params.get('after'), before: params.get('before'), limit: 20 })}`,
    );
  } catch (err) {
    return void main.append(
      err instanceof ApiFailure && err.status === 404 ? notice('error', `No app ${appId} in your team.`) : errorNotice(err),
    );
  }
  const rows = list.data.map((v) => [
    h('a', { href: `#/conversation/${encodeURIComponent(appId)}/${encodeURIComponent(v.id)}` }, titleOf(v)),
    h('span', {}, v.external_user_id ?? '—'),
    h('span', {}, when(v.created_at)),
    h('span', {}, String(v.message_count)),
    h('span', {}, history(v)),
  ]);
  main.append(
    rows.length
      ? table(['Conversation', 'User', 'Created', 'Messages', 'State'], rows, `Conversations of ${appId}`)
      : h('p', {}, 'No conversation matches.'),
  );
  const base = { app: appId, q: params.get('q') ?? undefined, deleted: params.get('deleted') ?? undefined };
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of conversations' });
  const paged = params.has('after') || params.has('before');
  if (paged && list.first_id) pager.append(h('a', { href: `#/conversations${qs({ ...base, before: list.first_id })}` }, 'Newer'));
  if ((list.has_more || params.has('before')) && list.last_id)
    pager.append(h('a', { href: `#/conversations${qs({ ...base, after: list.last_id })}` }, 'Older'));
  if (pager.childElementCount) main.append(pager);
}

/** What a reply's items say when it did not complete (D-38, D-39): shown beside each of its items. */
const UNFINISHED: Record<string, string> = {
  failed: 'reply failed',
  cancelled: 'reply cancelled',
  interrupted: 'reply interrupted',
  incomplete: 'reply incomplete',
};

/**
 * One item of the history, as text (D-97). A data_spec item's patches are folded per response as the
 * widget folds them (widget/form.ts), and the form they build is drawn as the widget draws it, disabled.
 */
function itemView(
  it: Item,
  ended: string | undefined,
  forms: Map<string, { last: string; doc: Record<string, unknown> }>,
): HTMLElement | null {
  const mark = UNFINISHED[ended ?? ''] ?? (it.status === 'incomplete' ? 'incomplete' : '');
  const meta = (label: string) =>
    h('p', { class: 'meta' }, `${label} · ${when(it.created_at)}`, mark ? h('strong', { class: 'mark' }, ` · ${mark}`) : null);
  const cls = mark ? ' unfinished' : '';
  if (it.type === 'message') {
    const text = (it.content ?? []).map((p) => (typeof p.text === 'string' ? p.text : JSON.stringify(p))).join('\n');
    return h(
      'li',
      { class: `item ${it.role === 'user' ? 'user' : 'agent'}${cls}` },
      meta(it.role ?? 'message'),
      h('p', { class: 'body' }, text),
    );
  }
  if (it.type === 'function_call')
    return h('li', { class: `item tool${cls}` }, meta(`Tool call ${it.name ?? ''}`), h('pre', {}, it.arguments ?? ''));
  if (it.type === 'data_spec') {
    // A reply's patches build one form: it is drawn once, where its last patch arrived.
    const folded = forms.get(it.response_id ?? it.id);
    if (folded && folded.last !== it.id) return null;
    const form = folded ? formOf(folded.doc) : null;
    if (form) {
      const drawn = renderForm(form, () => {});
      for (const c of Array.from(drawn.elements)) (c as HTMLInputElement).disabled = true;
      return h('li', { class: `item form${cls}` }, meta('Form shown to the user'), drawn);
    }
  }
  return h('li', { class: `item form${cls}` }, meta(it.type), h('pre', {}, JSON.stringify(it.data ?? it, null, 2)));
}

/**
 * D-158: the name a person knows a conversation by: its title, else the title the agent generated (in
 * the page's language when there is one, marked as generated, as the CLI shows it), else its id.
 */
function titleOf(v: Pick<Conversation, 'id' | 'title' | 'generated_title'>): string {
  if (v.title) return v.title;
  const generated = v.generated_title ?? {};
  const lang = document.documentElement.lang.toLowerCase();
  const t =
    generated[lang] ?? Object.entries(generated).find(([k]) => k.split('-')[0] === lang.split('-')[0])?.[1] ?? Object.values(generated)[0];
  return t ? `${t} (generated)` : v.id;
}

export async function conversationPage(c: PageContext): Promise<void> {
  const [appId = '', id = ''] = c.rest;
  const { main } = c;
  const path = `/apps/${encodeURIComponent(appId)}/conversations/${encodeURIComponent(id)}`;
  const v = await api<ConversationDetail>('GET', path);
  document.querySelector('main h1')!.textContent = titleOf(v);
  const status = h('div', { class: 'status' });
  const facts: [string, string][] = [
    ['Id', v.id],
    ['App', appId],
    ['User', v.external_user_id ?? '—'],
    ['Created', when(v.created_at)],
    ['Messages', String(v.message_count)],
    ['State', history(v)],
  ];
  main.append(
    h(
      'p',
      {},
      h('a', { href: `#/conversations${qs({ app: appId, deleted: v.deleted_at ? 'include' : undefined })}` }, 'Back to the conversations'),
    ),
    h('dl', { class: 'facts' }, ...facts.flatMap(([k, val]) => [h('dt', {}, k), h('dd', {}, val)])),
    status,
  );
  if (c.canWrite && v.deleted_at && v.history === 'kept') {
    const restore = h('button', { type: 'button', class: 'primary' }, 'Restore conversation');
    restore.addEventListener('click', () =>
      confirmDialog(
        'Restore this conversation?',
        `${titleOf(v)} becomes live again on /v1, with its history.`,
        'Restore',
        {
          kind: 'primary',
          act: () => api('POST', `${path}/restore`).then(() => {}),
          done: () => {
            restore.remove();
            status.replaceChildren(notice('ok', 'Restored: the conversation is live again.'));
            document.querySelector<HTMLElement>('main h1')?.focus();
          },
          fail: (err) => status.replaceChildren(errorNotice(err)),
        },
        restore,
      ),
    );
    main.append(restore);
  }
  main.append(h('h2', {}, 'History'));
  const ended = new Map(v.responses.map((r) => [r.id, r.status]));
  // D-22: each reply's data_spec patches folded into its form document, as the widget folds them.
  const forms = new Map<string, { last: string; doc: Record<string, unknown> }>();
  for (const it of v.items) {
    const data = it.data as { type?: string; patch?: unknown } | undefined;
    if (it.type !== 'data_spec' || data?.type !== 'patch') continue;
    const key = it.response_id ?? it.id;
    forms.set(key, { last: it.id, doc: applyPatch(forms.get(key)?.doc ?? {}, data.patch) });
  }
  const items = v.items.flatMap((it) => itemView(it, it.response_id ? ended.get(it.response_id) : undefined, forms) ?? []);
  main.append(
    items.length
      ? h('ol', { class: 'history' }, ...items)
      : h('p', {}, v.history === 'purged' ? 'The history was purged.' : 'No messages yet.'),
  );
  main.append(h('h2', {}, 'Responses'));
  const rows = v.responses.map((r) => [
    h('code', {}, r.id),
    h('span', {}, when(r.created_at)),
    h('span', {}, r.status + (r.error ? ` (${r.error.code ?? r.error.message ?? 'error'})` : '')),
    h('span', {}, r.usage ? `${r.usage.input_tokens ?? 0} in, ${r.usage.output_tokens ?? 0} out` : '—'),
  ]);
  main.append(rows.length ? table(['Response', 'Created', 'Status', 'Tokens'], rows, 'Responses') : h('p', {}, 'No responses.'));
}
