// The admin surface's credential stage (docs/control-plane.md, D-65, D-67): who calls, from a personal
// access token or the session cookie (with its CSRF token on a write), and whether their role may make
// the change the route makes (a viewer's write is 403).
import type { Stage } from '../http/compose.ts';
import type { Call } from '../http/context.ts';
import type { AdminCaller } from '../core/callers.ts';
import { apiError } from '../core/api-errors.ts';
import type { AccountService } from '../services/admin/accounts.ts';

export function adminCredential(accounts: AccountService, route: { open?: boolean; adminOnly?: boolean }): Stage<Call> {
  return async (ctx, next) => {
    if (route.open) {
      ctx.admin = { member_id: '', team_id: '', email: '', role: 'viewer', session_id: null, token_id: null } satisfies AdminCaller;
      return next();
    }
    const h = ctx.req.headers;
    const csrf = h['x-csrf-token'];
    ctx.admin = await accounts.caller(h.authorization, h.cookie, ctx.req.method ?? 'GET', Array.isArray(csrf) ? csrf[0] : csrf);
    if (route.adminOnly && ctx.admin.role !== 'admin')
      throw apiError('admin_role_required', "This change needs the team's admin role; a viewer may only read.");
    return next();
  };
}
