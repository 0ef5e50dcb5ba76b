// A reply's reads and its exchange's save on PostgreSQL in few statements (D-104, docs/postgres.md):
// what a reply needs before it starts (its history, the record, the app's stored bytes) is one read,
// and its exchange (items, response, record, counters, claim and usage) one statement written onto the
// row as that read found it, if it is still that version (`xmin`). A change that landed in between
// (a rename, a delete, an exchange saved by another instance that took the reply over, D-38) makes it
// write nothing but its usage: the save then locks the row and writes onto it as it is (D-42).
import type { Sql, TransactionSql } from 'postgres';
import type { ItemT } from '../../contract/index.ts';
import type { IdempotencyClaim } from '../../core/claims.ts';
import type { UsageEntry } from '../shared.ts';
import type { ConversationChange, ReplyStart, ResponseRecord } from '../types.ts';
import { SLOT } from './app-stats.ts';
import { claimUpsert } from './claims.ts';
import { recordOf, type Row, SELECT_ROW } from './rows.ts';
import { insertUsage } from './usage.ts';

/** A row with its version: `xmin`, the transaction that wrote it (an UPDATE writes a new one, even of the same values). */
export interface VersionedRow extends Row {
  version: string;
}

/** D-27: what a conversation counts in its app's quota: its record's overhead, its metadata and its history; nothing once deleted. */
export function quotaBytes(deletedAt: unknown, metadata: string, historyBytes: number): number {
  return deletedAt !== null ? 0 : 256 + Buffer.byteLength(metadata) + historyBytes;
}

/** D-73: what a deleted conversation keeps until its purge, counted as the quota counts a live one. */
export function keptBytes(deletedAt: unknown, purgedAt: unknown, metadata: string, historyBytes: number): number {
  return deletedAt === null || purgedAt !== null ? 0 : 256 + Buffer.byteLength(metadata) + historyBytes;
}

/** What a history append adds to the row's history fields. */
export interface HistoryAdded {
  bytes: number;
  items: number;
  lastAt: number;
}

/** The row's new fields from `current` and a change (with what it appends to the history), and what its app's counters gain. */
export function rowChange(current: Row, next: ConversationChange, history?: HistoryAdded) {
  const was = recordOf(current);
  const title = next.title !== undefined ? next.title : was.title;
  const deleted = next.deleted_at !== undefined ? next.deleted_at : was.deleted_at;
  const generated = next.generated_title !== undefined ? JSON.stringify(next.generated_title) : current.generated_title;
  const metadata = Object.hasOwn(next, 'metadata') && next.metadata !== undefined ? JSON.stringify(next.metadata) : current.metadata;
  const count = next.message_count ?? was.message_count;
  // D-73 (revising D-27): a delete keeps the history, outside the quota, until it is purged (admin-conversations.ts).
  const bytes = Number(current.history_bytes) + (history?.bytes ?? 0);
  const items = current.item_count + (history?.items ?? 0);
  const lastAt = history ? history.lastAt : Number(current.last_item_at);
  // D-24, D-27: the app's counters change with the row, in this backend's slot (D-101).
  const messages = count - was.message_count;
  const quota = quotaBytes(deleted, metadata, bytes) - quotaBytes(was.deleted_at, current.metadata, Number(current.history_bytes));
  const kept =
    keptBytes(deleted, current.purged_at, metadata, bytes) -
    keptBytes(was.deleted_at, current.purged_at, current.metadata, Number(current.history_bytes));
  return { title, deleted, generated, metadata, count, bytes, items, lastAt, messages, quota, kept };
}

/**
 * D-104: a reply's start in one statement (one snapshot): the history, its size, the row with its
 * version, and the app's stored bytes (D-27's check before the run).
 */
export async function readForReply(sql: Sql, id: string, appId: string): Promise<ReplyStart> {
  const rows = await sql<{ k: number; body: string }[]>`
    SELECT 0 AS k, pos, body FROM items WHERE conversation_id = ${id}
    UNION ALL SELECT 1, pos, body FROM responses WHERE conversation_id = ${id}
    UNION ALL SELECT 2, 0, row_to_json(c)::text
      FROM (SELECT ${sql.unsafe(SELECT_ROW)}, xmin::text AS version FROM conversations WHERE id = ${id}) c
    UNION ALL SELECT 3, 0, COALESCE(sum(bytes), 0)::text FROM app_stats WHERE app_id = ${appId}
    ORDER BY k, pos`;
  const out: ReplyStart = { items: [], responses: [], bytes: 0, storedBytes: 0, base: undefined };
  for (const r of rows) {
    if (r.k === 0) out.items.push(JSON.parse(r.body) as ItemT);
    else if (r.k === 1) out.responses.push(JSON.parse(r.body) as ResponseRecord);
    else if (r.k === 3) out.storedBytes = Number(r.body);
    else {
      const row = JSON.parse(r.body) as VersionedRow;
      out.bytes = Number(row.history_bytes);
      out.base = { record: recordOf(row), mark: row };
    }
  }
  return out;
}

