// D-24's counters and D-27's stored bytes on PostgreSQL (docs/postgres.md, D-101): each app's are the
// sum of up to SLOTS rows of `app_stats`, and a transaction adds to the row of its backend's slot, so
// that writers of one app do not wait for each other's commits. The quota is checked without a
// serialization point while the app is far from it, and under one per app near it (D-101).
import type { Sql, TransactionSql } from 'postgres';
import { LIMITS } from '../../contract/index.ts';
import type { AppCounters, QuotaAdmit } from '../types.ts';
import { PREPARED } from './rows.ts';

/** How many rows an app's counters are spread over: more than the connections writing at once, usually. */
export const SLOTS = 16;
/** The `app_stats` row a statement adds to: its backend's, which runs one transaction at a time. */
export const SLOT = `(pg_backend_pid() % ${SLOTS})`;
/** The most one create adds to its app's stored bytes on the fast path: its record and the largest metadata (D-9). */
export const RECORD_MAX = 256 + LIMITS.metadataBytes;
/** The advisory locks' first key for an app's quota (two-key form, apart from the other advisory locks). */
export const QUOTA_LOCK_CLASS = 0x71756f74;

/** A create that found its app within the margin: run again on the exact path. */
class NearQuota extends Error {}

/** Whether `admit` lets the create through with `stored` bytes and `running` more (it throws to refuse). */
function admits(admit: QuotaAdmit, stored: number, running: number): boolean {
  try {
    admit(stored, running);
    return true;
  } catch {
    return false;
  }
}

/**
 * The migration that spreads `app_stats` over slots, keeps each app's users for D-24's "distinct", and
 * replaces D-23's rows of requests by one window row per key (rate-counts.ts).
 */
export const COUNTERS_MIGRATION = {
  version: 10,
  name: 'counters without a serialization point',
  sql: `
    -- D-101: an app's counters are the sum of its rows, one per slot (pg_backend_pid() % ${SLOTS}).
    ALTER TABLE app_stats ADD COLUMN slot smallint NOT NULL DEFAULT 0;
    ALTER TABLE app_stats DROP CONSTRAINT app_stats_pkey;
    ALTER TABLE app_stats ADD PRIMARY KEY (app_id, slot);
    -- D-24's distinct users: a create inserts its user; the primary key makes concurrent creates of one
    -- new user count it once (the second waits for the first's commit, then finds it).
    CREATE TABLE app_users (
      app_id text NOT NULL,
      external_user_id text NOT NULL,
      PRIMARY KEY (app_id, external_user_id)
    );
    INSERT INTO app_users (app_id, external_user_id)
      SELECT DISTINCT app_id, external_user_id FROM conversations WHERE external_user_id IS NOT NULL;
    -- D-102: D-23's counts, one row per key: the day's count and the minute's requests in 61 buckets of
    -- a second (bucket i holds the second secs[i], where i - 1 is that second modulo 61: its count and
    -- its latest request, until which it counts).
    CREATE TABLE rate_windows (
      scope text NOT NULL,
      key text NOT NULL,
      at bigint NOT NULL,
      secs bigint[] NOT NULL,
      counts integer[] NOT NULL,
      lasts bigint[] NOT NULL,
      day bigint NOT NULL,
      day_count integer NOT NULL,
      PRIMARY KEY (scope, key)
    );
    WITH c AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now),
         k AS (SELECT scope, key FROM rate_days UNION SELECT scope, key FROM rate_events),
         b AS (SELECT scope, key, at / 1000 AS sec, count(*)::int AS n, max(at) AS last FROM rate_events, c
               WHERE at / 1000 >= c.now / 1000 - 60 GROUP BY 1, 2, 3)
    INSERT INTO rate_windows (scope, key, at, secs, counts, lasts, day, day_count)
      SELECT k.scope, k.key, c.now,
        ARRAY(SELECT COALESCE(b.sec, 0) FROM generate_series(0, 60) i
              LEFT JOIN b ON b.scope = k.scope AND b.key = k.key AND b.sec % 61 = i ORDER BY i),
        ARRAY(SELECT COALESCE(b.n, 0) FROM generate_series(0, 60) i
              LEFT JOIN b ON b.scope = k.scope AND b.key = k.key AND b.sec % 61 = i ORDER BY i),
        ARRAY(SELECT COALESCE(b.last, 0) FROM generate_series(0, 60) i
              LEFT JOIN b ON b.scope = k.scope AND b.key = k.key AND b.sec % 61 = i ORDER BY i),
        c.now - c.now % 86400000,
        COALESCE((SELECT d.count FROM rate_days d WHERE d.scope = k.scope AND d.key = k.key AND d.day = c.now - c.now % 86400000), 0)
      FROM k, c;
    DROP TABLE rate_events;
    DROP TABLE rate_days;
  `,
};

