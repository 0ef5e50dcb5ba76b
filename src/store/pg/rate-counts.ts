// D-23's counts on PostgreSQL (docs/postgres.md), shared by every instance: one row per key
// (`rate_windows`) with the day's count and the minute's requests in buckets of a second (D-102).
// A count is one statement: an upsert whose row lock makes counts of one key take turns across
// instances, each seeing the one before, and whose condition admits it only below both limits, so N
// instances admit exactly the plan's requests; its cost is the row's, whatever the plan or the traffic.
// Times are the database's clock, one clock for every instance.
import type { Sql } from 'postgres';
import type { MinuteWindows, RateCount, RateCounts } from '../shared.ts';

const MINUTE = 60_000;
const DAY = 86_400_000;
/** D-102: buckets of a second, 61 of them: a second's requests count until the latest of them is a minute old. */
const BUCKETS = 61;
/** How often the rows of keys that stopped counting a day ago are deleted. */
const SWEEP_MS = 3_600_000;

interface Window {
  at: string;
  secs: string[];
  counts: number[];
  lasts: string[];
  day: string;
  day_count: number;
}

/** The buckets still counted at `now`, oldest first: [second, count, latest request]. */
function counted(w: Window, now: number): [number, number, number][] {
  const out: [number, number, number][] = [];
  w.secs.forEach((s, i) => {
    const n = w.counts[i]!;
    if (n > 0 && Number(w.lasts[i]) > now - MINUTE) out.push([Number(s), n, Number(w.lasts[i])]);
  });
  return out.sort((x, y) => x[0] - y[0]);
}

/**
 * D-23's RateCount from the row as the count left it (`taken`: this request, at `w.at`, is in it).
 * D-102: a second's requests count until the latest of them leaves the minute.
 */
function countOf(w: Window, taken: boolean, perMinute: number): RateCount {
  const now = Number(w.at);
  const day = now - (now % DAY);
  let buckets = counted(w, now);
  if (taken) {
    // The count before this request: its own second's bucket holds it.
    const sec = Math.floor(now / 1000);
    buckets = buckets.map((b) => (b[0] === sec ? ([b[0], b[1] - 1, b[2]] as [number, number, number]) : b)).filter((b) => b[1] > 0);
  }
  const inMinute = buckets.reduce((t, b) => t + b[1], 0);
  const dayCount = Number(w.day) === day ? w.day_count - (taken ? 1 : 0) : 0;
  const found: RateCount = { now, taken, inMinute, day, dayCount, newest: buckets.at(-1)?.[2] };
  if (!taken && inMinute >= perMinute) {
    // The bucket whose leaving brings the window below the limit.
    let left = inMinute;
    for (const [, n, last] of buckets) {
      left -= n;
      if (left < perMinute) {
        found.freesAt = last;
        break;
      }
    }
  }
  return found;
}

export class PgRateCounts implements RateCounts {
  private sweeper: NodeJS.Timeout | undefined;

  /**
   * `scope` tells the REST plans' counts from the widget's budgets (D-52), which are keyed by app too.
   * `durable: true` waits for a count's WAL flush before its row is free again (bench/lab/probe-pg-counts.ts
   * measures it); by default a count does not (D-103).
   */
  constructor(
    private readonly sql: Sql,
    private readonly scope: string,
    private readonly opts: { durable?: boolean } = {},
  ) {}

  /** Deletes the rows of keys that stopped counting, now and every hour. */
  async open(): Promise<this> {
    await this.sweep();
    this.sweeper = setInterval(() => void this.sweep().catch(() => {}), SWEEP_MS);
    this.sweeper.unref();
    return this;
  }

