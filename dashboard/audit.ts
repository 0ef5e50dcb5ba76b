// The audit log (D-75): newest first, filtered by action and dates, each entry's changes on demand,
// its times as dates and a key by the name the keys page shows.
import { AUDIT_ACTIONS } from '../src/contract/audit-actions.ts';
import { api, listAll, qs } from './api.ts';
import { field, h, table, when } from './dom.ts';
import type { PageContext } from './main.ts';
import type { ApiKey, AuditEntry, List } from './types.ts';

/** A changed value as a reader wants it: a time (`…_at`, Unix seconds) as a date, the rest as JSON. */
function shown(fieldName: string, v: unknown): string {
  return fieldName.endsWith('_at') && typeof v === 'number' ? when(v) : JSON.stringify(v);
}

function changesOf(e: AuditEntry): string {
  return Object.entries(e.changes)
    .map(([f, [before, after]]) => `${f}: ${shown(f, before)} → ${shown(f, after)}`)
    .join('\n');
}

/** The target as the pages name it: a key by its name (its id beside it, as in the key's row). */
function targetOf(e: AuditEntry, keyNames: Map<string, string>): HTMLElement {
  if (!e.target) return h('span', {}, '—');
  const name = e.target.type === 'api_key' ? keyNames.get(e.target.id) : undefined;
  if (name) return h('span', {}, `key “${name}” `, h('code', {}, e.target.id));
  return h('span', {}, `${e.target.type} ${e.target.id}`);
}

/** D-75: a failed sign-in's actor is nobody proven: where it came from says most. */
const actorOf = (e: AuditEntry) => e.actor.email ?? (e.actor.type === 'anonymous' ? `anonymous from ${e.address ?? '—'}` : e.actor.type);

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
    h('datalist', { id: 'audit-actions' }, ...AUDIT_ACTIONS.map((a) => h('option', { value: a }))),
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
  const [list, keys] = await Promise.all([
    api<List<AuditEntry>>(
      'GET',
      `/audit${qs({ action: params.get('action'), since: params.get('since'), until: untilTs, after: params.get('after'), limit: 50 })}`,
    ),
    listAll<ApiKey>('/keys'),
  ]);
  const keyNames = new Map(keys.data.filter((k) => k.name).map((k) => [k.id, k.name]));
  const rows = list.data.map((e) => [
    h('span', {}, when(e.created_at)),
    h('code', {}, e.action),
    h('span', {}, actorOf(e)),
    targetOf(e, keyNames),
    Object.keys(e.changes).length
      ? h('details', {}, h('summary', {}, 'Changes'), h('pre', {}, changesOf(e)), h('p', {}, `From ${e.address ?? '—'}`))
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
