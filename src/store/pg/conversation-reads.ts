// The conversation reads of the PostgreSQL store and its rename, each one prepared statement (D-42,
// revised: docs/postgres.md): a round trip is most of what a read costs here, on both sides of the
// socket (bench/log.md, "PostgreSQL: get, list and rename in one round trip each").
import type { Sql } from 'postgres';
import type { ItemT } from '../../contract/index.ts';
import type { ConversationPage, ConversationPageQuery, ConversationRecord } from '../types.ts';
import { type ConversationRow, pageAfter, PREPARED, RECORD, recordOf } from './rows.ts';

type RecordRow = Omit<ConversationRow, 'history_bytes'>;

export async function getConversation(sql: Sql, id: string): Promise<ConversationRecord | undefined> {
  const [row] = await sql.unsafe<RecordRow[]>(`SELECT ${RECORD} FROM conversations WHERE id = $1`, [id], PREPARED);
  return row && recordOf(row);
}

/**
 * A live conversation's record with its history's items (§4.3), or its record alone (`items`
 * undefined) when it is soft-deleted: one statement, so one round trip and one snapshot (an exchange
 * saved meanwhile is seen whole or not at all). The items come as one JSON array text, parsed once.
 */
export async function getWithItems(sql: Sql, id: string): Promise<{ record: ConversationRecord; items?: ItemT[] } | undefined> {
  const [row] = await sql.unsafe<(RecordRow & { items: string | null })[]>(
    `SELECT ${RECORD}, CASE WHEN deleted_at IS NULL
       THEN (SELECT '[' || coalesce(string_agg(body, ',' ORDER BY pos), '') || ']' FROM items WHERE conversation_id = $1) END AS items
     FROM conversations WHERE id = $1`,
    [id],
    PREPARED,
  );
  if (!row) return undefined;
  return { record: recordOf(row), items: row.items === null ? undefined : (JSON.parse(row.items) as ItemT[]) };
}

/**
 * One page of an app's live conversations (D-12): the keyset page of `rows.ts`'s `pageAfter`. The
 * page's size is in the statement's text, not a parameter: with `LIMIT $n` PostgreSQL estimates a
 * tenth of the rows, finds the generic plan dearer than a custom one and plans every execution again
 * (0.13–0.15 ms, three times the page's execution); with the number it keeps the generic plan. At
 * most 100 sizes (D-12's bound), so at most 800 statements per connection, a few in practice.
 */
export async function listConversations(sql: Sql, appId: string, q: ConversationPageQuery): Promise<ConversationPage | undefined> {
  // Keyset pagination (D-12): one page and one more row (has_more), read by index on (app_id, seq,
  // id), however long the list. A soft-deleted cursor keeps its row, so it keeps its place (D-11).
  const up = q.direction === 'up';
  const dir = up ? 'ASC' : 'DESC';
  const rows = Math.trunc(q.limit) + 1;
  if (!(rows >= 2 && rows <= 101)) throw new RangeError(`listConversations: a page of ${q.limit}`);
  const user = q.externalUserId === undefined ? '' : ' AND external_user_id = $2';
  const params: string[] = [appId];
  if (q.externalUserId !== undefined) params.push(q.externalUserId);
  const page = (after: string) =>
    `SELECT ${RECORD} FROM conversations WHERE app_id = $1${user} AND deleted_at IS NULL${after} ORDER BY seq ${dir}, id ${dir} LIMIT ${rows}`;
  const found = await pageAfter<RecordRow>(sql, page, params, q.cursor, up);
  if (found === undefined) return undefined;
  return { records: found.slice(0, q.limit).map(recordOf), hasMore: found.length > q.limit };
}

/**
 * D-42 (revised): a rename of a live conversation of `appId` as one statement, which locks the row
 * as `SELECT … FOR UPDATE` would and checks it as it is then (a delete committed meanwhile makes it
 * match nothing); it commits alone, durably. A title counts in none of the app's counters (D-24,
 * D-27), so nothing else changes. Undefined when there is no such live conversation.
 */
export async function rename(sql: Sql, appId: string, id: string, title: string | null): Promise<ConversationRecord | undefined> {
  const [row] = await sql.unsafe<RecordRow[]>(
    `UPDATE conversations SET title = $3 WHERE id = $1 AND app_id = $2 AND deleted_at IS NULL RETURNING ${RECORD}`,
    [id, appId, title],
    PREPARED,
  );
  return row && recordOf(row);
}
