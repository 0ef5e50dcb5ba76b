// Handlers of §4.8 and §4.9.
import type { RouteDef } from '../http/router.ts';
import type { Route } from '../http/surface.ts';
import { appConfig, appMetrics } from '../services/apps.ts';
import type { Store } from '../store/types.ts';

export function appRoutes(store: Store): RouteDef<Route>[] {
  return [
    { method: 'GET', pattern: '/apps/:app_id/config', route: { handle: async (ctx) => appConfig(ctx.app) } },
    { method: 'GET', pattern: '/apps/:app_id/metrics', route: { handle: async (ctx) => appMetrics(store, ctx.app.id) } },
  ];
}