/**
 * Recomputes the `app_stats` counters (and users) of `appIds` (default: every app) from their
 * conversations, for rows written by SQL rather than through the store (an import). What the rows
 * miss (the truth less the slots' sum, both read in one snapshot) is added to slot 0, so a write that
 * commits meanwhile, which changes its conversation and its slot together, still counts: no lock.
 */
export async function recountAppStats(sql: Sql | TransactionSql, appIds?: readonly string[]): Promise<void> {
  const only = appIds ?? null;
  const all = only === null;
  const ids = (only ?? []) as string[];
  await sql`
    INSERT INTO app_users (app_id, external_user_id)
    SELECT DISTINCT app_id, external_user_id FROM conversations
    WHERE external_user_id IS NOT NULL AND (${all} OR app_id = ANY(${ids})) ON CONFLICT DO NOTHING`;
  await sql`
    WITH t AS (
      SELECT app_id, count(*) AS conversations, COALESCE(sum(message_count), 0) AS messages,
             count(DISTINCT external_user_id) AS users,
             COALESCE(sum(CASE WHEN deleted_at IS NULL THEN 256 + octet_length(metadata) + history_bytes ELSE 0 END), 0) AS bytes,
             COALESCE(sum(CASE WHEN deleted_at IS NOT NULL AND purged_at IS NULL THEN 256 + octet_length(metadata) + history_bytes ELSE 0 END), 0) AS kept_bytes
      FROM conversations WHERE ${all} OR app_id = ANY(${ids}) GROUP BY app_id
    ), k AS (
      SELECT app_id, sum(conversations) AS conversations, sum(messages) AS messages, sum(users) AS users,
             sum(bytes) AS bytes, sum(kept_bytes) AS kept_bytes
      FROM app_stats WHERE app_id IN (SELECT app_id FROM t) GROUP BY app_id
    )
    INSERT INTO app_stats AS s (app_id, slot, conversations, messages, users, bytes, kept_bytes)
    SELECT t.app_id, 0, t.conversations - COALESCE(k.conversations, 0), t.messages - COALESCE(k.messages, 0),
           t.users - COALESCE(k.users, 0), t.bytes - COALESCE(k.bytes, 0), t.kept_bytes - COALESCE(k.kept_bytes, 0)
    FROM t LEFT JOIN k USING (app_id)
    ON CONFLICT (app_id, slot) DO UPDATE SET conversations = s.conversations + EXCLUDED.conversations,
      messages = s.messages + EXCLUDED.messages, users = s.users + EXCLUDED.users,
      bytes = s.bytes + EXCLUDED.bytes, kept_bytes = s.kept_bytes + EXCLUDED.kept_bytes`;
}

/**
 * A create's statement: the conversation, its user and its app's counters; returns the app's stored
 * bytes before it. A seq not given is the one the lock's statement before it took (`currval`, D-7).
 */
export type CreateStatement = (tx: TransactionSql) => Promise<number>;

export class AppStats {
  /** Apps last found within the margin of their quota: their creates go to the exact path first. */
  private readonly near = new Set<string>();
  /** D-101: what creates running at once can add at most (every connection the server allows, each the largest record). */
  private margin = Number.POSITIVE_INFINITY;

  constructor(private readonly sql: Sql) {}