/** What an exchange writes: its history, the record's change, and what is kept with it. */
export interface ExchangeWrite {
  items: ItemT[];
  response?: ResponseRecord;
  change: ConversationChange;
  claim?: IdempotencyClaim;
  /** When the claim is kept (ms). */
  at: number;
  usage?: UsageEntry;
  /** D-38: write nothing if the response is already saved (another instance took it over and saved it). */
  once: boolean;
}

/**
 * Writes an exchange onto `base` in one statement: the row's new fields, its items and response after
 * the history's last ones, the app's counters (D-24, D-27, D-101), the claim and the usage row. It
 * writes only if the row is still at `base`'s version (and, `once`, the response not yet saved), and
 * returns the row as it then is; otherwise it writes the usage row alone and returns undefined. The
 * statement's snapshot is taken after any lock the caller holds: it sees every change committed before.
 */
export async function writeExchange(sql: Sql | TransactionSql, base: VersionedRow, w: ExchangeWrite): Promise<Row | undefined> {
  // §4.3: the history is sorted chronologically. An exchange is stamped when its request started but
  // lands when it is saved, so one that started earlier may land later: it takes the last item's time.
  let last = Number(base.last_item_at);
  for (const item of w.items) last = item.created_at = Math.max(item.created_at, last);
  const bodies = w.items.map((i) => JSON.stringify(i));
  const body = w.response ? JSON.stringify(w.response) : null;
  let bytes = body === null ? 0 : Buffer.byteLength(body) + 1;
  for (const b of bodies) bytes += Buffer.byteLength(b) + 1;
  const c = rowChange(base, w.change, { bytes, items: w.items.length, lastAt: last });
  const id = base.id;
  const saved = w.once && w.response ? w.response.id : null;
  const claim = w.claim ? sql`, k AS (${claimUpsert(sql, w.claim, w.at, sql`FROM cur`)})` : sql``;
  const usage = w.usage ? sql`, u AS (${insertUsage(sql, w.usage)})` : sql``;
  const [row] = await sql<Row[]>`
    WITH cur AS (UPDATE conversations SET title = ${c.title}::text, deleted_at = ${c.deleted}::bigint,
                   generated_title = ${c.generated}::text, metadata = ${c.metadata}::text, message_count = ${c.count}::int,
                   history_bytes = ${c.bytes}::bigint, item_count = ${c.items}::int, last_item_at = ${c.lastAt}::bigint
                 WHERE id = ${id} AND xmin = ${base.version}::xid
                   AND NOT EXISTS (SELECT 1 FROM responses WHERE conversation_id = ${id} AND id = ${saved}::text)
                 RETURNING ${sql.unsafe(SELECT_ROW)}),
    i AS (INSERT INTO items (conversation_id, pos, body)
          SELECT cur.id, ${base.item_count}::int + b.n::int - 1, b.body
          FROM cur, unnest(${sql.array(bodies)}::text[]) WITH ORDINALITY AS b(body, n)),
    r AS (INSERT INTO responses (conversation_id, pos, id, body)
          SELECT cur.id, (SELECT count(*) FROM responses WHERE conversation_id = ${id}), ${w.response?.id ?? null}::text, ${body}::text
          FROM cur WHERE ${body}::text IS NOT NULL),
    s AS (INSERT INTO app_stats AS s (app_id, slot, messages, bytes, kept_bytes)
          SELECT cur.app_id, ${sql.unsafe(SLOT)}, ${c.messages}::bigint, ${c.quota}::bigint, ${c.kept}::bigint
          FROM cur WHERE ${c.messages}::bigint <> 0 OR ${c.quota}::bigint <> 0 OR ${c.kept}::bigint <> 0
          ON CONFLICT (app_id, slot) DO UPDATE SET messages = s.messages + EXCLUDED.messages,
            bytes = s.bytes + EXCLUDED.bytes, kept_bytes = s.kept_bytes + EXCLUDED.kept_bytes)
    ${claim} ${usage}
    SELECT * FROM cur`;
  return row;
}
