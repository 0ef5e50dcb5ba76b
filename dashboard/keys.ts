// Settings → API Keys (§5.3, D-70): the team's keys redacted; create and roll show the new key once, in a
// dialog, and only there (D-98); revoke asks first, naming the key.
import { api, listAll } from './api.ts';
import { confirmDialog, openDialog } from './dialog.ts';
import { clearFieldErrors, errorNotice, field, fieldError, h, notice, showRefusal, table, when } from './dom.ts';
import type { PageContext } from './main.ts';
import type { ApiKey, ApiKeyCreated } from './types.ts';

const ROLL_GRACE: [string, number][] = [
  ['At once', 0],
  ['In 1 hour', 3600],
  ['In 24 hours', 86_400],
  ['In 7 days', 7 * 86_400],
];

function state(k: ApiKey, now: number): string {
  if (k.revoked_at) return `Revoked ${when(k.revoked_at)}`;
  const rolled = k.rolled_to ? 'Rolled; ' : '';
  if (k.expires_at && k.expires_at <= now) return `${rolled}stopped ${when(k.expires_at)}`;
  if (k.expires_at) return `${rolled}works until ${when(k.expires_at)}`;
  return 'Active';
}

/**
 * A roll's two keys share a name: each says which it is, by the other's redacted key (the only part of a
 * key a person sees), "replaced by …" on the old one, "replaces …" on the new one.
 */
function lineage(k: ApiKey, all: ApiKey[]): string | null {
  const next = k.rolled_to ? all.find((o) => o.id === k.rolled_to) : undefined;
  const prev = all.find((o) => o.rolled_to === k.id);
  const said = [next ? `replaced by ${next.redacted}` : null, prev ? `replaces ${prev.redacted}` : null].filter(Boolean);
  return said.length ? said.join('; ') : null;
}

/** The one place a key is shown whole: closing the dialog removes it from the page. */
function showKey(title: string, created: ApiKeyCreated, opener: Element | null, done: () => void): void {
  const value = h('input', {
    type: 'text',
    readonly: true,
    value: created.key,
    class: 'secret',
    id: 'new-key',
    'aria-describedby': 'new-key-warning',
  });
  const copied = h('span', { role: 'status', class: 'hint' });
  const copy = h('button', { type: 'button', class: 'primary' }, 'Copy key');
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(value.value);
      // Focus stays on Copy (D-155): selecting the field would move it there.
      copied.textContent = 'Copied to the clipboard.';
    } catch {
      // Only here does focus go to the key: Ctrl+C needs it selected.
      value.select();
      copied.textContent = 'The browser did not allow copying: the key is selected, press Ctrl+C (⌘C).';
    }
  });
  const d = openDialog(
    title,
    [
      h(
        'p',
        { class: 'notice warning', id: 'new-key-warning' },
        'Copy this key now: it will not be shown again. Keep it secret; anyone with it can use your apps.',
      ),
      h('div', { class: 'field' }, h('label', { for: 'new-key' }, `${created.name} (${created.type})`), value),
      copied,
    ],
    (dlg) => [copy, h('button', { type: 'button', onclick: () => dlg.close() }, 'Done')],
    opener,
  );
  d.el.addEventListener('close', done);
  copy.focus();
}

