// D-23 rate limits: a sliding one-minute window and a UTC-day count per app, kept in a Journal
// (written before the request goes on, fsynced in the background) so that a restart forgets no count;
// or, with DATABASE_URL, in PostgreSQL, shared by every instance (SharedRateLimitService).
import fs from 'node:fs/promises';
import path from 'node:path';
import { apiError } from '../http/errors.ts';
import type { RateLimiter } from './stages.ts';
import type { AppT, PlanT } from '../core/tenants.ts';

import { Journal } from '../store/journal.ts';
import type { RateCount, RateCounts } from '../store/shared.ts';

/** What counting requests needs of a plan (the storage quota is counted elsewhere, D-27). */
type RatePlan = Pick<PlanT, 'id' | 'requests_per_minute' | 'requests_per_day'>;
type RatePlans = { plans: ReadonlyMap<string, RatePlan> };

const MINUTE = 60_000;
const DAY = 86_400_000;

/** One counted request, or (in a compacted journal) the older part of a day's count. */
type Entry = { a: string; t: number } | { a: string; d: number; n: number };

interface Usage {
  /** Start (ms, UTC midnight) of the day `dayCount` belongs to. */
  day: number;
  dayCount: number;
  /** Timestamps of counted requests, ascending; those before `head` have left the minute window. */
  recent: number[];
  head: number;
}

export interface RateLimitOptions {
  /** The journal, e.g. `<data dir>/ratelimits.jsonl`. */
  file: string;
  tenants: RatePlans;
  now?: () => number;
  /** Lines written before the journal is rewritten as one snapshot (kept small; tests lower it). */
  compactAfter?: number;
  /** Told when a background fsync fails: the counts are still in memory and in the OS's cache. */
  onSyncError?: (err: Error) => void;
  /** Told when start-up drops a torn last line (see Journal.open). */
  warn?: (message: string) => void;
}

export class RateLimitService implements RateLimiter {
  private readonly usage = new Map<string, Usage>();
  private readonly now: () => number;
  private readonly compactAfter: number;
  /** Counting is best kept going: a damaged line costs at most one request's count. */
  private readonly journal: Journal;
  private compacting: Promise<void> | undefined;
  /** Entries written by the last compaction. */
  private snapshotLines = 0;

  private constructor(
    readonly file: string,
    private readonly tenants: RatePlans,
    opts: RateLimitOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.compactAfter = opts.compactAfter ?? 10_000;
    this.journal = new Journal(file, { skipBadLines: true, onSyncError: opts.onSyncError, warn: opts.warn });
  }

  /** Reads the journal (a torn last line was never acknowledged and is dropped) and opens it for appends. */
  static async open(opts: RateLimitOptions): Promise<RateLimitService> {
    const svc = new RateLimitService(opts.file, opts.tenants, opts);
    await fs.mkdir(path.dirname(opts.file), { recursive: true });
    await svc.journal.open((e) => {
      if (typeof (e as Entry | null)?.a === 'string') svc.replay(e as Entry);
    });
    return svc;
  }

  private replay(e: Entry): void {
    const now = this.now();
    const today = dayStart(now);
    const u = this.usageOf(e.a, now);
    if ('t' in e) {
      if (dayStart(e.t) === today) u.dayCount++;
      if (e.t > now - MINUTE && e.t <= now) insertSorted(u.recent, e.t);
    } else if (e.d === today) {
      u.dayCount += e.n;
    }
  }

  private usageOf(appId: string, now: number): Usage {
    let u = this.usage.get(appId);
    if (!u) {
      u = { day: dayStart(now), dayCount: 0, recent: [], head: 0 };
      this.usage.set(appId, u);
    }
    if (u.day !== dayStart(now)) {
      u.day = dayStart(now);
      u.dayCount = 0;
    }
    while (u.head < u.recent.length && u.recent[u.head]! <= now - MINUTE) u.head++;
    if (u.head > 1024 && u.head * 2 > u.recent.length) {
      u.recent = u.recent.slice(u.head);
      u.head = 0;
    }
    return u;
  }

  /**
   * Counts one request or refuses it, synchronously. The slot is taken before anything awaits, so
   * concurrent requests can never pass the limit together, and the count is written to the journal
   * (write(2), fsynced in the background) before the request goes on: a restart or a crash of the
   * process forgets no count, and the request does not wait for an fsync (docs/reliability.md).
   * If the line cannot be written, the slot is given back and the request fails.
   */
  take(app: AppT): Record<string, string> {
    const plan = this.tenants.plans.get(app.plan);
    if (!plan) return {};
    return answer(app, plan, this.count(app.id, plan.requests_per_minute, plan.requests_per_day));
  }

