// The admin surface's apps (docs/control-plane.md, D-71): the team's apps listed, read, created and
// changed; a change is answered once every live instance holds it, so the next request to any serves it (D-78).
import { CreateAppRequest, UpdateAppRequest } from '../contract/admin.ts';
import { parseBody } from '../http/context.ts';
import type { RouteDef } from '../http/router.ts';
import type { AppAdminService } from '../services/admin/apps.ts';
import { type AdminRoute, listOf, originOf } from './admin-common.ts';

export function adminAppRoutes(apps: AppAdminService): RouteDef<AdminRoute>[] {
  return [
    { method: 'GET', pattern: '/apps', route: { handle: async (ctx) => listOf(apps.list(ctx.admin), false) } },
    {
      method: 'POST',
      pattern: '/apps',
      route: { adminOnly: true, handle: async (ctx) => apps.create(ctx.admin, await parseBody(ctx, CreateAppRequest), originOf(ctx)) },
    },
    { method: 'GET', pattern: '/apps/:app_id', route: { handle: async (ctx) => apps.get(ctx.admin, ctx.params.app_id!) } },
    {
      method: 'PATCH',
      pattern: '/apps/:app_id',
      route: {
        adminOnly: true,
        handle: async (ctx) => apps.update(ctx.admin, ctx.params.app_id!, await parseBody(ctx, UpdateAppRequest), originOf(ctx)),
      },
    },
  ];
}
