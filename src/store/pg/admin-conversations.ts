// D-73 on PostgreSQL: an app's conversations as its team sees them (deleted ones too, by keyset pages
// as the list of §4.2), restore, and the purge of deleted histories: each a statement or a transaction
// that locks the rows it changes, so that instances sweeping at once purge each conversation once.
import type { Sql } from 'postgres';
import type { KeyedQueue } from '../../core/keyed-queue.ts';
import type { AdminConversations, AdminPageQuery, AdminRecord, ChangeEvents, RestoreResult } from '../types.ts';
import { type ConversationRow, pageAfter, recordOf } from './rows.ts';
import { SLOT } from './app-stats.ts';
import type { PgOutbox } from './webhooks.ts';

/** D-84: where a restore's event goes (the store's outbox, in the restore's transaction), read when it happens. */
export interface RestoreEvents {
  outbox(): Pick<PgOutbox, 'begin'>;
  changeEvents(): ChangeEvents;
}

interface Row extends ConversationRow {
  purged_at: string | null;
}

const COLUMNS =
  'id, app_id, seq, created_at, external_user_id, title, generated_title, metadata, deleted_at, message_count, history_bytes, purged_at';
/** What a kept conversation holds, as D-27 counts a live one (its record's overhead, metadata, history). */
const KEPT_BYTES = '256 + octet_length(metadata) + history_bytes';
/** Purged per statement by the sweep: a transaction stays short however many are due. */
const BATCH = 500;

const view = (r: Row): AdminRecord => ({ record: recordOf(r), purgedAt: r.purged_at === null ? null : Number(r.purged_at) });

export class PgAdminConversations implements AdminConversations {
  constructor(
    private readonly sql: Sql,
    /** The store's turns per conversation (a restore waits for this instance's other changes of it). */
    private readonly turns: KeyedQueue,
    private readonly events: RestoreEvents,
  ) {}

  async page(appId: string, q: AdminPageQuery): Promise<{ records: AdminRecord[]; hasMore: boolean } | undefined> {
    const up = q.direction === 'up';
    const dir = up ? 'ASC' : 'DESC';
    const params: (string | number)[] = [appId, q.limit + 1];
    let where = '';
    if (q.deleted !== 'include') where += q.deleted === 'only' ? ' AND deleted_at IS NOT NULL' : ' AND deleted_at IS NULL';
    if (q.externalUserId !== undefined) {
      params.push(q.externalUserId);
      where += ` AND external_user_id = $${params.length}`;
    }
    if (q.text !== undefined) {
      // strpos, not LIKE: the text is matched as it is, `%` and `_` included.
      params.push(q.text.toLowerCase());
      const k = `$${params.length}`;
      // A generated title (D-158) is matched by its values, each locale's, never by its keys.
      where +=
        ` AND (strpos(lower(title), ${k}) > 0 OR strpos(lower(external_user_id), ${k}) > 0` +
        ` OR EXISTS (SELECT 1 FROM json_each_text(generated_title::json) g WHERE strpos(lower(g.value), ${k}) > 0))`;
    }
    const page = (after: string) =>
      `SELECT ${COLUMNS} FROM conversations WHERE app_id = $1${where}${after} ORDER BY seq ${dir}, id ${dir} LIMIT $2`;
    const rows = await pageAfter<Row>(this.sql, page, params, q.cursor, up);
    if (rows === undefined) return undefined;
    return { records: rows.slice(0, q.limit).map(view), hasMore: rows.length > q.limit };
  }

  async get(id: string): Promise<AdminRecord | undefined> {
    const [row] = await this.sql.unsafe<Row[]>(`SELECT ${COLUMNS} FROM conversations WHERE id = $1`, [id]);
    return row && view(row);
  }