  async open(): Promise<void> {
    const [row] = await this.sql<{ n: string }[]>`SELECT current_setting('max_connections') AS n`;
    this.margin = Number(row!.n) * RECORD_MAX;
  }

  async counters(appId: string): Promise<AppCounters> {
    const [row] = await this.sql<{ conversations: string | null; messages: string | null; users: string | null }[]>`
      SELECT sum(conversations) AS conversations, sum(messages) AS messages, sum(users) AS users FROM app_stats WHERE app_id = ${appId}`;
    return { conversations: Number(row?.conversations ?? 0), messages: Number(row?.messages ?? 0), users: Number(row?.users ?? 0) };
  }

  async storedBytes(appId: string): Promise<number> {
    const [row] = await this.sql<{ bytes: string | null }[]>`SELECT sum(bytes) AS bytes FROM app_stats WHERE app_id = ${appId}`;
    return Number(row?.bytes ?? 0);
  }

  /**
   * Runs a create (`begin` opens its transaction and runs the callback in it) under D-27's quota,
   * across instances (D-42, D-101). Far from its quota, a create takes its app's lock *shared*: creates
   * run side by side, each admitted if the bytes committed before it plus the margin (what every
   * create running at once could add) fit. Near it, or for a record larger than RECORD_MAX, a create
   * takes the lock *exclusive*: it waits for the creates running, and admits with the exact bytes.
   * `seq`: the next of the sequence when undefined (D-7: the store gives it, in the lock's statement);
   * a seq given by an import moves the sequence past it. Resolves with the seq.
   */
  async create(
    begin: (run: (tx: TransactionSql) => Promise<number>) => Promise<number>,
    appId: string,
    seq: number | undefined,
    bytes: number,
    statement: CreateStatement,
    admit?: QuotaAdmit,
  ): Promise<number> {
    const exact = admit !== undefined && (bytes > RECORD_MAX || this.near.has(appId));
    try {
      return await begin((tx) => this.run(tx, appId, seq, statement, admit, exact));
    } catch (err) {
      if (!(err instanceof NearQuota)) throw err;
      this.near.add(appId);
      return await begin((tx) => this.run(tx, appId, seq, statement, admit, true));
    }
  }

  private async run(
    tx: TransactionSql,
    appId: string,
    seq: number | undefined,
    statement: CreateStatement,
    admit: QuotaAdmit | undefined,
    exact: boolean,
  ): Promise<number> {
    const lock = exact ? 'pg_advisory_xact_lock' : 'pg_advisory_xact_lock_shared';
    // A statement of its own: the next one's snapshot is taken once the lock is held, so it sees every
    // create that held it exclusive before. Prepared, as the insert (docs/benchmarks.md). Executed at
    // once: on the fast path the insert goes out with it, in one write and one round trip.
    const locked = tx
      .unsafe<[{ seq: string | null }]>(
        `SELECT ${lock}($1, hashtext($2)), CASE WHEN $3::bigint IS NULL THEN nextval('conversation_seq')
           ELSE (SELECT setval('conversation_seq', $3) FROM conversation_seq
                 WHERE CASE WHEN is_called THEN last_value < $3 ELSE last_value <= $3 END) END AS seq`,
        [QUOTA_LOCK_CLASS, appId, seq ?? null],
        PREPARED,
      )
      .execute();
    if (exact) {
      const [taken] = await locked;
      const [row] = await tx<{ bytes: string | null }[]>`SELECT sum(bytes) AS bytes FROM app_stats WHERE app_id = ${appId}`;
      const stored = Number(row?.bytes ?? 0);
      admit!(stored);
      if (admits(admit!, stored, this.margin)) this.near.delete(appId);
      await statement(tx);
      return seq ?? Number(taken.seq);
    }
    const [[taken], stored] = await Promise.all([locked, statement(tx)]);
    // Rolled back and run again exactly: the creates running at once could pass the quota together.
    if (admit && !admits(admit, stored, this.margin)) throw new NearQuota();
    return seq ?? Number(taken.seq);
  }
}