  private count(appId: string, perMinute: number, perDay: number): RateCount {
    const now = this.now();
    const u = this.usageOf(appId, now);
    const inMinute = u.recent.length - u.head;
    const found = { now, inMinute, day: u.day, dayCount: u.dayCount, newest: u.recent.at(-1) };
    if (inMinute >= perMinute || u.dayCount >= perDay) {
      return { ...found, taken: false, freesAt: inMinute >= perMinute ? u.recent[u.head + inMinute - perMinute] : undefined };
    }
    u.recent.push(now);
    u.dayCount++;
    try {
      this.journal.appendNow({ a: appId, t: now } satisfies Entry);
    } catch (err) {
      this.giveBack(appId, now);
      throw err;
    }
    this.compactIfDue();
    return { ...found, taken: true };
  }

  private giveBack(appId: string, t: number): void {
    const u = this.usage.get(appId);
    if (!u) return;
    const at = u.recent.lastIndexOf(t);
    if (at >= u.head) u.recent.splice(at, 1);
    if (dayStart(t) === u.day && u.dayCount > 0) u.dayCount--;
  }

  /**
   * Keeps the journal small whatever the traffic: today's counts plus the last minute's requests.
   * It is rewritten once it holds `compactAfter` lines and twice what the last snapshot held (a busy
   * minute's snapshot can itself be thousands of lines; rewriting it on every count would be waste).
   */
  private compactIfDue(): void {
    if (this.compacting || this.journal.lines <= Math.max(this.compactAfter, 2 * this.snapshotLines)) return;
    this.compacting = this.journal
      .compact(() => {
        const entries = this.snapshot();
        this.snapshotLines = entries.length;
        return entries;
      })
      .then(
        () => {
          this.compacting = undefined;
          // Counts taken during the compaction were appended after it: they may call for another.
          this.compactIfDue();
        },
        () => {
          // A failed compaction leaves the longer journal, which still holds every count.
          this.compacting = undefined;
        },
      );
  }

  private snapshot(): Entry[] {
    const now = this.now();
    const entries: Entry[] = [];
    for (const appId of this.usage.keys()) {
      const u = this.usageOf(appId, now);
      const recent = u.recent.slice(u.head);
      const older = u.dayCount - recent.filter((t) => dayStart(t) === u.day).length;
      if (older > 0) entries.push({ a: appId, d: u.day, n: older });
      for (const t of recent) entries.push({ a: appId, t });
    }
    return entries;
  }

  async close(): Promise<void> {
    while (this.compacting) await this.compacting;
    await this.journal.close();
  }
}

/**
 * D-23 with counts kept elsewhere (PostgreSQL's, src/store/pg/rate-counts.ts, shared by every
 * instance): the same answers and headers as RateLimitService, from counts taken in the database.
 */
export class SharedRateLimitService implements RateLimiter {
  constructor(
    private readonly counts: RateCounts,
    private readonly tenants: RatePlans,
  ) {}

  async take(app: AppT): Promise<Record<string, string>> {
    const plan = this.tenants.plans.get(app.plan);
    if (!plan) return {};
    return answer(app, plan, await this.counts.take(app.id, plan.requests_per_minute, plan.requests_per_day));
  }

  close(): Promise<void> {
    return this.counts.close();
  }
}

/** D-23's answer to a count: the headers of a counted request, or the 429 of a refused one. */
function answer(app: AppT, plan: RatePlan, c: RateCount): Record<string, string> {
  const minuteLeft = plan.requests_per_minute - c.inMinute;
  const dayLeft = plan.requests_per_day - c.dayCount;
  if (!c.taken) {
    // Wait for whichever window frees a request later.
    const minuteWait = minuteLeft <= 0 && c.freesAt !== undefined ? c.freesAt + MINUTE - c.now : 0;
    const dayWait = dayLeft <= 0 ? c.day + DAY - c.now : 0;
    const wait = Math.max(minuteWait, dayWait);
    const byDay = dayWait >= minuteWait;
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

function dayStart(t: number): number {
  return t - (((t % DAY) + DAY) % DAY);
}

function insertSorted(list: number[], t: number): void {
  let i = list.length;
  while (i > 0 && list[i - 1]! > t) i--;
  list.splice(i, 0, t);
}

/** D-23's headers; the reset is a duration in seconds (`"12.5s"`), the form OpenAI's clients parse. */
function headers(limit: number, remaining: number, resetMs: number): Record<string, string> {
  return {
    'x-ratelimit-limit-requests': String(limit),
    'x-ratelimit-remaining-requests': String(Math.max(0, remaining)),
    'x-ratelimit-reset-requests': `${Math.max(0, Math.ceil(resetMs)) / 1000}s`,
  };
}
