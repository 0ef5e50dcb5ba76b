// The PostgreSQL Store (docs/postgres.md, D-40…D-44). Every change is a transaction on the database,
// which is the truth: a change of a conversation locks its row (`SELECT … FOR UPDATE`), derives the
// new record from the row as it is then, and writes it with its items, response and Idempotency-Key
// claim at once. No connection is held while a model runs: an exchange's transaction begins once the
// response is produced and lasts one round of writes.
// The Store interface reads records synchronously (getConversation, conversationsOf, counters), so
// this first step keeps a mirror of the records in memory, loaded at open and updated after each
// commit: exact on one instance; several instances need the reads to go to the database (docs/postgres.md).
import postgres, { type ReservedSql, type Sql, type TransactionSql } from 'postgres';
import type { ItemT, UnsequencedEvent } from '../contract/index.ts';
import { CLAIM_TTL_MS, ClaimLog } from './claims.ts';
import { migrate } from './pg/migrate.ts';
import { PgResponses } from './pg/responses.ts';
import { RESPONSE_EVENTS_TTL_MS } from './response-log.ts';
import {
  StoreError,
  type AppCounters,
  type ConversationChange,
  type ConversationFile,
  type ConversationRecord,
  type IdempotencyClaim,
  type KeptClaim,
  type LiveResponseStart,
  type ResponseRecord,
  type ResponseSave,
  type ResponseTrace,
  type Store,
} from './types.ts';

export interface PgStoreOptions {
  /** postgres://user:password@host:port/database */
  url: string;
  /** Connections in the pool (default 10). */
  max?: number;
  /** D-36: how long a response's events stay resumable after its end. */
  responseEventsTtlMs?: number;
  /**
   * Refuse to start while another Parley serves the database (default true): the in-memory mirror
   * of records is exact for one instance only (docs/postgres.md). Tests of the database layer across
   * instances turn it off.
   */
  exclusive?: boolean;
  /** How long start-up waits for that lock before refusing (ms, default 5 s; tests shorten it). */
  lockWaitMs?: number;
  warn?: (message: string) => void;
}

interface Row {
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
  item_count: number;
  last_item_at: string;
}

/** What the mirror keeps of a conversation: its record and the bytes the quota counts (D-27). */
interface Held {
  record: ConversationRecord;
  bytes: number;
}

function fromRow(r: Row): Held {
  const record: ConversationRecord = {
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
  // As the file store counts it: a record's overhead, its metadata and its history; nothing once deleted.
  const bytes = record.deleted_at !== null ? 0 : 256 + r.metadata.length + Number(r.history_bytes);
  return { record, bytes };
}

class AppIndex {
  /** Creation order (seq, then id), soft-deleted included: their ids stay valid cursors (D-11). */
  readonly all: ConversationRecord[] = [];
  readonly byUser = new Map<string, ConversationRecord[]>();
  readonly counters: AppCounters = { conversations: 0, messages: 0, users: 0 };
  bytes = 0;
}

const before = (a: ConversationRecord, b: ConversationRecord) => a.seq < b.seq || (a.seq === b.seq && a.id < b.id);

/** Puts `record` in `list` in creation order, replacing the version of the same id. */
function upsert(list: ConversationRecord[], record: ConversationRecord): void {
  let lo = 0;
  let hi = list.length;
  if (hi > 0 && before(list[hi - 1]!, record)) lo = hi;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(list[mid]!, record)) lo = mid + 1;
    else hi = mid;
  }
  if (list[lo]?.id === record.id) list[lo] = record;
  else list.splice(lo, 0, record);
}

/** The advisory lock of the serving instance (see PgStoreOptions.exclusive); apart from the migrations'. */
const INSTANCE_LOCK = 0x7061726c6501;

/** A database URL without its password, to name it in an error. */
function redacted(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'the database';
  }
}

const SELECT_ROW = 'id, app_id, seq, created_at, external_user_id, title, generated_title, metadata, deleted_at, message_count, history_bytes, item_count, last_item_at';

export class PgStore implements Store {
  readonly sql: Sql;
  private readonly held = new Map<string, Held>();
  private readonly apps = new Map<string, AppIndex>();
  private readonly claims = new ClaimLog();
  private seq = 0;
  /** The last queued change of each conversation (as FileStore's turns): one connection waits, not many. */
  private readonly turns = new Map<string, Promise<unknown>>();
  private readonly responses: PgResponses;
  /** The connection that holds the instance lock for as long as the store is open. */
  private holder: ReservedSql | undefined;

