// D-74 on the admin surface: the team's credit balance this month, and its usage per app per UTC day.
// Reads only, a viewer's too.
import { UsageQuery } from '../../contract/admin.ts';
import { parseQuery } from '../../http/context.ts';
import type { RouteDef } from '../../http/router.ts';
import type { UsageService } from '../../services/admin/usage.ts';
import type { AdminRoute } from '../rows.ts';

export function usageRoutes(usage: UsageService): RouteDef<AdminRoute>[] {
  return [
    {
      method: 'GET',
      pattern: '/credits',
      route: {
        operationId: 'getCredits',
        summary: "D-74 The team's credit balance this month",
        ok: 'CreditBalance',
        handle: async (ctx) => usage.balance(ctx.admin),
      },
    },
    {
      method: 'GET',
      pattern: '/usage',
      route: {
        operationId: 'getUsage',
        summary: 'D-74 Usage and credits per app per UTC day, with the balance; D-157 the requests refused, per app, day and reason',
        query: UsageQuery,
        ok: 'UsageReport',
        extra: ['404'],
        handle: async (ctx) => usage.report(ctx.admin, parseQuery(ctx, UsageQuery)),
      },
    },
  ];
}
