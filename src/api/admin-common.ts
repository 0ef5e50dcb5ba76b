// What every route file of the admin surface (docs/control-plane.md) shares: the request once its
// credential is known, the route's traits, where a request came from, and the list shape (D-65).
import type { AdminCaller, Exchange } from '../http/context.ts';
import type { Route } from '../http/surface.ts';
import type { Origin } from '../services/admin/accounts.ts';

/** A request on the admin surface once its credential is known (none for signing in). */
export type AdminContext = Omit<Exchange, 'key' | 'app'> & { admin: AdminCaller };

export interface AdminRoute extends Route<AdminContext> {
  /** Signing in, setting a password with an invitation: the routes without a credential. */
  open?: boolean;
  /** D-65: a change of the team's resources: a viewer's is 403. */
  adminOnly?: boolean;
}

export function originOf(ctx: Pick<Exchange, 'req' | 'requestId'>): Origin {
  return {
    address: ctx.req.socket.remoteAddress ?? 'unknown',
    user_agent: ctx.req.headers['user-agent'] ?? null,
    request_id: ctx.requestId,
  };
}

/** The list shape of §4.2 (D-65). */
export function listOf<T extends { id: string }>(data: T[], has_more: boolean) {
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more };
}
