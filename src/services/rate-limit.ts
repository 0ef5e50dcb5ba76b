// D-23 rate limits: a sliding one-minute window and a UTC-day count per app, journaled in the data
// directory (group-committed, compacted in place) so that a restart forgets nothing it counted.
import fs from 'node:fs/promises';
import path from 'node:path';
import { apiError } from '../http/errors.ts';
import type { RateLimiter } from '../http/server.ts';
import type { AppT, Fixtures } from '../store/fixtures.ts';
import { writeAll } from '../store/journal.ts';

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

interface Pending {
  line: string;
  resolve: () => void;
  reject: (err: Error) => void;
}

export interface RateLimitOptions {
  /** The journal, e.g. `<data dir>/ratelimits.jsonl`. */
  file: string;
  fixtures: Pick<Fixtures, 'plans'>;
  now?: () => number;
  /** Lines written before the journal is rewritten as one snapshot (kept small; tests lower it). */
  compactAfter?: number;
}

export class RateLimitService implements RateLimiter {
  private readonly usage = new Map<string, Usage>();
  private readonly now: () => number;
  private readonly compactAfter: number;
  private handle: fs.FileHandle | undefined;
  private pending: Pending[] = [];
  private flushing: Promise<void> | undefined;
  /** Bytes known to be whole lines; a failed write is cut back to this. */
  private size = 0;
  private lines = 0;

  private constructor(
    readonly file: string,
    private readonly fixtures: Pick<Fixtures, 'plans'>,
    opts: RateLimitOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.compactAfter = opts.compactAfter ?? 10_000;
  }

  /** Reads the journal (a torn last line was never acknowledged and is dropped) and opens it for appends. */
  static async open(opts: RateLimitOptions): Promise<RateLimitService> {
    const svc = new RateLimitService(opts.file, opts.fixtures, opts);
    let text = '';
    try {
      text = await fs.readFile(opts.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const end = text.lastIndexOf('\n') + 1;
    for (const raw of text.slice(0, end).split('\n')) {
      if (!raw) continue;
      let e: Entry;
      try {
        e = JSON.parse(raw) as Entry;
      } catch {
        continue; // Counting is best kept going: a damaged line costs at most one request's count.
      }
      if (typeof e?.a !== 'string') continue;
      svc.replay(e);
      svc.lines++;
    }
    await fs.mkdir(path.dirname(opts.file), { recursive: true });
    svc.handle = await fs.open(opts.file, 'a');
    if (end < Buffer.byteLength(text)) await svc.handle.truncate(Buffer.byteLength(text.slice(0, end)));
    svc.size = Buffer.byteLength(text.slice(0, end));
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
   * Counts one request or refuses it. The slot is taken synchronously, so concurrent requests can
   * never pass the limit together; it is given back if it cannot be made durable.
   */
  take(app: AppT): Promise<Record<string, string>> {
    const plan = this.fixtures.plans.get(app.plan);
    if (!plan) return Promise.resolve({});
    const now = this.now();
    const u = this.usageOf(app.id, now);
    const inMinute = u.recent.length - u.head;
    const minuteLeft = plan.requests_per_minute - inMinute;
    const dayLeft = plan.requests_per_day - u.dayCount;
    if (minuteLeft <= 0 || dayLeft <= 0) {
      // Wait for whichever window frees a request later.
      const minuteWait = minuteLeft <= 0 ? u.recent[u.head + inMinute - plan.requests_per_minute]! + MINUTE - now : 0;
      const dayWait = dayLeft <= 0 ? u.day + DAY - now : 0;
      const wait = Math.max(minuteWait, dayWait);
      const byDay = dayWait >= minuteWait;
      return Promise.reject(
        apiError('rate_limit_exceeded', `Rate limit reached for app ${JSON.stringify(app.id)}: ${byDay ? `${plan.requests_per_day} requests per day` : `${plan.requests_per_minute} requests per minute`}. Retry after ${Math.ceil(wait / 1000)} s.`, {
          headers: {
            'retry-after': String(Math.max(1, Math.ceil(wait / 1000))),
            ...headers(byDay ? plan.requests_per_day : plan.requests_per_minute, 0, byDay ? u.day + DAY - now : u.recent.at(-1)! + MINUTE - now),
          },
        }),
      );
    }
    u.recent.push(now);
    u.dayCount++;
    // The headers describe the window closer to its limit (the minute one on a tie).
    const out =
      dayLeft < minuteLeft
        ? headers(plan.requests_per_day, dayLeft - 1, u.day + DAY - now)
        : headers(plan.requests_per_minute, minuteLeft - 1, MINUTE);
    return this.append({ a: app.id, t: now }).then(
      () => out,
      (err: Error) => {
        this.giveBack(app.id, now);
        throw err;
      },
    );
  }

  private giveBack(appId: string, t: number): void {
    const u = this.usage.get(appId);
    if (!u) return;
    const at = u.recent.lastIndexOf(t);
    if (at >= u.head) u.recent.splice(at, 1);
    if (dayStart(t) === u.day && u.dayCount > 0) u.dayCount--;
  }

  private append(entry: Entry): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ line: JSON.stringify(entry) + '\n', resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      try {
        if (!this.handle) throw new Error(`rate-limit journal ${this.file} is closed`);
        if (this.lines + batch.length > this.compactAfter) {
          // The snapshot already holds this batch's slots (they were taken in memory).
          await this.compact();
        } else {
          const buf = Buffer.from(batch.map((p) => p.line).join(''), 'utf8');
          await writeAll(this.handle, buf);
          await this.handle.datasync();
          this.size += buf.length;
          this.lines += batch.length;
        }
        for (const p of batch) p.resolve();
      } catch (err) {
        await this.handle?.truncate(this.size).catch(() => {});
        for (const p of batch) p.reject(err as Error);
      }
    }
    this.flushing = undefined;
  }

  /** Rewrites the journal as today's counts plus the last minute's requests: small, whatever the traffic. */
  private async compact(): Promise<void> {
    const now = this.now();
    const entries: Entry[] = [];
    for (const appId of this.usage.keys()) {
      const u = this.usageOf(appId, now);
      const recent = u.recent.slice(u.head);
      const older = u.dayCount - recent.filter((t) => dayStart(t) === u.day).length;
      if (older > 0) entries.push({ a: appId, d: u.day, n: older });
      for (const t of recent) entries.push({ a: appId, t });
    }
    const text = entries.map((e) => JSON.stringify(e) + '\n').join('');
    const tmp = `${this.file}.tmp`;
    const fh = await fs.open(tmp, 'w');
    try {
      await fh.writeFile(text);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, this.file);
    const dh = await fs.open(path.dirname(this.file), 'r');
    await dh.sync().finally(() => dh.close());
    await this.handle?.close();
    this.handle = undefined;
    this.handle = await fs.open(this.file, 'a');
    this.size = Buffer.byteLength(text);
    this.lines = entries.length;
  }

  async close(): Promise<void> {
    while (this.flushing) await this.flushing;
    await this.handle?.close();
    this.handle = undefined;
  }
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
