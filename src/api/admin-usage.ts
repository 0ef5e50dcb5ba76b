// D-74 on the admin surface: the team's usage and credits per app per UTC day, and its balance this
// month. Reads only, a viewer's too; another team's app is 404, as everywhere on /admin/v1 (D-65).
import { type CreditBalanceT, UsageQuery, type UsageReportT } from '../contract/admin.ts';
import { creditsOf, dateOf, dayOf, dayOfDate, monthOf } from '../core/credits.ts';
import { type AdminCaller, type Exchange, parseQuery } from '../http/context.ts';
import { invalidRequest, notFound } from '../http/errors.ts';
import type { RouteDef } from '../http/router.ts';
import type { Route } from '../http/surface.ts';
import type { CreditService } from '../services/credits.ts';
import type { ControlPlane } from '../store/control.ts';

/** An admin request (admin.ts's AdminContext, which this file cannot import: admin.ts lists these routes). */
type AdminRequest = Omit<Exchange, 'key' | 'app'> & { admin: AdminCaller };

/** The longest span one usage answer covers (a year and a day: a leap year's whole). */
export const MAX_USAGE_DAYS = 366;

export interface UsageRouteOptions {
  control: ControlPlane;
  credits: CreditService;
}

export function usageRoutes(o: UsageRouteOptions): RouteDef<Route<AdminRequest>>[] {
  return [
    { method: 'GET', pattern: '/credits', route: { handle: async (ctx) => balanceOf(o, ctx.admin.team_id) } },
    {
      method: 'GET',
      pattern: '/usage',
      route: {
        handle: async (ctx): Promise<UsageReportT> => {
          const q = parseQuery(ctx, UsageQuery);
          const teamApps = o.control
            .read()
            .apps.filter((a) => a.team_id === ctx.admin.team_id)
            .map((a) => a.id);
          if (q.app_id !== undefined && !teamApps.includes(q.app_id)) throw notFound(`App ${JSON.stringify(q.app_id)}`, 'app_id');
          const now = o.credits.now();
          const today = dayOf(now / 1000);
          // By default the current month (UTC) up to today.
          const since = q.since === undefined ? dayOf(monthOf(now).start) : dayOfDate(q.since);
          const until = q.until === undefined ? Math.max(today, since) : dayOfDate(q.until);
          if (since > until)
            throw invalidRequest(`since (${dateOf(since)}) must not be after until (${dateOf(until)}).`, 'since', 'invalid_value');
          if (until - since + 1 > MAX_USAGE_DAYS)
            throw invalidRequest(`One answer covers at most ${MAX_USAGE_DAYS} days; ask for a shorter span.`, 'until', 'invalid_value');
          const rows = await o.credits.days(q.app_id === undefined ? teamApps : [q.app_id], since, until);
          return {
            object: 'usage',
            since: dateOf(since),
            until: dateOf(until),
            data: rows.map((r) => ({
              app_id: r.app_id,
              date: dateOf(r.day),
              requests: r.requests,
              input_tokens: r.input_tokens,
              output_tokens: r.output_tokens,
              total_tokens: r.input_tokens + r.output_tokens,
              credits: creditsOf(r.millicredits),
            })),
            balance: await balanceOf(o, ctx.admin.team_id),
          };
        },
      },
    },
  ];
}

async function balanceOf(o: UsageRouteOptions, teamId: string): Promise<CreditBalanceT> {
  const b = await o.credits.balance(teamId);
  const plans = o.control.read().plans;
  return {
    object: 'credit_balance',
    team_id: teamId,
    credits: creditsOf(b.allowance - b.debited),
    allowance: creditsOf(b.allowance),
    used: creditsOf(b.debited),
    period_start: b.period_start,
    period_end: b.period_end,
    limit: b.limit,
    plans: b.plans.map(({ plan, apps }) => {
      const p = plans.find((x) => x.id === plan);
      return {
        plan,
        apps,
        monthly_allowance: p?.credits.monthly_allowance ?? 0,
        price_per_1k_tokens: p?.credits.price_per_1k_tokens ?? 0,
        limit: p?.credits.limit ?? 'soft',
      };
    }),
  };
}
