// D-23's counts on PostgreSQL (docs/postgres.md), shared by every instance: a day's count per key
// (`rate_days`) and the last minute's requests (`rate_events`). A count is one short transaction
// that first takes a transaction-scoped advisory lock on its key: counts of one key take turns across
// instances, and each reads what the one before it committed, so N instances admit exactly the
// plan's requests. Times are the database's clock, one clock for every instance.
import type { Sql } from 'postgres';
import type { MinuteWindows, RateCount, RateCounts } from '../shared.ts';

const MINUTE = 60_000;
const DAY = 86_400_000;
/** The advisory locks' first key (two-key form: apart from the single-key locks of migrate.ts and pg-store.ts). */
const RATE_LOCK_CLASS = 0x72617465;
/** How often the counts of keys no longer counting are pruned (each key prunes its own as it counts). */
const SWEEP_MS = 3_600_000;

interface Found {
  now: string;
  n: string;
  newest: string | null;
  frees: string | null;
  day_count: number | null;
}

export class PgRateCounts implements RateCounts {
  private sweeper: NodeJS.Timeout | undefined;

  /** `scope` tells the REST plans' counts from the widget's budgets (D-52), which are keyed by app too. */
  constructor(
    private readonly sql: Sql,
    private readonly scope: string,
  ) {}

  /** Prunes what is left of keys that stopped counting, now and every hour. */
  async open(): Promise<this> {
    await this.sweep();
    this.sweeper = setInterval(() => void this.sweep().catch(() => {}), SWEEP_MS);
    this.sweeper.unref();
    return this;
  }

  async take(key: string, perMinute: number, perDay: number): Promise<RateCount> {
    const scope = this.scope;
    return this.sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${RATE_LOCK_CLASS}, hashtext(${`${scope}:${key}`}))`;
      // Read after the lock: every count committed before this one is seen (read committed). Only the
      // newest perMinute are read, from the index: whether the window is full is all a count needs,
      // so its cost is bounded by the plan, not by the traffic.
      const [f] = await tx<Found[]>`
        WITH c AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now),
             w AS (SELECT at FROM rate_events, c WHERE scope = ${scope} AND key = ${key} AND at > c.now - ${MINUTE}
                   ORDER BY at DESC LIMIT ${Math.max(1, perMinute)})
        SELECT c.now,
               (SELECT count(*) FROM w) AS n,
               (SELECT max(at) FROM w) AS newest,
               (SELECT CASE WHEN count(*) >= ${perMinute} THEN min(at) END FROM w) AS frees,
               (SELECT count FROM rate_days d WHERE d.scope = ${scope} AND d.key = ${key} AND d.day = c.now - c.now % ${DAY}) AS day_count
        FROM c`;
      const now = Number(f!.now);
      const inMinute = Number(f!.n);
      const day = now - (now % DAY);
      const dayCount = f!.day_count ?? 0;
      const found = { now, inMinute, day, dayCount, newest: f!.newest === null ? undefined : Number(f!.newest) };
      // A refusal writes nothing.
      if (inMinute >= perMinute || dayCount >= perDay) {
        return { ...found, taken: false, freesAt: inMinute >= perMinute && f!.frees !== null ? Number(f!.frees) : undefined };
      }
      // The count, and the key's own counts that no longer matter pruned, in one statement.
      await tx`
        WITH e AS (INSERT INTO rate_events (scope, key, at) VALUES (${scope}, ${key}, ${now})),
             d AS (INSERT INTO rate_days (scope, key, day, count) VALUES (${scope}, ${key}, ${day}, 1)
                   ON CONFLICT (scope, key, day) DO UPDATE SET count = rate_days.count + 1),
             p AS (DELETE FROM rate_events WHERE scope = ${scope} AND key = ${key} AND at <= ${now - MINUTE}),
             q AS (DELETE FROM rate_days WHERE scope = ${scope} AND key = ${key} AND day < ${day})
        SELECT 1`;
      return { ...found, taken: true };
    });
  }

  async giveBack(key: string, at: number): Promise<void> {
    const scope = this.scope;
    await this.sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${RATE_LOCK_CLASS}, hashtext(${`${scope}:${key}`}))`;
      const gone =
        await tx`DELETE FROM rate_events WHERE ctid = (SELECT ctid FROM rate_events WHERE scope = ${scope} AND key = ${key} AND at = ${at} LIMIT 1)`;
      if (gone.count > 0)
        await tx`UPDATE rate_days SET count = count - 1 WHERE scope = ${scope} AND key = ${key} AND day = ${at - (at % DAY)} AND count > 0`;
    });
  }

  /** Deletes the requests out of every minute window and the days before today (no count reads them). */
  async sweep(): Promise<void> {
    await this.sql`
      WITH c AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now),
           p AS (DELETE FROM rate_events USING c WHERE scope = ${this.scope} AND at <= c.now - ${MINUTE})
      DELETE FROM rate_days USING c WHERE scope = ${this.scope} AND day < c.now - c.now % ${DAY}`;
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
