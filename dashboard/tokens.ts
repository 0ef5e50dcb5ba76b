// Settings → Access tokens (D-68, D-153): the signed-in member's personal access tokens (the CLI's
// `parley admin login` makes one), with their last use; revoking one asks first, naming it.
import { api, listAll } from './api.ts';
import { confirmDialog } from './dialog.ts';
import { errorNotice, h, notice, table, when } from './dom.ts';
import type { PageContext } from './main.ts';
import type { AccessToken } from './types.ts';

export async function tokensPage(c: PageContext): Promise<void> {
  const { main } = c;
  const status = h('div', { class: 'status' });
  const listArea = h('div', {});
  const fail = (err: unknown) => status.replaceChildren(errorNotice(err));
  const refresh = async () => {
    const list = await listAll<AccessToken>('/tokens');
    const rows = list.data.map((t) => [
      h('span', {}, t.name),
      h('code', {}, t.redacted),
      h('span', {}, when(t.created_at)),
      h('span', {}, t.last_used_at === null ? 'Never' : when(t.last_used_at)),
      h('span', {}, when(t.expires_at)),
      h(
        'div',
        { class: 'row-actions' },
        h(
          'button',
          { type: 'button', class: 'danger', onclick: (e: Event) => revoke(t, e.currentTarget as Element) },
          'Revoke',
          h('span', { class: 'visually-hidden' }, ` ${t.name}`),
        ),
      ),
    ]);
    listArea.replaceChildren(
      rows.length
        ? table(['Name', 'Token', 'Created', 'Last used', 'Expires', 'Actions'], rows, 'Access tokens')
        : h('p', {}, 'No access tokens. ', h('code', {}, 'parley admin login'), ' makes one for the CLI.'),
    );
  };
  const revoke = (t: AccessToken, opener: Element) => {
    confirmDialog(
      `Revoke ${t.name}?`,
      `The token ${t.name} (${t.redacted}) will be refused at once: a CLI or script signed in with it must sign in again.`,
      `Revoke ${t.name}`,
      {
        act: () => api('DELETE', `/tokens/${encodeURIComponent(t.id)}`).then(() => {}),
        done: async () => {
          status.replaceChildren(notice('ok', `${t.name} (${t.redacted}) revoked.`));
          await refresh();
          document.querySelector<HTMLElement>('main h1')?.focus();
        },
        fail,
      },
      opener,
    );
  };
  main.append(
    h(
      'p',
      {},
      'Your personal access tokens of the admin API, for the CLI (',
      h('code', {}, 'parley admin login'),
      ') and scripts. A token is yours alone: revoke one you no longer use, or one left on a machine that moved.',
    ),
    status,
    h('h2', {}, 'Tokens'),
    listArea,
  );
  await refresh();
}