  constructor(private readonly opts: PgStoreOptions) {
    this.sql = postgres(opts.url, {
      max: opts.max ?? 10,
      onnotice: () => {},
      // bigint columns come back as strings: ids of time (ms) fit in a double, converted where read.
    });
    this.responses = new PgResponses(this.sql, opts.responseEventsTtlMs ?? RESPONSE_EVENTS_TTL_MS);
  }

  async open(): Promise<void> {
    try {
      if (this.opts.exclusive ?? true) {
        // Held by a session: it goes with the connection, so a killed instance frees it at once.
        this.holder = await this.sql.reserve();
        // A predecessor killed a moment ago holds it until the server notices its connection is gone.
        await this.holder.unsafe(`SET lock_timeout = ${Math.max(1, Math.round(this.opts.lockWaitMs ?? 5_000))}`);
        try {
          await this.holder`SELECT pg_advisory_lock(${INSTANCE_LOCK})`;
        } catch (err) {
          if ((err as { code?: string }).code !== '55P03') throw err;
          throw new StoreError(redacted(this.opts.url), 'another Parley serves this database; several instances on one database are not supported yet (docs/postgres.md)');
        }
      }
      await migrate(this.sql);
      const rows = await this.sql.unsafe<Row[]>(`SELECT ${SELECT_ROW} FROM conversations ORDER BY app_id, seq, id`);
      for (const r of rows) this.index(fromRow(r));
      const since = Date.now() - CLAIM_TTL_MS;
      const kept = await this.sql<{ key: string; fingerprint: string; at: string }[]>`SELECT key, fingerprint, at FROM idempotency_claims WHERE at >= ${since} ORDER BY at`;
      for (const c of kept) this.claims.add({ key: c.key, fingerprint: c.fingerprint, at: Number(c.at) });
      await this.responses.open();
    } catch (err) {
      this.holder?.release();
      await this.sql.end({ timeout: 1 }).catch(() => {});
      throw err;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.turns.values()]);
    await this.responses.close();
    this.holder?.release();
    await this.sql.end({ timeout: 5 });
  }

  /** D-7: creation order; across instances, ties are broken by id (docs/postgres.md). */
  nextSeq(): number {
    return ++this.seq;
  }

  getConversation(id: string): ConversationRecord | undefined {
    return this.held.get(id)?.record;
  }

  conversationsOf(appId: string, externalUserId?: string): readonly ConversationRecord[] {
    const app = this.apps.get(appId);
    if (!app) return [];
    return externalUserId === undefined ? app.all : (app.byUser.get(externalUserId) ?? []);
  }

  appCounters(appId: string): AppCounters {
    return { ...(this.apps.get(appId)?.counters ?? { conversations: 0, messages: 0, users: 0 }) };
  }

  storedBytes(appId: string): number {
    return this.apps.get(appId)?.bytes ?? 0;
  }

  idempotencyClaims(since: number): KeptClaim[] {
    return this.claims.since(since);
  }

  async putConversation(record: ConversationRecord, claim?: IdempotencyClaim): Promise<void> {
    const at = Date.now();
    const rows = await this.sql.begin(async (tx) => {
      const [row] = await tx.unsafe<Row[]>(
        `INSERT INTO conversations (id, app_id, seq, created_at, external_user_id, title, generated_title, metadata, deleted_at, message_count)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${SELECT_ROW}`,
        [record.id, record.app_id, record.seq, record.created_at, record.external_user_id, record.title, JSON.stringify(record.generated_title), JSON.stringify(record.metadata), record.deleted_at, record.message_count],
      );
      if (claim) await this.keepClaim(tx, claim, at);
      return row!;
    });
    if (claim) this.claims.add({ ...claim, at });
    this.index(fromRow(rows));
  }

  private async keepClaim(tx: TransactionSql, claim: IdempotencyClaim, at: number): Promise<void> {
    // A key past its retention may be used again: the newer claim replaces it.
    await tx`INSERT INTO idempotency_claims (key, fingerprint, at) VALUES (${claim.key}, ${claim.fingerprint}, ${at})
             ON CONFLICT (key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, at = EXCLUDED.at`;
  }

  /** Runs `fn` once every earlier change of conversation `id` on this instance has finished. */
  private inTurn<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.turns.get(id) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const settled = run.catch(() => {});
    this.turns.set(id, settled);
    void settled.then(() => {
      if (this.turns.get(id) === settled) this.turns.delete(id);
    });
    return run;
  }

  /** The row of `id`, locked until the transaction ends: another instance's change waits for this one. */
  private async locked(tx: TransactionSql, id: string): Promise<Row | undefined> {
    const [row] = await tx.unsafe<Row[]>(`SELECT ${SELECT_ROW} FROM conversations WHERE id = $1 FOR UPDATE`, [id]);
    return row;
  }

  /** Writes the fields of `next` that differ from `current`; returns the row as it then is. */
  private async write(tx: TransactionSql, current: Row, next: ConversationChange, history?: { bytes: number; items: number; lastAt: number }): Promise<Row> {
    const was = fromRow(current).record;
    const title = next.title !== undefined ? next.title : was.title;
    const deleted = next.deleted_at !== undefined ? next.deleted_at : was.deleted_at;
    const generated = next.generated_title !== undefined ? JSON.stringify(next.generated_title) : current.generated_title;
    const metadata = Object.hasOwn(next, 'metadata') && next.metadata !== undefined ? JSON.stringify(next.metadata) : current.metadata;
    const count = next.message_count ?? was.message_count;
    // D-27: a deleted conversation's history is never served again: it goes, freeing its quota.
    const dropping = deleted !== null && was.deleted_at === null;
    if (dropping) {
      await tx`DELETE FROM items WHERE conversation_id = ${current.id}`;
      await tx`DELETE FROM responses WHERE conversation_id = ${current.id}`;
    }
    const bytes = dropping ? 0 : Number(current.history_bytes) + (history?.bytes ?? 0);
    const items = dropping ? 0 : current.item_count + (history?.items ?? 0);
    const lastAt = history ? history.lastAt : Number(current.last_item_at);
    const [row] = await tx.unsafe<Row[]>(
      `UPDATE conversations SET title = $2, deleted_at = $3, generated_title = $4, metadata = $5, message_count = $6,
         history_bytes = $7, item_count = $8, last_item_at = $9 WHERE id = $1 RETURNING ${SELECT_ROW}`,
      [current.id, title, deleted, generated, metadata, count, bytes, items, lastAt],
    );
    return row!;
  }

  updateConversation(id: string, change: (current: ConversationRecord | undefined) => ConversationChange): Promise<ConversationRecord> {
    return this.inTurn(id, async () => {
      const row = await this.sql.begin(async (tx) => {
        const current = await this.locked(tx, id);
        const next = change(current && fromRow(current).record);
        if (!current) throw new Error(`updateConversation: no conversation ${id}`);
        return this.write(tx, current, next);
      });
      const held = fromRow(row);
      this.index(held);
      return held.record;
    });
  }

  saveResponse(save: ResponseSave): Promise<ConversationRecord> {
    return this.inTurn(save.conversationId, async () => {
      const at = Date.now();
      const row = await this.sql.begin(async (tx) => {
        const current = await this.locked(tx, save.conversationId);
        if (!current) throw new Error(`saveResponse: no conversation ${save.conversationId}`);
        // Deleted while the response ran: its history is gone and is not started again.
        if (current.deleted_at !== null) return current;
        const next = save.apply(fromRow(current).record);
        const history = await this.appendHistory(tx, current, save.items, save.response);
        if (save.claim) await this.keepClaim(tx, save.claim, at);
        return this.write(tx, current, next, history);
      });
      if (save.claim && row.deleted_at === null) this.claims.add({ ...save.claim, at });
      const held = fromRow(row);
      this.index(held);
      return held.record;
    });
  }

  /** The exchange path without a claim (as FileStore's): imports and tests that write history directly. */
  appendToConversation(record: ConversationRecord, items: ItemT[], response?: ResponseRecord, base?: ConversationRecord): Promise<void> {
    return this.inTurn(record.id, async () => {
      const row = await this.sql.begin(async (tx) => {
        const current = await this.locked(tx, record.id);
        if (!current) throw new Error(`appendToConversation: no conversation ${record.id}`);
        const now = fromRow(current).record;
        const next: ConversationChange = { ...record, message_count: now.message_count + record.message_count - (base ?? now).message_count };
        // Fields `record` changed from `base` win; the others keep what landed meanwhile.
        if (base && base.title === record.title) delete next.title;
        if (base && JSON.stringify(base.generated_title) === JSON.stringify(record.generated_title)) delete next.generated_title;
        const history = await this.appendHistory(tx, current, items, response);
        return this.write(tx, current, next, history);
      });
      this.index(fromRow(row));
    });
  }

  /** Appends items and a response after the history's last ones; what it adds to the row's history fields. */
  private async appendHistory(tx: TransactionSql, current: Row, items: ItemT[], response?: ResponseRecord): Promise<{ bytes: number; items: number; lastAt: number }> {
    // §4.3: the history is sorted chronologically. An exchange is stamped when its request started but
    // lands when it is saved, so one that started earlier may land later: it takes the last item's time.
    let last = Number(current.last_item_at);
    for (const item of items) last = item.created_at = Math.max(item.created_at, last);
    const bodies = items.map((i) => JSON.stringify(i));
    let bytes = 0;
    for (const [k, body] of bodies.entries()) {
      bytes += Buffer.byteLength(body) + 1;
      await tx`INSERT INTO items (conversation_id, pos, body) VALUES (${current.id}, ${current.item_count + k}, ${body})`;
    }
    if (response) {
      const body = JSON.stringify(response);
      bytes += Buffer.byteLength(body) + 1;
      await tx`INSERT INTO responses (conversation_id, pos, id, body)
               VALUES (${current.id}, (SELECT count(*) FROM responses WHERE conversation_id = ${current.id}), ${response.id}, ${body})`;
    }
    return { bytes, items: items.length, lastAt: last };
  }

  async readConversationFile(id: string): Promise<ConversationFile & { bytes: number }> {
    const [items, responses, row] = await Promise.all([
      this.sql<{ body: string }[]>`SELECT body FROM items WHERE conversation_id = ${id} ORDER BY pos`,
      this.sql<{ body: string }[]>`SELECT body FROM responses WHERE conversation_id = ${id} ORDER BY pos`,
      this.sql<{ history_bytes: string }[]>`SELECT history_bytes FROM conversations WHERE id = ${id}`,
    ]);
    return {
      items: items.map((r) => JSON.parse(r.body) as ItemT),
      responses: responses.map((r) => JSON.parse(r.body) as ResponseRecord),
      bytes: Number(row[0]?.history_bytes ?? 0),
    };
  }

  /** Ping for the health endpoint: resolves when the database answers. */
  async ping(): Promise<void> {
    await this.sql`SELECT 1`;
  }

  private index(held: Held): void {
    const { record } = held;
    const prev = this.held.get(record.id);
    this.held.set(record.id, held);
    if (record.seq > this.seq) this.seq = record.seq;
    let app = this.apps.get(record.app_id);
    if (!app) {
      app = new AppIndex();
      this.apps.set(record.app_id, app);
    }
    upsert(app.all, record);
    if (!prev) app.counters.conversations++;
    app.counters.messages += record.message_count - (prev?.record.message_count ?? 0);
    app.bytes += held.bytes - (prev?.bytes ?? 0);
    if (record.external_user_id !== null) {
      let list = app.byUser.get(record.external_user_id);
      if (!list) {
        list = [];
        app.byUser.set(record.external_user_id, list);
        app.counters.users++;
      }
      upsert(list, record);
    }
  }

  // Resumable responses (D-30…D-39), shared by every instance: src/store/pg/responses.ts.
  beginResponse(start: LiveResponseStart): Promise<{ running?: string }> {
    return this.responses.begin(start);
  }
  appendResponseEvent(id: string, event: UnsequencedEvent): Promise<void> {
    return this.responses.append(id, event);
  }
  responseTrace(id: string): Promise<ResponseTrace | undefined> {
    return this.responses.trace(id);
  }
  followResponse(id: string, after: number, signal?: AbortSignal): AsyncIterable<UnsequencedEvent> {
    return this.responses.follow(id, after, signal);
  }
  requestCancel(id: string): Promise<void> {
    return this.responses.requestCancel(id);
  }
  onCancelRequest(id: string, listener: () => void): () => void {
    return this.responses.onCancelRequest(id, listener);
  }
  unfinishedResponses(): Promise<ResponseTrace[]> {
    return this.responses.unfinished(this.holder !== undefined);
  }
}
