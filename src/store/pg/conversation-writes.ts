// The conversation writes of the PostgreSQL store that are not an exchange's (exchange.ts): a create
// with its counters, the lock of a row for a change, and a change written with its app's counters.
// Each runs in the caller's transaction (pg-store.ts: its turn, its outbox events, its claim).
import type { TransactionSql } from 'postgres';
import type { ConversationChange, NewConversation } from '../types.ts';
import { SLOT } from './app-stats.ts';
import { rowChange, type VersionedRow } from './exchange.ts';
import { PREPARED, type Row, SELECT_ROW } from './rows.ts';

/**
 * Inserts a new conversation (`metadata` its JSON, `bytes` what it counts in the quota) and its
 * counters; resolves with the app's stored bytes, for D-27's check in the same transaction.
 * D-24: the user counts once however many creates bring it at once (app_users' key); the counters go
 * to this backend's slot (D-101). The last SELECT sees the app's bytes committed before. Without a
 * seq, the one the quota lock's statement took in this transaction (app-stats.ts, D-7). Prepared:
 * parsed and planned once per connection (docs/benchmarks.md).
 */
export async function insertConversation(tx: TransactionSql, record: NewConversation, metadata: string, bytes: number): Promise<number> {
  const [row] = await tx.unsafe<{ stored: string | null }[]>(
    `WITH fresh AS (INSERT INTO app_users (app_id, external_user_id) SELECT $2, $5::text WHERE $5::text IS NOT NULL
                    ON CONFLICT DO NOTHING RETURNING 1),
     made AS (INSERT INTO conversations (id, app_id, seq, created_at, external_user_id, title, generated_title, metadata, deleted_at, message_count)
              VALUES ($1, $2, coalesce($3::bigint, currval('conversation_seq')), $4, $5, $6, $7, $8, $9, $10)),
     stats AS (INSERT INTO app_stats AS s (app_id, slot, conversations, messages, users, bytes)
               VALUES ($2, ${SLOT}, 1, $10, (SELECT count(*) FROM fresh), $11)
               ON CONFLICT (app_id, slot) DO UPDATE SET conversations = s.conversations + 1, messages = s.messages + EXCLUDED.messages,
                 users = s.users + EXCLUDED.users, bytes = s.bytes + EXCLUDED.bytes)
     SELECT sum(bytes) AS stored FROM app_stats WHERE app_id = $2`,
    [
      record.id,
      record.app_id,
      record.seq ?? null,
      record.created_at,
      record.external_user_id,
      record.title,
      JSON.stringify(record.generated_title),
      metadata,
      record.deleted_at,
      record.message_count,
      bytes,
    ],
    PREPARED,
  );
  return Number(row?.stored ?? 0);
}

/** The row of `id`, locked until the transaction ends: another instance's change waits for this one. */
export async function lockRow(tx: TransactionSql, id: string): Promise<VersionedRow | undefined> {
  const [row] = await tx.unsafe<VersionedRow[]>(`SELECT ${SELECT_ROW}, xmin::text AS version FROM conversations WHERE id = $1 FOR UPDATE`, [
    id,
  ]);
  return row;
}

/** Writes the fields of `next` that differ from `current`; returns the row as it then is. */
export async function writeChange(tx: TransactionSql, current: Row, next: ConversationChange): Promise<Row> {
  const c = rowChange(current, next);
  // D-24, D-27: the app's counters change in the same transaction, in this backend's slot (D-101;
  // a rename leaves them alone).
  const [row] = await tx.unsafe<Row[]>(
    `WITH stats AS (INSERT INTO app_stats AS s (app_id, slot, messages, bytes, kept_bytes)
                    SELECT $12::text, ${SLOT}, $10::bigint, $11::bigint, $13::bigint WHERE $10::bigint <> 0 OR $11::bigint <> 0 OR $13::bigint <> 0
                    ON CONFLICT (app_id, slot) DO UPDATE SET messages = s.messages + EXCLUDED.messages,
                      bytes = s.bytes + EXCLUDED.bytes, kept_bytes = s.kept_bytes + EXCLUDED.kept_bytes)
     UPDATE conversations SET title = $2, deleted_at = $3, generated_title = $4, metadata = $5, message_count = $6,
       history_bytes = $7, item_count = $8, last_item_at = $9 WHERE id = $1 RETURNING ${SELECT_ROW}`,
    [
      current.id,
      c.title,
      c.deleted,
      c.generated,
      c.metadata,
      c.count,
      c.bytes,
      c.items,
      c.lastAt,
      c.messages,
      c.quota,
      current.app_id,
      c.kept,
    ],
  );
  return row!;
}
