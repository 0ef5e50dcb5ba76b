// What the control plane writes per request or attempt on PostgreSQL (D-76): the audit log, sessions,
// sign-in failures and key use, in tables of migration 5 shared by every instance. The file backend's
// twins are in src/store/file/control-journals.ts.
import type { Sql, TransactionSql } from 'postgres';
import {
  type AuditDraft,
  type AuditLog,
  type AuditQuery,
  type AuditRecord,
  auditRecord,
  type FailureCounts,
  SESSION_MAX_AGE_MS,
  type SessionRecord,
  type Sessions,
} from '../control.ts';

/** The advisory locks' first key for the sign-in throttle (two-key form, apart from the other advisory locks). */
export const THROTTLE_LOCK_CLASS = 0x74687274;

/** D-75: newest first by `seq`; entries of a change are written in that change's transaction. */
export class PgAuditLog implements AuditLog {
  constructor(
    private readonly sql: Sql,
    private readonly now: () => number,
  ) {}

  /** Drops the entries older than the retention. */
  async prune(retentionDays: number): Promise<void> {
    await this.sql`DELETE FROM audit_log WHERE created_at < ${Math.floor(this.now() / 1000) - retentionDays * 86_400}`;
  }

  /** Writes `drafts` in `tx` (or on its own). */
  async write(tx: Sql | TransactionSql, drafts: AuditDraft[]): Promise<AuditRecord[]> {
    const now = this.now();
    const records = drafts.map((d) => auditRecord(d, now));
    for (const a of records)
      await tx`INSERT INTO audit_log (id, team_id, action, created_at, body)
               VALUES (${a.id}, ${a.team_id}, ${a.action}, ${a.created_at}, ${JSON.stringify(a)}::text::jsonb)`;
    return records;
  }

  append(drafts: AuditDraft[]): Promise<AuditRecord[]> {
    return this.sql.begin((tx) => this.write(tx, drafts));
  }

  async list(q: AuditQuery): Promise<{ data: AuditRecord[]; has_more: boolean }> {
    const sql = this.sql;
    const rows = await sql<{ body: string }[]>`
      SELECT body::text AS body FROM audit_log
      WHERE team_id = ${q.team_id}
        ${q.action !== undefined ? sql`AND action = ${q.action}` : sql``}
        ${q.since !== undefined ? sql`AND created_at >= ${q.since}` : sql``}
        ${q.until !== undefined ? sql`AND created_at <= ${q.until}` : sql``}
        ${q.after !== undefined ? sql`AND seq < COALESCE((SELECT seq FROM audit_log WHERE id = ${q.after}), 0)` : sql``}
      ORDER BY seq DESC LIMIT ${q.limit + 1}`;
    const data = rows.slice(0, q.limit).map((r) => JSON.parse(r.body) as AuditRecord);
    return { data, has_more: rows.length > q.limit };
  }
}

interface SessionRow {
  id: string;
  member_id: string;
  team_id: string;
  csrf_token: string;
  created_at: string;
  seen_at: string;
}

export class PgSessions implements Sessions {
  constructor(
    private readonly sql: Sql,
    private readonly now: () => number,
  ) {}

  async create(s: SessionRecord): Promise<void> {
    await this.sql`DELETE FROM admin_sessions WHERE created_at < ${this.now() - SESSION_MAX_AGE_MS}`;
    await this.sql`INSERT INTO admin_sessions (id, member_id, team_id, csrf_token, created_at, seen_at)
                   VALUES (${s.id}, ${s.member_id}, ${s.team_id}, ${s.csrf_token}, ${s.created_at}, ${s.seen_at})`;
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const [r] = await this.sql<SessionRow[]>`SELECT * FROM admin_sessions WHERE id = ${id}`;
    return r && { ...r, created_at: Number(r.created_at), seen_at: Number(r.seen_at) };
  }

  async touch(id: string, at: number): Promise<void> {
    await this.sql`UPDATE admin_sessions SET seen_at = GREATEST(seen_at, ${at}) WHERE id = ${id}`;
  }

  async end(id: string): Promise<void> {
    await this.sql`DELETE FROM admin_sessions WHERE id = ${id}`;
  }

  async endMember(memberId: string, except?: string): Promise<void> {
    await this.sql`DELETE FROM admin_sessions WHERE member_id = ${memberId} AND id <> ${except ?? ''}`;
  }
}

export class PgFailureCounts implements FailureCounts {
  constructor(
    private readonly sql: Sql,
    private readonly now: () => number,
  ) {}

  async reserve(keys: readonly string[], since: number, at: number, admit: (failures: number[][]) => number): Promise<number> {
    return this.sql.begin(async (tx) => {
      // D-165: a transaction lock per key, taken in one order so two sets never wait for each other:
      // the next reservation of a key, on any instance, reads once this one is committed.
      for (const k of [...keys].sort()) await tx`SELECT pg_advisory_xact_lock(${THROTTLE_LOCK_CLASS}, hashtext(${k}))`;
      const rows = await tx<{ key: string; at: string }[]>`
        SELECT key, at FROM sign_in_failures WHERE key = ANY(${keys as string[]}) AND at >= ${since} ORDER BY at`;
      const wait = admit(keys.map((k) => rows.filter((r) => r.key === k).map((r) => Number(r.at))));
      if (wait > 0) return wait;
      // Each key prunes its own older than a day, so the table holds only what a window may read.
      await tx`DELETE FROM sign_in_failures WHERE key = ANY(${keys as string[]}) AND at < ${this.now() - 86_400_000}`;
      await tx`INSERT INTO sign_in_failures (key, at) SELECT unnest(${keys as string[]}::text[]), ${at}`;
      return 0;
    });
  }

  async release(key: string, at: number): Promise<void> {
    await this
      .sql`DELETE FROM sign_in_failures WHERE ctid IN (SELECT ctid FROM sign_in_failures WHERE key = ${key} AND at = ${at} LIMIT 1)`;
  }

  async clear(key: string): Promise<void> {
    await this.sql`DELETE FROM sign_in_failures WHERE key = ${key}`;
  }
}

/** D-70: where KeyUseRecorder writes (one upsert per id, the later time kept). */
export class PgKeyUse {
  constructor(private readonly sql: Sql) {}

  async write(uses: Map<string, number>): Promise<void> {
    const ids = [...uses.keys()];
    const ats = ids.map((id) => uses.get(id)!);
    await this.sql`INSERT INTO key_use (id, last_used_at) SELECT * FROM unnest(${ids}::text[], ${ats}::bigint[])
                   ON CONFLICT (id) DO UPDATE SET last_used_at = GREATEST(key_use.last_used_at, EXCLUDED.last_used_at)`;
  }

  async read(ids: readonly string[]): Promise<Map<string, number>> {
    const rows = await this.sql<
      { id: string; last_used_at: string }[]
    >`SELECT id, last_used_at FROM key_use WHERE id = ANY(${ids as string[]})`;
    return new Map(rows.map((r) => [r.id, Number(r.last_used_at)]));
  }
}
