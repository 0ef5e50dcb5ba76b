// The audit log (D-75): newest first, filtered by action and dates, each entry's changes on demand.
import { api, qs } from './api.ts';
import { field, h, table, when } from './dom.ts';
import type { PageContext } from './main.ts';
import type { AuditEntry, List } from './types.ts';

const ACTIONS = [
  'session.created',
  'session.failed',
  'session.ended',
  'token.created',
  'token.revoked',
  'key.created',
  'key.rolled',
  'key.revoked',
  'conversation.restored',
  'fixtures.merged',
];

export async function auditPage(c: PageContext): Promise<void> {
  const { main, params } = c;
  const action = h('input', {
    type: 'text',
    id: 'audit-action',
    list: 'audit-actions',
    value: params.get('action') ?? '',
    autocomplete: 'off',
  });
  const since = h('input', { type: 'date', id: 'audit-since', value: params.get('since') ?? '' });
  const until = h('input', { type: 'date', id: 'audit-until', value: params.get('until') ?? '' });
  const form = h(
    'form',
    { class: 'inline-form', role: 'search', 'aria-label': 'Filter the audit log', novalidate: true },
    field('Action', action),
    h('datalist', { id: 'audit-actions' }, ...ACTIONS.map((a) => h('option', { value: a }))),
    field('From', since),
    field('To', until),
    h('button', { type: 'submit', class: 'primary' }, 'Filter'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = `#/audit${qs({ action: action.value.trim(), since: since.value, until: until.value })}`;
  });
  main.append(form);
  // `until` is a day, inclusive: its end is the next day's first second.
  const untilTs = params.get('until') ? String(Date.parse(`${params.get('until')}T00:00:00Z`) / 1000 + 86_400 - 1) : undefined;
  const list = await api<List<AuditEntry>>(
    'GET',
    `/audit${qs({ action: params.get('action'), since: params.get('since'), until: untilTs, after: params.get('after'), limit: 50 })}`,
  );
  const rows = list.data.map((e) => [
    h('span', {}, when(e.created_at)),
    h('code', {}, e.action),
    h('span', {}, e.actor.email ?? e.actor.type),
    h('span', {}, e.target ? `${e.target.type} ${e.target.id}` : '—'),
    Object.keys(e.changes).length
      ? h(
          'details',
          {},
          h('summary', {}, 'Changes'),
          h('pre', {}, JSON.stringify(e.changes, null, 2)),
          h('p', {}, `From ${e.address ?? '—'}`),
        )
      : h('span', {}, `From ${e.address ?? '—'}`),
  ]);
  main.append(
    rows.length ? table(['When', 'Action', 'Actor', 'Target', 'Details'], rows, 'Audit entries') : h('p', {}, 'No entries match.'),
  );
  if (list.has_more && list.last_id)
    main.append(
      h(
        'nav',
        { class: 'pager', 'aria-label': 'Pages of the audit log' },
        h(
          'a',
          {
            href: `#/audit${qs({ action: params.get('action'), since: params.get('since'), until: params.get('until'), after: list.last_id })}`,
          },
          'Older',
        ),
      ),
    );
}
