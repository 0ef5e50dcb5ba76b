// D-23 rate limits: a sliding one-minute window and a UTC-day count per app, as its plan allows. The
// policy is here (which plan, the answer and its headers); the counts are the backend's (RateCounts:
// the data directory's journal for one process, or PostgreSQL's rows for every instance).
import { apiError } from '../core/api-errors.ts';
import type { RateLimiter } from './stages.ts';
import type { AppT, PlanT } from '../core/tenants.ts';
import type { RateCount, RateCounts } from '../store/shared.ts';

/** What counting requests needs of a plan (the storage quota is counted elsewhere, D-27). */
type RatePlan = Pick<PlanT, 'id' | 'requests_per_minute' | 'requests_per_day'>;
type RatePlans = { plans: ReadonlyMap<string, RatePlan> };

const MINUTE = 60_000;
const DAY = 86_400_000;

export class RateLimitService implements RateLimiter {
  constructor(
    private readonly counts: RateCounts,
    private readonly tenants: RatePlans,
  ) {}

  /**
   * Counts one request against its app's plan, or refuses it (429). The counts answer at once when
   * they are in this process (checked and taken in one synchronous step, so that concurrent requests
   * can never pass the limit together), or from the database, where each count takes its turn.
   */
  take(app: AppT): Record<string, string> | Promise<Record<string, string>> {
    const plan = this.tenants.plans.get(app.plan);
    if (!plan) return {};
    const c = this.counts.take(app.id, plan.requests_per_minute, plan.requests_per_day);
    return c instanceof Promise ? c.then((found) => answer(app, plan, found)) : answer(app, plan, c);
  }
}

/** D-23's answer to a count: the headers of a counted request, or the 429 of a refused one. */
function answer(app: AppT, plan: RatePlan, c: RateCount): Record<string, string> {
  const minuteLeft = plan.requests_per_minute - c.inMinute;
  const dayLeft = plan.requests_per_day - c.dayCount;
  if (!c.taken) {
    const { wait, byDay } = waitOf(c, plan.requests_per_minute, plan.requests_per_day);
    throw apiError(
      'rate_limit_exceeded',
      `Rate limit reached for app ${JSON.stringify(app.id)}: ${byDay ? `${plan.requests_per_day} requests per day` : `${plan.requests_per_minute} requests per minute`}. Retry after ${Math.ceil(wait / 1000)} s.`,
      {
        headers: {
          'retry-after': String(Math.max(1, Math.ceil(wait / 1000))),
          ...headers(
            byDay ? plan.requests_per_day : plan.requests_per_minute,
            0,
            byDay ? c.day + DAY - c.now : (c.newest ?? c.now) + MINUTE - c.now,
          ),
        },
      },
    );
  }
  // The headers describe the window closer to its limit (the minute one on a tie).
  return dayLeft < minuteLeft
    ? headers(plan.requests_per_day, dayLeft - 1, c.day + DAY - c.now)
    : headers(plan.requests_per_minute, minuteLeft - 1, MINUTE);
}

/** How long a refused count waits: for whichever window frees a request later (the day's on a tie). */
export function waitOf(c: RateCount, perMinute: number, perDay: number): { wait: number; byDay: boolean } {
  const minuteWait = perMinute - c.inMinute <= 0 && c.freesAt !== undefined ? c.freesAt + MINUTE - c.now : 0;
  const dayWait = perDay - c.dayCount <= 0 ? c.day + DAY - c.now : 0;
  return { wait: Math.max(minuteWait, dayWait), byDay: dayWait >= minuteWait };
}

/** D-23's headers; the reset is a duration in seconds (`"12.5s"`), the form OpenAI's clients parse. */
function headers(limit: number, remaining: number, resetMs: number): Record<string, string> {
  return {
    'x-ratelimit-limit-requests': String(limit),
    'x-ratelimit-remaining-requests': String(Math.max(0, remaining)),
    'x-ratelimit-reset-requests': `${Math.max(0, Math.ceil(resetMs)) / 1000}s`,
  };
}
