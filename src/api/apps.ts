// Handlers of §4.8 and §4.9.
import type { RouteDef } from '../http/router.ts';
import { appConfig, appMetrics } from '../services/apps.ts';
import type { Store } from '../store/types.ts';
import type { RestRoute } from './rows.ts';

export function appRoutes(store: Store): RouteDef<RestRoute>[] {
  return [
    {
      method: 'GET',
      pattern: '/apps/:app_id/config',
      route: {
        operationId: 'getAppConfig',
        summary: "§4.8 Get the app's configuration",
        ok: 'AppConfig',
        handle: async (ctx) => appConfig(ctx.app),
      },
    },
    {
      method: 'GET',
      pattern: '/apps/:app_id/metrics',
      route: {
        operationId: 'getAppMetrics',
        summary: "§4.9 Get the app's metrics (D-24)",
        ok: 'AppMetrics',
        handle: async (ctx) => appMetrics(store, ctx.app.id),
      },
    },
  ];
}
