// D-65: the admin surface answers only its caller's team. A record of another team is answered as one
// that does not exist (404 naming the parameter), so an id tells nothing of other teams.
import type { ControlDocT } from '../../core/control.ts';
import type { AdminCaller } from '../../core/callers.ts';
import { apiError } from '../../core/api-errors.ts';

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
