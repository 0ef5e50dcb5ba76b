// D-74 on the admin surface: the team's usage and credits per app per UTC day, its requests refused
// for credits, a rate limit or the storage quota (D-157), and its balance this month. Reads only, a viewer's too; another team's app is 404, as everywhere on /admin/v1 (D-65).
import type { z } from 'zod';
import type { CreditBalanceT, UsageQuery, UsageReportT } from '../../contract/admin.ts';
import { creditsOf, dateOf, dayOf, dayOfDate, monthOf } from '../../core/credits.ts';
import type { AdminCaller } from '../../core/callers.ts';
import { invalidRequest } from '../../core/api-errors.ts';
import type { ControlPlane } from '../../store/control.ts';
import type { RefusalLedger } from '../../store/refusals.ts';
import type { CreditService } from '../credits.ts';
import { teamApp } from './team.ts';

/** The longest span one usage answer covers (a year and a day: a leap year's whole). */
export const MAX_USAGE_DAYS = 366;

export class UsageService {
  constructor(
    private readonly control: ControlPlane,
    private readonly credits: CreditService,
    private readonly refusals: Pick<RefusalLedger, 'days'>,
  ) {}

  /** Usage per app per UTC day over the asked span (by default the current month up to today), with the balance. */
  async report(c: AdminCaller, q: z.infer<typeof UsageQuery>): Promise<UsageReportT> {
    const doc = this.control.read();
    if (q.app_id !== undefined) teamApp(doc, c, q.app_id);
    const teamApps = doc.apps.filter((a) => a.team_id === c.team_id).map((a) => a.id);
    const now = this.credits.now();
    const today = dayOf(now / 1000);
    const since = q.since === undefined ? dayOf(monthOf(now).start) : dayOfDate(q.since);
    const until = q.until === undefined ? Math.max(today, since) : dayOfDate(q.until);
    if (since > until)
      throw invalidRequest(`since (${dateOf(since)}) must not be after until (${dateOf(until)}).`, 'since', 'invalid_value');
    if (until - since + 1 > MAX_USAGE_DAYS)
      throw invalidRequest(`One answer covers at most ${MAX_USAGE_DAYS} days; ask for a shorter span.`, 'until', 'invalid_value');
    const apps = q.app_id === undefined ? teamApps : [q.app_id];
    const [rows, refused] = await Promise.all([this.credits.days(apps, since, until), this.refusals.days(apps, since, until)]);
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
      refused: refused.map((r) => ({ app_id: r.app_id, date: dateOf(r.day), reason: r.reason, requests: r.n })),
      balance: await this.balance(c),
    };
  }

  /** The team's credits this month, with each of its plans' terms. */
  async balance(c: Pick<AdminCaller, 'team_id'>): Promise<CreditBalanceT> {
    const b = await this.credits.balance(c.team_id);
    const plans = this.control.read().plans;
    return {
      object: 'credit_balance',
      team_id: c.team_id,
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
}
