// The admin surface's apps (docs/control-plane.md, D-71): the team's apps listed, read, created and
// changed; a change is answered once every live instance holds it, so the next request to any serves it (D-78).
import { CreateAppRequest, listPage, UpdateAppRequest } from '../../contract/admin.ts';
import type { RouteDef } from '../../http/router.ts';
import type { AppAdminService } from '../../services/admin/apps.ts';
import { type AdminRoute, adminWithBody } from '../rows.ts';
import { originOf } from './common.ts';

export function appRoutes(apps: AppAdminService): RouteDef<AdminRoute>[] {
  return [
    {
      method: 'GET',
      pattern: '/apps',
      route: {
        operationId: 'listApps',
        summary: "D-71 The team's apps",
        ok: 'AppList',
        handle: async (ctx) => listPage(apps.list(ctx.admin)),
      },
    },
    {
      method: 'POST',
      pattern: '/apps',
      route: adminWithBody({
        operationId: 'createApp',
        summary: 'D-71 A new app',
        body: CreateAppRequest,
        ok: 'App',
        adminOnly: true,
        handle: async (ctx, body) => apps.create(ctx.admin, body, originOf(ctx)),
      }),
    },
    {
      method: 'GET',
      pattern: '/apps/:app_id',
      route: { operationId: 'getApp', summary: 'D-71 An app', ok: 'App', handle: async (ctx) => apps.get(ctx.admin, ctx.params.app_id!) },
    },
    {
      method: 'PATCH',
      pattern: '/apps/:app_id',
      route: adminWithBody({
        operationId: 'updateApp',
        summary: 'D-71 Change an app: served by the next request',
        body: UpdateAppRequest,
        ok: 'App',
        adminOnly: true,
        handle: async (ctx, body) => apps.update(ctx.admin, ctx.params.app_id!, body, originOf(ctx)),
      }),
    },
  ];
}
