// `parley data export|import` on PostgreSQL (docs/data.md), in SQL on the tables (src/store/pg/migrate.ts),
// while Parley may serve the database: an export reads one REPEATABLE READ snapshot, page by page;
// an import is one transaction, so a clash or a bad line anywhere leaves the database as it was (its
// lines are inserted by pg-import.ts).
import postgres, { type ReservedSql, type Sql } from 'postgres';
import { migrate, migrationStatus } from '../pg/migrate.ts';
import { recordOf, type ConversationRow } from '../pg/rows.ts';
import { conversationLine, endLine, headerLine, noCounts, usageLine, type DataPort, type LineSource, type PortCounts } from './format.ts';
import { auditLine, controlLine, parseControl } from './control-lines.ts';
import { HISTORY_CHUNK_BYTES, importLines } from './pg-import.ts';

/** Conversations read per page of the export (their history bytes fetched per query: HISTORY_CHUNK_BYTES). */
const PAGE = 500;
const USAGE_PAGE = 5_000;

export class PgPort implements DataPort {
  readonly kind = 'postgres' as const;

  private constructor(private readonly sql: Sql) {}

  static open(url: string): PgPort {
    return new PgPort(postgres(url, { max: 2, onnotice: () => {}, connect_timeout: 10 }));
  }

  close(): Promise<void> {
    return this.sql.end({ timeout: 5 });
  }

  async *export(apps?: ReadonlyMap<string, string>): AsyncGenerator<string, PortCounts> {
    const status = await migrationStatus(this.sql);
    if (status.applied.length === 0) throw new Error('the database has no Parley schema: nothing to export (parley db migrate creates it)');
    if (status.pending.length > 0)
      throw new Error(
        `the database's schema is not up to date (pending: ${status.pending.map((m) => `#${m.version}`).join(', ')}): run parley db migrate first`,
      );
    const conn = await this.sql.reserve();
    try {
      // One snapshot for the whole export: a server writing meanwhile is seen before or after, never half.
      await conn.unsafe('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        const counts = noCounts();
        yield headerLine('postgres', apps);
        // Version 2: the control plane (the document, then the audit log oldest first), in the same snapshot.
        for await (const line of this.controlLines(conn)) {
          if (line.startsWith('{"type":"control"')) counts.control++;
          else counts.audit++;
          yield line;
        }
        let after: [string, string, string] | undefined;
        for (;;) {
          const rows: ConversationRow[] = after
            ? await conn<
                ConversationRow[]
              >`SELECT id, app_id, seq, created_at, external_user_id, title, generated_title, metadata, deleted_at, message_count, history_bytes
                FROM conversations WHERE (app_id, seq, id) > (${after[0]}, ${after[1]}, ${after[2]}) ORDER BY app_id, seq, id LIMIT ${PAGE}`
            : await conn<
                ConversationRow[]
              >`SELECT id, app_id, seq, created_at, external_user_id, title, generated_title, metadata, deleted_at, message_count, history_bytes
                FROM conversations ORDER BY app_id, seq, id LIMIT ${PAGE}`;
          if (rows.length === 0) break;
          // Histories are fetched for a few conversations at a time: a page of large ones stays bounded.
          for (let i = 0; i < rows.length; ) {
            let j = i;
            let bytes = 0;
            while (j < rows.length && (j === i || bytes + Number(rows[j]!.history_bytes) <= HISTORY_CHUNK_BYTES))
              bytes += Number(rows[j++]!.history_bytes);
            const chunk = rows.slice(i, j);
            // A conversation never sent to, or purged (D-73), has no history to fetch.
            const ids = chunk.filter((r) => Number(r.history_bytes) > 0).map((r) => r.id);
            const [items, responses] =
              ids.length === 0
                ? [[], []]
                : await Promise.all([
                    conn<
                      { conversation_id: string; body: string }[]
                    >`SELECT conversation_id, body FROM items WHERE conversation_id = ANY(${conn.array(ids)}) ORDER BY conversation_id, pos`,
                    conn<
                      { conversation_id: string; body: string }[]
                    >`SELECT conversation_id, body FROM responses WHERE conversation_id = ANY(${conn.array(ids)}) ORDER BY conversation_id, pos`,
                  ]);
            const group = (list: { conversation_id: string; body: string }[]) => {
              const m = new Map<string, string[]>();
              for (const r of list) {
                let l = m.get(r.conversation_id);
                if (!l) m.set(r.conversation_id, (l = []));
                l.push(r.body);
              }
              return m;
            };
            const itemsOf = group(items);
            const responsesOf = group(responses);
            for (const r of chunk) {
              const its = itemsOf.get(r.id) ?? [];
              const rs = responsesOf.get(r.id) ?? [];
              counts.conversations++;
              counts.items += its.length;
              counts.responses += rs.length;
              yield conversationLine(recordOf(r), its, rs);
            }
            i = j;
          }
          const last = rows.at(-1)!;
          after = [last.app_id, last.seq, last.id];
        }
        let afterUsage: [string, string] | undefined;
        for (;;) {
          type U = { app_id: string; kind: 'response' | 'completion'; id: string; at: string; input_tokens: number; output_tokens: number };
          const rows: U[] = afterUsage
            ? await conn<
                U[]
              >`SELECT app_id, kind, id, at, input_tokens, output_tokens FROM usage_entries WHERE (kind, id) > (${afterUsage[0]}, ${afterUsage[1]}) ORDER BY kind, id LIMIT ${USAGE_PAGE}`
            : await conn<
                U[]
              >`SELECT app_id, kind, id, at, input_tokens, output_tokens FROM usage_entries ORDER BY kind, id LIMIT ${USAGE_PAGE}`;
          if (rows.length === 0) break;
          for (const u of rows) {
            counts.usage++;
            yield usageLine({ ...u, at: Number(u.at) });
          }
          afterUsage = [rows.at(-1)!.kind, rows.at(-1)!.id];
        }
        yield endLine(counts);
        return counts;
      } finally {
        await conn.unsafe('COMMIT').catch(() => {});
      }
    } finally {
      conn.release();
    }
  }

  private async *controlLines(conn: ReservedSql): AsyncGenerator<string> {
    const [doc] = await conn<{ body: string }[]>`SELECT body::text AS body FROM control_document WHERE id = 1`;
    if (doc) {
      const read = parseControl(JSON.parse(doc.body));
      if ('problem' in read) throw new Error(`control_document: ${read.problem}`);
      yield controlLine(read.doc);
    }
    let after = '0';
    for (;;) {
      const rows = await conn<
        { seq: string; body: string }[]
      >`SELECT seq::text AS seq, body::text AS body FROM audit_log WHERE seq > ${after}::bigint ORDER BY seq LIMIT ${USAGE_PAGE}`;
      if (rows.length === 0) return;
      for (const r of rows) yield auditLine(JSON.parse(r.body));
      after = rows.at(-1)!.seq;
    }
  }

  /** One transaction on the reserved connection (pg-import.ts): a clash or a bad line leaves the database as it was. */
  async import(source: LineSource, apps?: ReadonlyMap<string, string>): Promise<PortCounts> {
    // The schema first, as a server would create it at start (its own transactions, under its lock).
    await migrate(this.sql);
    const conn = await this.sql.reserve();
    try {
      await conn.unsafe('BEGIN');
      try {
        const counts = await importLines(conn, source, apps);
        await conn.unsafe('COMMIT');
        return counts;
      } catch (err) {
        await conn.unsafe('ROLLBACK').catch(() => {});
        throw err;
      }
    } finally {
      conn.release();
    }
  }
}
