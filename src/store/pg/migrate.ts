// Versioned migrations of the PostgreSQL store (docs/postgres.md, D-41): each runs once, in order, in
// its own transaction, recorded in `schema_migrations`. A session advisory lock around them makes
// several instances starting at once take turns: the first migrates, the others find nothing to do.
// Plain SQL that PostgreSQL 13 and later run.
import type { Sql } from 'postgres';
import { WEBHOOKS_MIGRATION } from './webhooks.ts';
import { COUNTERS_MIGRATION } from './app-stats.ts';
import { CONTROL_SEEN_MIGRATION } from './control.ts';
import { REFUSALS_MIGRATION } from './refusals.ts';
import { TEST_RUNS_MIGRATION } from './test-runs.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Never edit a migration that has shipped: add the next one. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'conversations',
    sql: `
      -- JSON is kept as text (not jsonb): clients see keys in the order they sent them (jsonb sorts them).
      CREATE TABLE conversations (
        id text PRIMARY KEY,
        app_id text NOT NULL,
        seq bigint NOT NULL,
        created_at bigint NOT NULL,
        external_user_id text,
        title text,
        generated_title text NOT NULL DEFAULT '{}',
        metadata text NOT NULL DEFAULT '{}',
        deleted_at bigint,
        message_count integer NOT NULL DEFAULT 0,
        -- D-29: the history's size (its items' and responses' JSON); D-27 counts it in the quota.
        history_bytes bigint NOT NULL DEFAULT 0,
        item_count integer NOT NULL DEFAULT 0,
        last_item_at bigint NOT NULL DEFAULT 0
      );
      CREATE INDEX conversations_app_seq ON conversations (app_id, seq, id);
      CREATE TABLE items (
        conversation_id text NOT NULL REFERENCES conversations ON DELETE CASCADE,
        pos integer NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (conversation_id, pos)
      );
      CREATE TABLE responses (
        conversation_id text NOT NULL REFERENCES conversations ON DELETE CASCADE,
        pos integer NOT NULL,
        id text NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (conversation_id, pos)
      );
      CREATE TABLE idempotency_claims (
        key text PRIMARY KEY,
        fingerprint text NOT NULL,
        at bigint NOT NULL
      );
      CREATE INDEX idempotency_claims_at ON idempotency_claims (at);
    `,
  },
  {
    version: 2,
    name: 'live responses',
    sql: `
      -- Resumable responses (D-30…D-39): kept after their end (a look-up still answers, D-36); their
      -- events until the retention. The owner renews lease_until while it produces the response.
      CREATE TABLE live_responses (
        id text PRIMARY KEY,
        app_id text NOT NULL,
        conversation_id text NOT NULL,
        created_at bigint NOT NULL,
        input text NOT NULL,
        owner text NOT NULL,
        lease_until bigint NOT NULL,
        ended_at bigint
      );
      -- D-35: at most one live response per conversation, across instances.
      CREATE UNIQUE INDEX live_responses_running ON live_responses (conversation_id) WHERE ended_at IS NULL;
      CREATE TABLE response_events (
        response_id text NOT NULL REFERENCES live_responses ON DELETE CASCADE,
        seq integer NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (response_id, seq)
      );
    `,
  },
  {
    version: 3,
    name: 'shared state',
    sql: `
      -- What each instance kept in its data directory, shared so that any instance answers any request.
      -- Usage (§1, §4.7): one row per response or completion; totals by query.
      CREATE TABLE usage_entries (
        app_id text NOT NULL,
        kind text NOT NULL,
        id text NOT NULL,
        at bigint NOT NULL,
        input_tokens integer NOT NULL,
        output_tokens integer NOT NULL,
        PRIMARY KEY (kind, id)
      );
      CREATE INDEX usage_entries_app ON usage_entries (app_id, at);
      -- D-23 (and D-52's widget budgets): a day's count per key, locked by whoever counts, and the
      -- last minute's requests; scope tells the REST plans from the widget's budgets.
      CREATE TABLE rate_days (
        scope text NOT NULL,
        key text NOT NULL,
        day bigint NOT NULL,
        count integer NOT NULL,
        PRIMARY KEY (scope, key, day)
      );
      CREATE TABLE rate_events (
        scope text NOT NULL,
        key text NOT NULL,
        at bigint NOT NULL
      );
      CREATE INDEX rate_events_key ON rate_events (scope, key, at);
      -- Idempotency-Key answers: running (owner and lease) or done (the answer to replay, or none).
      CREATE TABLE idempotency_answers (
        key text PRIMARY KEY,
        fingerprint text NOT NULL,
        at bigint NOT NULL,
        state text NOT NULL,
        kind text,
        body text,
        lost boolean NOT NULL DEFAULT false,
        owner text,
        lease_until bigint,
        -- D-30: the response a running send message produces, which a retry on any instance follows.
        response_id text
      );
      CREATE INDEX idempotency_answers_at ON idempotency_answers (at);
      -- D-48: which visitor owns which widget conversation.
      CREATE TABLE widget_owners (
        conversation_id text PRIMARY KEY,
        visitor_id text NOT NULL
      );
      -- Values every instance must agree on, made once by the first (D-49's widget signing secret).
      CREATE TABLE settings (
        name text PRIMARY KEY,
        value text NOT NULL
      );
    `,
  },
  {
    version: 4,
    name: 'reads across instances',
    sql: `
      -- D-7: one creation order for every instance (an import sets it past the seqs it loaded).
      CREATE SEQUENCE conversation_seq;
      SELECT setval('conversation_seq', COALESCE((SELECT max(seq) FROM conversations), 0) + 1, false);
      -- D-24's counters (soft-deleted conversations included) and D-27's stored bytes (excluded), one
      -- row per app, changed in the transactions that change its conversations; a create locks it to
      -- check the storage quota, so instances creating at once never pass the quota together.
      CREATE TABLE app_stats (
        app_id text PRIMARY KEY,
        conversations bigint NOT NULL DEFAULT 0,
        messages bigint NOT NULL DEFAULT 0,
        users bigint NOT NULL DEFAULT 0,
        bytes bigint NOT NULL DEFAULT 0
      );
      INSERT INTO app_stats (app_id, conversations, messages, users, bytes)
        SELECT app_id, count(*), COALESCE(sum(message_count), 0), count(DISTINCT external_user_id),
               COALESCE(sum(CASE WHEN deleted_at IS NULL THEN 256 + octet_length(metadata) + history_bytes ELSE 0 END), 0)
        FROM conversations GROUP BY app_id;
      -- D-12: a page of live conversations by keyset on (seq, id), an app's and one user's (the latter
      -- also tells whether a user is new to the app, D-24).
      CREATE INDEX conversations_live ON conversations (app_id, seq, id) WHERE deleted_at IS NULL;
      CREATE INDEX conversations_user ON conversations (app_id, external_user_id, seq, id);
    `,
  },
  {
    version: 5,
    name: 'control plane',
    sql: `
      -- D-76: the control plane's document (teams, members, keys, tokens, plans, apps) as one row,
      -- changed under its row lock; version moves with every change (D-78: instances reload on it).
      CREATE TABLE control_document (
        id integer PRIMARY KEY CHECK (id = 1),
        version bigint NOT NULL,
        body jsonb NOT NULL
      );
      -- D-75: written in the transaction of the change it records; listed newest first by seq.
      CREATE TABLE audit_log (
        seq bigserial PRIMARY KEY,
        id text NOT NULL UNIQUE,
        team_id text,
        action text NOT NULL,
        created_at bigint NOT NULL,
        body jsonb NOT NULL
      );
      CREATE INDEX audit_log_team ON audit_log (team_id, seq);
      CREATE INDEX audit_log_created ON audit_log (created_at);
      -- D-67: dashboard sessions by the SHA-256 of their cookie (times in ms).
      CREATE TABLE admin_sessions (
        id text PRIMARY KEY,
        member_id text NOT NULL,
        team_id text NOT NULL,
        csrf_token text NOT NULL,
        created_at bigint NOT NULL,
        seen_at bigint NOT NULL
      );
      CREATE INDEX admin_sessions_member ON admin_sessions (member_id);
      -- D-69: failed sign-ins per (email, address) and per address (ms).
      CREATE TABLE sign_in_failures (
        key text NOT NULL,
        at bigint NOT NULL
      );
      CREATE INDEX sign_in_failures_key ON sign_in_failures (key, at);
      -- D-70: when each key or token was last used (Unix seconds).
      CREATE TABLE key_use (
        id text PRIMARY KEY,
        last_used_at bigint NOT NULL
      );
    `,
  },
  {
    version: 6,
    name: 'credits',
    sql: `
      -- D-74: each usage row carries its reply's debit, in millicredits; a team's balance is a sum
      -- over its month of rows (rows written before carry none: that usage was not billed), read from
      -- the index alone where the visibility map allows.
      ALTER TABLE usage_entries ADD COLUMN team_id text, ADD COLUMN millicredits bigint NOT NULL DEFAULT 0;
      CREATE INDEX usage_entries_team ON usage_entries (team_id, at) INCLUDE (millicredits) WHERE team_id IS NOT NULL;
    `,
  },
  {
    version: 7,
    name: 'deleted histories kept',
    sql: `
      -- D-73 (revising D-27): a soft delete keeps the history until purged_at is set (its items,
      -- responses and metadata then go). Conversations deleted before were purged as they were deleted
      -- (their history then; their metadata, never served since, now).
      ALTER TABLE conversations ADD COLUMN purged_at bigint;
      UPDATE conversations SET purged_at = deleted_at, metadata = '{}' WHERE deleted_at IS NOT NULL;
      -- Each app's bytes of kept histories (its bound), kept by the transactions that change them.
      ALTER TABLE app_stats ADD COLUMN kept_bytes bigint NOT NULL DEFAULT 0;
      -- The sweep by age, and each app's kept histories (their bound), read by these alone.
      CREATE INDEX conversations_kept ON conversations (deleted_at) WHERE deleted_at IS NOT NULL AND purged_at IS NULL;
      CREATE INDEX conversations_app_kept ON conversations (app_id, deleted_at) WHERE deleted_at IS NOT NULL AND purged_at IS NULL;
    `,
  },
  WEBHOOKS_MIGRATION,
  {
    version: 9,
    name: 'ended responses pruned',
    sql: `
      -- D-93: the prune reads these alone, a batch at a time from the oldest: the responses past D-36's
      -- hour whose events and input are still there, and the ended ones (past the look-up's retention).
      CREATE INDEX live_responses_kept ON live_responses (ended_at) WHERE input <> '';
      CREATE INDEX live_responses_ended ON live_responses (ended_at) WHERE ended_at IS NOT NULL;
    `,
  },
  COUNTERS_MIGRATION,
  CONTROL_SEEN_MIGRATION,
  {
    version: 12,
    name: 'response events without a foreign key',
    sql: `
      -- D-114: the foreign key checked the response's row once per event written (a query a row, whose
      -- plan each connection keeps); the statement that writes a batch takes that row itself (D-100), and
      -- the prune deletes a response's events with its row (responses.ts).
      ALTER TABLE response_events DROP CONSTRAINT IF EXISTS response_events_response_id_fkey;
    `,
  },
  REFUSALS_MIGRATION,
  TEST_RUNS_MIGRATION,
];

