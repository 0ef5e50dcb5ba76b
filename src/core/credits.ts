// D-74 (docs/control-plane.md): what a reply costs and what a team may spend. A team's monthly
// allowance is the sum of its apps' plans' allowances; a reply is priced by its app's plan. Debits
// are kept in millicredits (integers), so that sums stay exact on both stores.
import type { PlanT, Tenants } from './tenants.ts';

const DAY_S = 86_400;

/** The calendar month (UTC) holding `nowMs`: its first and its last second + 1, Unix seconds. */
export function monthOf(nowMs: number): { start: number; end: number } {
  const d = new Date(nowMs);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) / 1000;
  return { start, end };
}

/** The UTC day (days since 1970) of a Unix time in seconds. */
export function dayOf(atS: number): number {
  return Math.floor(atS / DAY_S);
}

/** `2026-11-25` for a day number, and back. */
export function dateOf(day: number): string {
  return new Date(day * DAY_S * 1000).toISOString().slice(0, 10);
}
export function dayOfDate(date: string): number {
  return dayOf(Date.parse(`${date}T00:00:00Z`) / 1000);
}

/** The debit of `tokens` at the plan's price, in millicredits (one per token at 1 credit per 1,000). */
export function millicreditsOf(tokens: number, plan: Pick<PlanT, 'credits'> | undefined): number {
  return Math.round(tokens * (plan?.credits.price_per_1k_tokens ?? 1));
}

/** Credits from millicredits, for answers (at most three decimals). */
export function creditsOf(millicredits: number): number {
  return millicredits / 1000;
}

/** What a team's balance is made of this month. */
export interface TeamAllowance {
  /** Millicredits: the sum of its apps' plans' monthly allowances. */
  allowance: number;
  /** Each plan its apps are on, with how many of them. */
  plans: Array<{ plan: string; apps: number }>;
}

/** D-74: every app of the team (a disabled one too: its plan is still the team's) brings its plan's allowance. */
export function allowanceOf(teamId: string, tenants: Pick<Tenants, 'apps' | 'plans'>): TeamAllowance {
  const count = new Map<string, number>();
  let allowance = 0;
  for (const app of tenants.apps.values()) {
    if (app.team_id !== teamId) continue;
    const plan = tenants.plans.get(app.plan);
    allowance += Math.round((plan?.credits.monthly_allowance ?? 0) * 1000);
    count.set(app.plan, (count.get(app.plan) ?? 0) + 1);
  }
  return { allowance, plans: [...count].sort(([a], [b]) => a.localeCompare(b)).map(([plan, apps]) => ({ plan, apps })) };
}