  restore(id: string): Promise<RestoreResult> {
    return this.turns.run(id, async (): Promise<RestoreResult> => {
      // One statement: the row is locked by its update, and its app's stored bytes (D-27) count it again;
      // its event (D-84) is written in the same transaction.
      const row = await this.events.outbox().begin(this.sql, async (tx, emit) => {
        const [r] = await tx.unsafe<Row[]>(
          `WITH c AS (UPDATE conversations SET deleted_at = NULL WHERE id = $1 AND deleted_at IS NOT NULL AND purged_at IS NULL
                    RETURNING ${COLUMNS}, ${KEPT_BYTES} AS bytes),
              s AS (INSERT INTO app_stats AS s (app_id, slot, bytes, kept_bytes) SELECT c.app_id, ${SLOT}, c.bytes, -c.bytes FROM c
                    ON CONFLICT (app_id, slot) DO UPDATE SET bytes = s.bytes + EXCLUDED.bytes, kept_bytes = s.kept_bytes + EXCLUDED.kept_bytes)
         SELECT ${COLUMNS} FROM c`,
          [id],
        );
        const changes = this.events.changeEvents();
        if (r && changes.wants(r.app_id)) await emit(changes.restored(recordOf(r)));
        return r;
      });
      if (row) return { restored: view(row) };
      const now = await this.get(id);
      return { refused: !now ? 'missing' : now.record.deleted_at === null ? 'live' : 'purged' };
    });
  }

  async purgeDeleted(deletedBefore: number, now: number): Promise<number> {
    let n = 0;
    for (;;) {
      const ids = await this.purge(
        `SELECT id FROM conversations WHERE deleted_at IS NOT NULL AND purged_at IS NULL AND deleted_at <= $1
         ORDER BY deleted_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED`,
        [deletedBefore],
        now,
      );
      n += ids;
      if (ids < BATCH) return n;
    }
  }

  async trimKept(appId: string, maxBytes: number, now: number): Promise<number> {
    // The app's stats row says at once whether there is anything to do (the common case of a delete).
    if ((await this.keptBytes(appId)) <= maxBytes) return 0;
    // Newest deletion first: what fits within the bound stays, the older rest is purged.
    const rows = await this.sql.unsafe<{ id: string; bytes: string }[]>(
      `SELECT id, ${KEPT_BYTES} AS bytes FROM conversations WHERE app_id = $1 AND deleted_at IS NOT NULL AND purged_at IS NULL
       ORDER BY deleted_at DESC, seq DESC`,
      [appId],
    );
    let total = 0;
    const over: string[] = [];
    for (const r of rows) {
      total += Number(r.bytes);
      if (total > maxBytes) over.push(r.id);
    }
    if (over.length === 0) return 0;
    return this.purge(
      'SELECT id FROM conversations WHERE id = ANY($1) AND deleted_at IS NOT NULL AND purged_at IS NULL FOR UPDATE SKIP LOCKED',
      [over],
      now,
    );
  }

  async keptBytes(appId: string): Promise<number> {
    const [row] = await this.sql<{ bytes: string | null }[]>`SELECT sum(kept_bytes) AS bytes FROM app_stats WHERE app_id = ${appId}`;
    return Number(row?.bytes ?? 0);
  }

  /**
   * Purges the conversations `select` locks (skipping those another instance holds): history and
   * metadata, and their apps' kept bytes, in one statement.
   */
  private async purge(select: string, params: unknown[], now: number): Promise<number> {
    const at = `$${params.length + 1}`;
    const rows = await this.sql.unsafe<{ id: string }[]>(
      `WITH v AS (${select}),
            b AS (SELECT app_id, sum(${KEPT_BYTES}) AS bytes FROM conversations WHERE id IN (SELECT id FROM v) GROUP BY app_id),
            s AS (INSERT INTO app_stats AS s (app_id, slot, kept_bytes) SELECT b.app_id, ${SLOT}, -b.bytes FROM b
                  ON CONFLICT (app_id, slot) DO UPDATE SET kept_bytes = s.kept_bytes + EXCLUDED.kept_bytes),
            i AS (DELETE FROM items WHERE conversation_id IN (SELECT id FROM v)),
            r AS (DELETE FROM responses WHERE conversation_id IN (SELECT id FROM v))
       UPDATE conversations SET purged_at = ${at}, metadata = '{}', history_bytes = 0, item_count = 0
       WHERE id IN (SELECT id FROM v) RETURNING id`,
      [...params, now] as never[],
    );
    return rows.length;
  }
}