/** Any constant both sides agree on: the advisory lock's key ("parley" in ASCII). */
export const MIGRATION_LOCK = 0x7061726c6579;

export interface MigrationStatus {
  applied: { version: number; name: string; applied_at: Date }[];
  pending: Migration[];
}

async function ensureTable(sql: Sql): Promise<void> {
  await sql`CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
}

export interface MigrateOptions {
  /** Called once if another session holds the migration lock, before waiting for it. */
  onWait?: () => void;
}

/** Applies the pending migrations; resolves with the versions it applied. */
export async function migrate(sql: Sql, migrations: readonly Migration[] = MIGRATIONS, opts: MigrateOptions = {}): Promise<number[]> {
  // One reserved connection: a session advisory lock belongs to the connection that took it.
  const conn = await sql.reserve();
  try {
    // Tried first, so that a caller can say why it waits (`parley db migrate`) instead of hanging silently.
    const [tried] = await conn<{ locked: boolean }[]>`SELECT pg_try_advisory_lock(${MIGRATION_LOCK}) AS locked`;
    if (!tried!.locked) {
      opts.onWait?.();
      await conn`SELECT pg_advisory_lock(${MIGRATION_LOCK})`;
    }
    try {
      // Two instances creating the table at once could clash: it is created under the lock.
      await ensureTable(conn as unknown as Sql);
      const done = new Set((await conn<{ version: number }[]>`SELECT version FROM schema_migrations`).map((r) => r.version));
      const known = Math.max(0, ...migrations.map((m) => m.version));
      const newer = [...done].filter((v) => v > known);
      if (newer.length > 0)
        throw new Error(`the database's schema is version ${Math.max(...newer)}, newer than this Parley knows (${known}): upgrade Parley`);
      const applied: number[] = [];
      for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
        if (done.has(m.version)) continue;
        await conn.unsafe(`BEGIN`);
        try {
          await conn.unsafe(m.sql);
          await conn`INSERT INTO schema_migrations (version, name) VALUES (${m.version}, ${m.name})`;
          await conn.unsafe(`COMMIT`);
        } catch (err) {
          await conn.unsafe(`ROLLBACK`);
          throw new Error(`migration ${m.version} (${m.name}) failed: ${(err as Error).message}`);
        }
        applied.push(m.version);
      }
      return applied;
    } finally {
      await conn`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`;
    }
  } finally {
    conn.release();
  }
}

export async function migrationStatus(sql: Sql, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrationStatus> {
  const exists = await sql`SELECT to_regclass('schema_migrations') IS NOT NULL AS ok`;
  const applied = exists[0]!.ok
    ? await sql<
        { version: number; name: string; applied_at: Date }[]
      >`SELECT version, name, applied_at FROM schema_migrations ORDER BY version`
    : [];
  const done = new Set(applied.map((r) => r.version));
  return { applied: [...applied], pending: migrations.filter((m) => !done.has(m.version)) };
}
