// `parley data export|import` on PostgreSQL (docs/data.md), in SQL on the tables (src/store/pg/migrate.ts),
// while Parley may serve the database: an export reads one REPEATABLE READ snapshot, page by page;
// an import is one transaction, so a clash or a bad line anywhere leaves the database as it was.
import postgres, { type ReservedSql, type Sql } from 'postgres';
import { recountAppStats } from '../pg/pg-store.ts';
import type { ControlDocT } from '../../core/control.ts';
import { CONTROL_CHANNEL } from '../pg/control.ts';
import { migrate, migrationStatus } from '../pg/migrate.ts';
import { recordOf, type ConversationRow } from '../pg/rows.ts';
import {
  ExportReader,
  ImportError,
  conversationLine,
  endLine,
  headerLine,
  noCounts,
  usageLine,
  type DataPort,
  type ImportEntry,
  type LineSource,
  type PortCounts,
} from './format.ts';
import { auditLine, controlLine, importedVersion, parseControl, replaceableProblem } from './control-lines.ts';

/** Conversations read per page of the export, and history bytes fetched per query. */
const PAGE = 500;
const HISTORY_CHUNK_BYTES = 16 * 2 ** 20;
const USAGE_PAGE = 5_000;
/** Conversations per INSERT of an import (13 parameters each; PostgreSQL allows 65,535 per statement). */
const INSERT_BATCH = 500;
/** Items or responses per INSERT (3 or 4 parameters each). */
const ROW_BATCH = 5_000;