  async take(key: string, perMinute: number, perDay: number): Promise<RateCount> {
    const scope = this.scope;
    // A refusal read after a bucket left the window finds room: counted again (at most twice more).
    for (let tries = 0; ; tries++) {
      // The new bucket replaces the one of 61 seconds before (sec % 61), which left the window; the
      // condition reads the row as locked, after every count before it. A new row's buckets are
      // built by array_fill (a subquery per array over generate_series cost ~200 µs of CPU a count).
      // D-103: the count's commit does not wait for its WAL flush, so the key's row is free again at
      // once; the request's own durable write, after it, flushes it.
      const commit = this.opts.durable ? 'on' : 'off';
      const [w] = await this.sql<Window[]>`
        WITH c AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now,
                          set_config('synchronous_commit', ${commit}, true) AS commit)
        INSERT INTO rate_windows AS w (scope, key, at, secs, counts, lasts, day, day_count)
        SELECT ${scope}, ${key}, c.now,
               array_fill(0::bigint, ARRAY[c.i]) || (c.now / 1000) || array_fill(0::bigint, ARRAY[${BUCKETS - 1} - c.i]),
               array_fill(0, ARRAY[c.i]) || 1 || array_fill(0, ARRAY[${BUCKETS - 1} - c.i]),
               array_fill(0::bigint, ARRAY[c.i]) || c.now || array_fill(0::bigint, ARRAY[${BUCKETS - 1} - c.i]),
               c.now - c.now % ${DAY}, 1
        FROM (SELECT now, (now / 1000 % ${BUCKETS})::int AS i FROM c) c WHERE ${perMinute}::bigint > 0 AND ${perDay}::bigint > 0
        ON CONFLICT (scope, key) DO UPDATE SET
          at = EXCLUDED.at,
          secs[EXCLUDED.at / 1000 % ${BUCKETS} + 1] = EXCLUDED.at / 1000,
          counts[EXCLUDED.at / 1000 % ${BUCKETS} + 1] =
            CASE WHEN w.secs[EXCLUDED.at / 1000 % ${BUCKETS} + 1] = EXCLUDED.at / 1000 THEN w.counts[EXCLUDED.at / 1000 % ${BUCKETS} + 1] + 1 ELSE 1 END,
          lasts[EXCLUDED.at / 1000 % ${BUCKETS} + 1] =
            CASE WHEN w.secs[EXCLUDED.at / 1000 % ${BUCKETS} + 1] = EXCLUDED.at / 1000 THEN greatest(w.lasts[EXCLUDED.at / 1000 % ${BUCKETS} + 1], EXCLUDED.at) ELSE EXCLUDED.at END,
          day = EXCLUDED.day,
          day_count = CASE WHEN w.day = EXCLUDED.day THEN w.day_count + 1 ELSE 1 END
        WHERE (SELECT COALESCE(sum(n), 0) FROM unnest(w.counts, w.lasts) AS u(n, l) WHERE l > EXCLUDED.at - ${MINUTE}) < ${perMinute}::bigint
          AND (CASE WHEN w.day = EXCLUDED.day THEN w.day_count ELSE 0 END) < ${perDay}::bigint
        RETURNING at, secs, counts, lasts, day, day_count`;
      if (w) return countOf(w, true, perMinute);
      // Refused: nothing was written. The row as it is now says why, and until when.
      const [r] = await this.sql<Window[]>`
        SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS at, secs, counts, lasts, day, day_count
        FROM rate_windows WHERE scope = ${scope} AND key = ${key}`;
      const now = Date.now();
      const found = r ? countOf(r, false, perMinute) : { now, taken: false, inMinute: 0, day: now - (now % DAY), dayCount: 0 };
      if (found.inMinute >= perMinute || found.dayCount >= perDay || tries >= 2) return found;
    }
  }

  async giveBack(key: string, at: number): Promise<void> {
    const sec = Math.floor(at / 1000);
    const slot = (sec % BUCKETS) + 1;
    await this.sql`
      UPDATE rate_windows SET
        counts[${slot}] = CASE WHEN secs[${slot}] = ${sec} AND counts[${slot}] > 0 THEN counts[${slot}] - 1 ELSE counts[${slot}] END,
        day_count = CASE WHEN day = ${at - (at % DAY)} AND day_count > 0 THEN day_count - 1 ELSE day_count END
      WHERE scope = ${this.scope} AND key = ${key}`;
  }

  /** Deletes the rows of keys that counted nothing today or in the last minute (no count reads them). */
  async sweep(): Promise<void> {
    await this.sql`
      DELETE FROM rate_windows
      WHERE scope = ${this.scope} AND at < (extract(epoch FROM clock_timestamp()) * 1000)::bigint - ${DAY}`;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }
}

/** D-52's per-visitor and per-address minutes on D-23's counts (scope `widget-window`): one count for every instance. */
export class PgMinuteWindows implements MinuteWindows {
  private readonly counts: PgRateCounts;

  constructor(sql: Sql) {
    this.counts = new PgRateCounts(sql, 'widget-window');
  }

  async open(): Promise<this> {
    await this.counts.open();
    return this;
  }

  async take(key: string, perMinute: number): Promise<{ at: number } | { retryAfterMs: number }> {
    const c = await this.counts.take(key, perMinute, Number.MAX_SAFE_INTEGER);
    return c.taken ? { at: c.now } : { retryAfterMs: (c.freesAt ?? c.now) + MINUTE - c.now };
  }

  giveBack(key: string, at: number): Promise<void> {
    return this.counts.giveBack(key, at);
  }

  close(): Promise<void> {
    return this.counts.close();
  }
}