export async function keysPage(c: PageContext): Promise<void> {
  const { main } = c;
  const status = h('div', { class: 'status' });
  const listArea = h('div', {});
  const refresh = async (focusId?: string) => {
    const list = await listAll<ApiKey>('/keys');
    const now = Date.now() / 1000;
    const rows = list.data.map((k) => {
      const actions = h('div', { class: 'row-actions' });
      if (c.canWrite && !k.revoked_at && !(k.expires_at && k.expires_at <= now)) {
        actions.append(
          h(
            'button',
            { type: 'button', 'data-key': k.id, onclick: (e: Event) => roll(k, e.currentTarget as Element) },
            'Roll',
            h('span', { class: 'visually-hidden' }, ` ${k.name}`),
          ),
          h(
            'button',
            { type: 'button', class: 'danger', onclick: (e: Event) => revoke(k, e.currentTarget as Element) },
            'Revoke',
            h('span', { class: 'visually-hidden' }, ` ${k.name}`),
          ),
        );
      }
      return [
        h('span', {}, k.name),
        h('span', {}, k.type),
        h('code', {}, k.redacted),
        h('span', {}, when(k.created_at)),
        h('span', {}, when(k.last_used_at)),
        h('span', {}, state(k, now), ...(lineage(k, list.data) ? [h('br'), h('span', { class: 'lineage' }, lineage(k, list.data))] : [])),
        actions,
      ];
    });
    // At a phone's width each key is a card (D-154): its Roll and Revoke are in view, not past the table's edge.
    listArea.replaceChildren(
      rows.length
        ? table(['Name', 'Type', 'Key', 'Created', 'Last used', 'Status', 'Actions'], rows, 'API keys', 'cards')
        : h('p', {}, 'No keys yet.'),
    );
    if (focusId) document.getElementById(focusId)?.focus();
  };
  const fail = (err: unknown) => status.replaceChildren(errorNotice(err));

  const roll = (k: ApiKey, opener: Element) => {
    const grace = h(
      'select',
      { id: 'roll-grace' },
      ...ROLL_GRACE.map(([label, s]) => h('option', { value: s, selected: s === 86_400 }, label)),
    );
    confirmDialog(
      `Roll ${k.name}`,
      [
        h(
          'p',
          {},
          `A new key replaces ${k.redacted} at once. Choose when the old key stops working, so that your deployments can move to the new one.`,
        ),
        field('The old key stops working', grace),
      ],
      'Roll key',
      {
        kind: 'primary',
        act: () => api<ApiKeyCreated>('POST', `/keys/${encodeURIComponent(k.id)}/roll`, { expires_in_seconds: Number(grace.value) }),
        done: (created) => {
          status.replaceChildren(notice('ok', `${k.name} rolled.`));
          showKey(`New key for ${k.name}`, created, document.getElementById('create-key'), () => void refresh().catch(fail));
        },
        fail,
      },
      opener,
    );
  };

  const revoke = (k: ApiKey, opener: Element) => {
    confirmDialog(
      `Revoke ${k.name}?`,
      `The key ${k.name} (${k.redacted}) will be refused at once by every request. This cannot be undone.`,
      `Revoke ${k.name}`,
      {
        act: () => api('POST', `/keys/${encodeURIComponent(k.id)}/revoke`).then(() => {}),
        done: async () => {
          status.replaceChildren(notice('ok', `${k.name} (${k.redacted}) revoked.`));
          await refresh();
          document.getElementById('create-key')?.focus();
        },
        fail,
      },
      opener,
    );
  };

  if (c.canWrite) {
    const name = h('input', { type: 'text', id: 'key-name', required: true, maxlength: 100, autocomplete: 'off' });
    const type = h(
      'select',
      { id: 'key-type' },
      h('option', { value: 'secret' }, 'Secret (sk_live_, for servers)'),
      h('option', { value: 'publishable' }, 'Publishable (pk_live_, for the widget)'),
    );
    const submit = h('button', { type: 'submit', class: 'primary', id: 'create-key' }, 'Create key');
    const form = h(
      'form',
      { class: 'inline-form', 'aria-label': 'Create a key', novalidate: true },
      field('Name', name),
      field('Type', type),
      submit,
    );
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      status.replaceChildren();
      clearFieldErrors(form);
      if (!name.value.trim()) return fieldError(name, 'Give the key a name (where it is used, for example “checkout server”).');
      try {
        const created = await api<ApiKeyCreated>('POST', '/keys', { type: type.value, name: name.value.trim() });
        name.value = '';
        showKey('Your new key', created, submit, () => void refresh().catch(fail));
      } catch (err) {
        showRefusal(status, err, { name, type }, submit);
      }
    });
    main.append(h('h2', {}, 'Create a key'), form);
  } else main.append(h('p', {}, 'You are a viewer: keys are created, rolled and revoked by the team’s admins.'));
  main.append(status, h('h2', {}, 'Keys'), listArea);
  await refresh();
}
