// A conversation's row as PostgreSQL returns it (bigint columns as strings, JSON kept as text, D-40),
// and the record it is: one reading for the store and the export.
import type { Sql } from 'postgres';
import type { ConversationRecord } from '../types.ts';

export interface ConversationRow {
  id: string;
  app_id: string;
  seq: string;
  created_at: string;
  external_user_id: string | null;
  title: string | null;
  generated_title: string;
  metadata: string;
  deleted_at: string | null;
  message_count: number;
  history_bytes: string;
}

/** What `recordOf` reads: a row's other columns are the history's and the purge's, which a read does not serve. */
export const RECORD = 'id, app_id, seq, created_at, external_user_id, title, generated_title, metadata, deleted_at, message_count';
export const SELECT_ROW = `${RECORD}, history_bytes, item_count, last_item_at, purged_at`;

/**
 * Prepared on each connection the first time it runs there (postgres.js's `unsafe` is not, unlike its
 * tagged templates): parsed and planned once, and then one round trip (unprepared, it was two: the
 * statement described, then run).
 */
export const PREPARED = { prepare: true } as const;

/** A conversation's row with its history's fields, as the store reads it to change it (`SELECT_ROW`). */
export interface Row extends ConversationRow {
  item_count: number;
  last_item_at: string;
  purged_at: string | null;
}

export function recordOf(r: Omit<ConversationRow, 'history_bytes'>): ConversationRecord {
  return {
    id: r.id,
    app_id: r.app_id,
    seq: Number(r.seq),
    created_at: Number(r.created_at),
    external_user_id: r.external_user_id,
    title: r.title,
    generated_title: JSON.parse(r.generated_title) as Record<string, string>,
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    deleted_at: r.deleted_at === null ? null : Number(r.deleted_at),
    message_count: r.message_count,
  };
}

/** Errors of a connection that is lost, refused, or being shut down by the server (not of the statement). */
const LOST = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  // SQLSTATE: admin_shutdown (a terminated backend, a fast shutdown), crash_shutdown, cannot_connect_now.
  '57P01',
  '57P02',
  '57P03',
]);

/** D-91: the database is out of reach (restarting, a connection cut), as against a statement that failed. */
export function isConnectionLoss(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  // SQLSTATE class 08: connection exceptions.
  return typeof code === 'string' && (LOST.has(code) || /^08[0-9A-Z]{3}$/.test(code));
}

/**
 * One page of an app's conversations (D-12): `page` is its statement given the cursor's condition, `$1`
 * the app. After (or, `up` false, before) `cursor` when one is given, found
 * and paged in one statement; undefined when the cursor is not one of the app's conversations.
 */
export async function pageAfter<R extends { id: string | null }>(
  sql: Sql,
  page: (after: string) => string,
  params: (string | number)[],
  cursor: string | undefined,
  up: boolean,
): Promise<R[] | undefined> {
  if (cursor === undefined) return sql.unsafe<R[]>(page(''), params, PREPARED);
  const k = `$${params.length + 1}`;
  // No row: the cursor is not this app's; one row of nulls: an empty page.
  const found = await sql.unsafe<(R & { cursor: string })[]>(
    `SELECT k.id AS cursor, p.* FROM (SELECT seq, id FROM conversations WHERE id = ${k} AND app_id = $1) k
     LEFT JOIN LATERAL (${page(` AND (seq, id) ${up ? '>' : '<'} (k.seq, k.id)`)}) p ON true`,
    [...params, cursor],
    PREPARED,
  );
  if (found.length === 0) return undefined;
  return found.filter((r) => r.id !== null);
}