/** The bytes a history counts (D-29), as the PostgreSQL store counts an appended one: each JSON line. */
const lineBytes = (bodies: readonly string[]) => bodies.reduce((n, b) => n + Buffer.byteLength(b) + 1, 0);

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

  async import(source: LineSource, apps?: ReadonlyMap<string, string>): Promise<PortCounts> {
    // The schema first, as a server would create it at start (its own transactions, under its lock).
    await migrate(this.sql);
    const conn = await this.sql.reserve();
    try {
      await conn.unsafe('BEGIN');
      try {
        const counts = await this.load(conn, source, apps);
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

  private async load(tx: ReservedSql, source: LineSource, target?: ReadonlyMap<string, string>): Promise<PortCounts> {
    // A sequence of migration 4 numbers conversations when it exists; imports come after its last value.
    const [{ seq }] = await tx<[{ seq: string | null }]>`SELECT to_regclass('conversation_seq')::text AS seq`;
    const [{ base }] = seq
      ? await tx<
          [{ base: string }]
        >`SELECT greatest((SELECT coalesce(max(seq), 0) FROM conversations), (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM conversation_seq)) AS base`
      : await tx<[{ base: string }]>`SELECT coalesce(max(seq), 0) AS base FROM conversations`;
    const offset = Number(base);
    const reader = new ExportReader(target);
    let batch: Extract<ImportEntry, { type: 'conversation' }>[] = [];
    let usage: Extract<ImportEntry, { type: 'usage' }>[] = [];
    const flush = async () => {
      try {
        if (batch.length > 0) await this.insertConversations(tx, batch, offset);
        if (usage.length > 0) await this.insertUsage(tx, usage);
      } catch (err) {
        // D-94: the bounds keep every value within its column; should the database refuse one still,
        // the refusal names the lines of the batch it was in, not only the database's words.
        if (err instanceof ImportError) throw err;
        const lines = [...batch, ...usage].map((e) => e.line);
        throw new ImportError(
          Math.min(...lines),
          `the database refused a line from here to line ${Math.max(...lines)}: ${(err as Error).message}`,
        );
      }
      batch = [];
      usage = [];
    };
    let pending = 0;
    const apps = new Set<string>();
    let doc: ControlDocT | undefined;
    for await (const raw of source()) {
      const e = reader.read(raw);
      if (e?.type === 'control') {
        const actions = await tx<{ action: string; n: string }[]>`SELECT action, count(*)::text AS n FROM audit_log GROUP BY action`;
        const problem = replaceableProblem(
          actions.map((a) => ({ action: a.action, n: Number(a.n) })),
          'the database',
        );
        if (problem) throw new ImportError(e.line, problem);
        doc = e.doc;
      } else if (e?.type === 'audit') await this.insertAudit(tx, e);
      else if (e?.type === 'conversation') {
        batch.push(e);
        apps.add(e.record.app_id);
        pending += raw.length;
      } else if (e?.type === 'usage') usage.push(e);
      if (batch.length >= INSERT_BATCH || usage.length >= ROW_BATCH || pending >= HISTORY_CHUNK_BYTES) {
        await flush();
        pending = 0;
      }
    }
    await flush();
    const counts = reader.finish();
    if (seq && reader.maxSeq > 0)
      await tx`SELECT setval('conversation_seq', greatest(${offset + reader.maxSeq}, (SELECT last_value FROM conversation_seq)))`;
    // D-24 and D-27 read the apps' stats rows, which rows written by SQL do not keep by themselves.
    if (apps.size > 0 && seq) await recountAppStats(tx as unknown as Sql, [...apps]);
    if (doc) await this.replaceControl(tx, doc);
    return counts;
  }

  /** The export's document replaces the database's, its version past both; running instances reload it (D-78). */
  private async replaceControl(tx: ReservedSql, doc: ControlDocT): Promise<void> {
    const [row] = await tx<{ body: string }[]>`SELECT body::text AS body FROM control_document WHERE id = 1 FOR UPDATE`;
    const current = row ? parseControl(JSON.parse(row.body)) : undefined;
    const next = { ...doc, version: importedVersion(doc, current && 'doc' in current ? current.doc : undefined) };
    await tx`INSERT INTO control_document (id, version, body) VALUES (1, ${next.version}, ${JSON.stringify(next)}::text::jsonb)
             ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, body = EXCLUDED.body`;
    await tx`SELECT pg_notify(${CONTROL_CHANNEL}, ${String(next.version)})`;
  }

  /** One audit entry, in the file's order (the log's `seq` follows it); an id the database has is a clash. */
  private async insertAudit(tx: ReservedSql, e: Extract<ImportEntry, { type: 'audit' }>): Promise<void> {
    const a = e.entry;
    const made = await tx`INSERT INTO audit_log (id, team_id, action, created_at, body)
                          VALUES (${a.id}, ${a.team_id}, ${a.action}, ${a.created_at}, ${JSON.stringify(a)}::text::jsonb)
                          ON CONFLICT (id) DO NOTHING RETURNING id`;
    if (made.length === 0) throw new ImportError(e.line, `audit entry ${a.id} already exists in the database; nothing was imported`);
  }

  private async insertConversations(
    tx: ReservedSql,
    batch: Extract<ImportEntry, { type: 'conversation' }>[],
    offset: number,
  ): Promise<void> {
    const itemRows: { conversation_id: string; pos: number; body: string }[] = [];
    const responseRows: { conversation_id: string; pos: number; id: string; body: string }[] = [];
    const rows = batch.map(({ record: r, items, responses }) => {
      const itemBodies = items.map((i) => JSON.stringify(i));
      const responseBodies = responses.map((x) => JSON.stringify(x));
      for (const [pos, body] of itemBodies.entries()) itemRows.push({ conversation_id: r.id, pos, body });
      for (const [pos, body] of responseBodies.entries()) responseRows.push({ conversation_id: r.id, pos, id: responses[pos]!.id, body });
      return {
        id: r.id,
        app_id: r.app_id,
        seq: offset + r.seq,
        created_at: r.created_at,
        external_user_id: r.external_user_id,
        title: r.title,
        generated_title: JSON.stringify(r.generated_title),
        metadata: JSON.stringify(r.metadata),
        deleted_at: r.deleted_at,
        // D-73: a deleted conversation imported with its history keeps it; without one it reads as purged.
        purged_at: r.deleted_at !== null && items.length === 0 && responses.length === 0 ? r.deleted_at : null,
        message_count: r.message_count,
        history_bytes: lineBytes(itemBodies) + lineBytes(responseBodies),
        item_count: items.length,
        last_item_at: items.at(-1)?.created_at ?? 0,
      };
    });
    const columns = [
      'id',
      'app_id',
      'seq',
      'created_at',
      'external_user_id',
      'title',
      'generated_title',
      'metadata',
      'deleted_at',
      'purged_at',
      'message_count',
      'history_bytes',
      'item_count',
      'last_item_at',
    ] as const;
    const inserted = await tx<{ id: string }[]>`INSERT INTO conversations ${tx(rows, ...columns)} ON CONFLICT (id) DO NOTHING RETURNING id`;
    if (inserted.length < rows.length) {
      const got = new Set(inserted.map((r) => r.id));
      const clash = batch.find((e) => !got.has(e.record.id))!;
      throw new ImportError(clash.line, `conversation ${clash.record.id} already exists in the database; nothing was imported`);
    }
    for (let i = 0; i < itemRows.length; i += ROW_BATCH)
      await tx`INSERT INTO items ${tx(itemRows.slice(i, i + ROW_BATCH), 'conversation_id', 'pos', 'body')}`;
    for (let i = 0; i < responseRows.length; i += ROW_BATCH)
      await tx`INSERT INTO responses ${tx(responseRows.slice(i, i + ROW_BATCH), 'conversation_id', 'pos', 'id', 'body')}`;
  }

  private async insertUsage(tx: ReservedSql, entries: Extract<ImportEntry, { type: 'usage' }>[]): Promise<void> {
    const rows: Record<string, string | number>[] = entries.map((e) => ({ ...e.usage }));
    const inserted = await tx<
      { kind: string; id: string }[]
    >`INSERT INTO usage_entries ${tx(rows, 'app_id', 'kind', 'id', 'at', 'input_tokens', 'output_tokens')} ON CONFLICT (kind, id) DO NOTHING RETURNING kind, id`;
    if (inserted.length < rows.length) {
      const got = new Set(inserted.map((r) => `${r.kind} ${r.id}`));
      const clash = entries.find((e) => !got.has(`${e.usage.kind} ${e.usage.id}`))!;
      throw new ImportError(
        clash.line,
        `usage of ${clash.usage.kind} ${clash.usage.id} already exists in the database; nothing was imported`,
      );
    }
  }
}
