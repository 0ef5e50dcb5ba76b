// D-65: the admin surface answers only its caller's team. A record of another team is answered as one
// that does not exist (404 naming the parameter), so an id tells nothing of other teams.
import type { ControlDocT } from '../../core/control.ts';
import type { AdminCaller } from '../../core/callers.ts';
import { apiError, invalidRequest } from '../../core/api-errors.ts';

/** `what` names the record in the message (`App`), `param` the request's field that named it (`app_id`). */
export interface Named {
  what: string;
  param: string;
}

/** The record, if it is the caller's team's; else 404, as if it did not exist (D-65). */
export function ownedBy<T extends { team_id: string }>(record: T | undefined, c: Pick<AdminCaller, 'team_id'>, id: string, n: Named): T {
  if (!record || record.team_id !== c.team_id)
    throw apiError('not_found', `${n.what} ${JSON.stringify(id)} not found.`, { param: n.param });
  return record;
}

/** The caller's team's record with this id among `rows` (and meeting `also`, e.g. not revoked), or 404 (D-65). */
export function teamRecord<T extends { id: string; team_id: string }>(
  rows: readonly T[],
  c: Pick<AdminCaller, 'team_id'>,
  id: string,
  n: Named,
  also: (r: T) => boolean = () => true,
): T {
  return ownedBy(
    rows.find((r) => r.id === id && also(r)),
    c,
    id,
    n,
  );
}

/** The caller's team's app (`app_id` of the request), or 404 (D-65). */
export function teamApp(doc: Pick<ControlDocT, 'apps'>, c: Pick<AdminCaller, 'team_id'>, appId: string) {
  return teamRecord(doc.apps, c, appId, { what: 'App', param: 'app_id' });
}

/** D-173: a page's size when the query names none. */
export const DEFAULT_PAGE = 100;

/**
 * D-173: a page of `rows` (in their order) that `keep` keeps, starting after the row `after` names,
 * which may be one `keep` leaves out (a token revoked since the last page).
 */
export function pageOf<T extends { id: string }>(
  rows: readonly T[],
  q: { limit?: number; after?: string },
  keep: (r: T) => boolean = () => true,
): { data: T[]; has_more: boolean } {
  let start = 0;
  if (q.after !== undefined) {
    start = rows.findIndex((r) => r.id === q.after) + 1;
    if (start === 0) throw invalidRequest(`after is not an id of this list: ${JSON.stringify(q.after)}.`, 'after', 'invalid_cursor');
  }
  const limit = q.limit ?? DEFAULT_PAGE;
  const data: T[] = [];
  for (let i = start; i < rows.length; i++) {
    if (!keep(rows[i]!)) continue;
    if (data.length === limit) return { data, has_more: true };
    data.push(rows[i]!);
  }
  return { data, has_more: false };
}
