// The PostgreSQL Store (docs/postgres.md, D-40…D-44). Every change is a transaction on the database,
// which is the truth: a change of a conversation locks its row (`SELECT … FOR UPDATE`), derives the
// new record from the row as it is then, and writes it with its items, response and Idempotency-Key
// claim at once. No connection is held while a model runs: an exchange's transaction begins once the
// response is produced and lasts one round of writes. Reads go to the database too (nothing is
// mirrored in memory), so any number of instances can serve one database: lists by keyset pages,
// seqs from a sequence, an app's counters and stored bytes from its `app_stats` rows (app-stats.ts).
import postgres, { type Sql, type TransactionSql } from 'postgres';
import type { ItemT } from '../../contract/index.ts';
import { PgOutbox } from './webhooks.ts';
import type { PgStoreOptions } from './options.ts';
import { migrate } from './migrate.ts';
import { isConnectionLoss, recordOf } from './rows.ts';
import { getConversation, getWithItems, listConversations, rename } from './conversation-reads.ts';
import { LEASE_MS, PgResponses } from './responses.ts';
import { PgAdminConversations } from './admin-conversations.ts';
import { AppStats, recountAppStats } from './app-stats.ts';
import { PlanStats } from './plan-stats.ts';
import { quotaBytes, readForReply, type VersionedRow, writeExchange } from './exchange.ts';
import { insertConversation, lockRow, writeChange } from './conversation-writes.ts';
import { insertUsage } from './usage.ts';
import { StoreUnavailable } from '../../core/errors.ts';
import {
  type AppCounters,
  type ChangeEvents,
  type ConversationChange,
  type History,
  type ConversationPage,
  type ConversationPageQuery,
  type ConversationRecord,
  type NewConversation,
  type QuotaAdmit,
  type ReplyStart,
  RESPONSE_EVENTS_TTL_MS,
  type ResponseRecord,
  type ResponseSave,
  NO_CHANGE_EVENTS,
  type Store,
  renameByUpdate,
} from '../types.ts';
import type { IdempotencyClaim, KeptClaim } from '../../core/claims.ts';
import { KeyedQueue } from '../../core/keyed-queue.ts';
import { keepClaim } from './claims.ts';

export type { PgStoreOptions };

export { recountAppStats };

/**
 * D-90, D-91: how connections are made. A refused connection is tried again after at most half a second
 * (postgres.js's default backoff grows to 20 s, which kept an instance from its database for seconds
 * after it returned), and one that does not open within 5 s fails, so that nothing waits for it.
 */
const CONNECTING = {
  onnotice: () => {},
  backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 0.5),
  connect_timeout: 5,
};

export class PgStore implements Store {
  readonly sql: Sql;
  /** D-90: the connection of the liveness lock and LISTEN (a test ends it, with `sql`, to act out a kill -9). */
  readonly livenessSql: Sql;
  /**
   * Each conversation's changes on this instance, in turn (as the file store's): one connection waits
   * for the row's lock, not many; other instances' changes wait for it in the database.
   */
  private readonly turns = new KeyedQueue();
  /** Resumable responses (D-30…D-39), shared by every instance: src/store/pg/responses.ts. */
  readonly responses: PgResponses;
  /** D-73: the team's view of the conversations, and the purge of deleted histories. */
  readonly admin: PgAdminConversations;
  /** D-38: instances die without a word; every lease period, a running one saves what they left. */
  readonly sweepMs = LEASE_MS;
  /** D-84: the webhook outbox; each change's events commit in its transaction. */
  readonly outbox: PgOutbox;
  /** D-84: what each change's events are, as the store was opened with (none by default). */
  private readonly events: ChangeEvents;
  /** D-104: an exchange's usage row is written in its save's statement (the usage ledger is this database's). */
  readonly savesUsage = true;
  /** D-24's counters and D-27's quota, without a serialization point per app (D-101). */
  private readonly stats: AppStats;
  /** D-114: the statistics of the tables a send grows, kept up with them (the plans cached on them follow). */
  readonly planStats: PlanStats;

  constructor(opts: PgStoreOptions) {
    // bigint columns come back as strings: ids of time (ms) fit in a double, converted where read.
    this.sql = postgres(opts.url, { ...(opts.max === undefined ? {} : { max: opts.max }), ...CONNECTING });
    // D-90: the liveness lock and LISTEN on a connection of their own, never recycled (the lock goes with it).
    this.livenessSql = postgres(opts.url, {
      ...CONNECTING,
      max: 1,
      idle_timeout: 0,
      max_lifetime: 0,
      onclose: () => this.responses.liveness.lost(),
      // Not in postgres.js's option types, read by its connections: LISTEN's notifications.
      ...{ onnotify: (channel: string, payload: string) => this.responses.notified(channel, payload) },
    });
    this.responses = new PgResponses(
      this.sql,
      this.livenessSql,
      opts.responseEventsTtlMs ?? RESPONSE_EVENTS_TTL_MS,
      Date.now,
      opts.responseRetentionMs,
    );
    this.admin = new PgAdminConversations(this.sql, this.turns, { outbox: () => this.outbox, changeEvents: () => this.events });
    this.outbox = new PgOutbox(this.sql, opts.warn);
    this.events = (opts.changeEvents ?? (() => NO_CHANGE_EVENTS))(this.outbox);
    this.stats = new AppStats(this.sql);
    this.planStats = new PlanStats(this.sql);
  }

  async open(): Promise<void> {
    try {
      await migrate(this.sql);
      await this.stats.open();
      await this.responses.open();
      await this.outbox.open();
      this.planStats.open();
    } catch (err) {
      await this.outbox.close().catch(() => {});
      await this.responses.close().catch(() => {});
      await Promise.all([this.sql.end({ timeout: 1 }).catch(() => {}), this.livenessSql.end({ timeout: 1 }).catch(() => {})]);
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.turns.idle();
    await this.planStats.close();
    await this.outbox.close();
    await this.responses.close();
    await Promise.all([this.sql.end({ timeout: 5 }), this.livenessSql.end({ timeout: 1 })]);
  }

  /** D-91: the database answered this instance's last look (RENEW_MS ago at most), and it holds its liveness lock. */
  /** D-91: the database is across a connection that can be lost. */
  readonly reachable = 'connected';

  available(): boolean {
    return this.responses.liveness.available;
  }

  /** D-91: `err` says the database is out of reach (a lost or refused connection), not that a statement failed. */
  isUnavailable(err: unknown): boolean {
    return err instanceof StoreUnavailable || isConnectionLoss(err);
  }

  /** D-7: creation order across instances, from one sequence (ties, as an import may bring, by id). */
  async nextSeq(): Promise<number> {
    const [row] = await this.sql<{ n: string }[]>`SELECT nextval('conversation_seq') AS n`;
    return Number(row!.n);
  }

  getConversation(id: string): Promise<ConversationRecord | undefined> {
    return getConversation(this.sql, id);
  }

  readConversation(id: string): Promise<{ record: ConversationRecord; items?: ItemT[] } | undefined> {
    return getWithItems(this.sql, id);
  }

  listConversations(appId: string, q: ConversationPageQuery): Promise<ConversationPage | undefined> {
    return listConversations(this.sql, appId, q);
  }

  renameConversation(appId: string, id: string, title: string | null): Promise<ConversationRecord | undefined> {
    // D-88: a rename that makes change events writes them in its transaction (updateConversation's).
    if (this.events.wants(appId)) return renameByUpdate(this, appId, id, title);
    return this.turns.run(id, () => rename(this.sql, appId, id, title));
  }

  appCounters(appId: string): Promise<AppCounters> {
    return this.stats.counters(appId);
  }

  storedBytes(appId: string): Promise<number> {
    return this.stats.storedBytes(appId);
  }

  async idempotencyClaims(since: number): Promise<KeptClaim[]> {
    const rows = await this.sql<
      { key: string; fingerprint: string; at: string }[]
    >`SELECT key, fingerprint, at FROM idempotency_claims WHERE at >= ${since} ORDER BY at`;
    return rows.map((c) => ({ key: c.key, fingerprint: c.fingerprint, at: Number(c.at) }));
  }

  async putConversation(fresh: NewConversation, claim?: IdempotencyClaim, admit?: QuotaAdmit): Promise<ConversationRecord> {
    const metadata = JSON.stringify(fresh.metadata);
    const bytes = quotaBytes(fresh.deleted_at, metadata, 0);
    const statement = (tx: TransactionSql) => insertConversation(tx, fresh, metadata, bytes);
    const seq = await this.stats.create(
      (run) =>
        this.outbox.begin(this.sql, async (tx, emit) => {
          // The claim goes out with the create's statements (one round trip), not after them.
          const [seq] = await Promise.all([run(tx), claim && keepClaim(tx, claim, Date.now())]);
          if (this.events.wants(fresh.app_id)) await emit(this.events.created({ ...fresh, seq }));
          return seq;
        }),
      fresh.app_id,
      fresh.seq,
      bytes,
      statement,
      admit,
    );
    return { ...fresh, seq };
  }

  updateConversation(id: string, change: (current: ConversationRecord | undefined) => ConversationChange): Promise<ConversationRecord> {
    return this.turns.run(id, async () => {
      const row = await this.outbox.begin(this.sql, async (tx, emit) => {
        const current = await lockRow(tx, id);
        const next = change(current && recordOf(current));
        if (!current) throw new Error(`updateConversation: no conversation ${id}`);
        const row = await writeChange(tx, current, next);
        if ((row.title !== current.title || row.deleted_at !== current.deleted_at) && this.events.wants(current.app_id))
          await emit(this.events.updated(recordOf(current), recordOf(row)));
        return row;
      });
      return recordOf(row);
    });
  }

  saveResponse(save: ResponseSave): Promise<ConversationRecord> {
    return this.turns.run(save.conversationId, async () => {
      const at = Date.now();
      const exchange = (record: ConversationRecord) => ({ ...save, change: save.apply(record), at, once: true });
      // D-104: onto the row as the reply's start read it, in one statement, if it is still that version
      // (and no webhook event is wanted: those are written in the change's transaction).
      const base = save.base?.mark as VersionedRow | undefined;
      if (base?.version && base.deleted_at === null && !this.events.wants(base.app_id)) {
        const row = await writeExchange(this.sql, base, exchange(save.base!.record));
        if (row) return recordOf(row);
      }
      const row = await this.outbox.begin(this.sql, async (tx, emit) => {
        const current = await lockRow(tx, save.conversationId);
        if (!current) throw new Error(`saveResponse: no conversation ${save.conversationId}`);
        // Deleted while the response ran: its history is kept as it was at the delete (D-73), not added to.
        if (current.deleted_at !== null) {
          if (save.usage) await insertUsage(tx, save.usage);
          return current;
        }
        // D-38 across instances: an instance that only looked dead had its response taken over and
        // saved `interrupted` by another; a response is saved once, by whichever save lands first
        // (`once`: the row is locked, so the statement sees every save committed before).
        const row = await writeExchange(tx, current, exchange(recordOf(current)));
        if (!row) {
          if (save.claim) await keepClaim(tx, save.claim, at);
          return current;
        }
        if (this.events.wants(current.app_id)) await emit(this.events.saved(recordOf(row), save));
        return row;
      });
      return recordOf(row);
    });
  }

  /** The exchange path without a claim (as FileStore's): imports and tests that write history directly. */
  appendToConversation(record: ConversationRecord, items: ItemT[], response?: ResponseRecord, base?: ConversationRecord): Promise<void> {
    return this.turns.run(record.id, async () => {
      await this.sql.begin(async (tx) => {
        const current = await lockRow(tx, record.id);
        if (!current) throw new Error(`appendToConversation: no conversation ${record.id}`);
        const now = recordOf(current);
        const change: ConversationChange = {
          ...record,
          message_count: now.message_count + record.message_count - (base ?? now).message_count,
        };
        // Fields `record` changed from `base` win; the others keep what landed meanwhile.
        if (base && base.title === record.title) delete change.title;
        if (base && JSON.stringify(base.generated_title) === JSON.stringify(record.generated_title)) delete change.generated_title;
        await writeExchange(tx, current, { items, response, change, at: Date.now(), once: false });
      });
    });
  }

  /** D-104: the history, the record with its version and the app's stored bytes, in one statement. */
  readForReply(id: string, appId: string): Promise<ReplyStart> {
    return readForReply(this.sql, id, appId);
  }

  async readHistory(id: string): Promise<History & { bytes: number }> {
    // One statement: one round trip, one pooled connection, and one snapshot (an exchange saved
    // meanwhile is seen whole or not at all).
    const rows = await this.sql<{ k: number; body: string }[]>`
      SELECT 0 AS k, pos, body FROM items WHERE conversation_id = ${id}
      UNION ALL SELECT 1, pos, body FROM responses WHERE conversation_id = ${id}
      UNION ALL SELECT 2, 0, history_bytes::text FROM conversations WHERE id = ${id}
      ORDER BY k, pos`;
    const history: History & { bytes: number } = { items: [], responses: [], bytes: 0 };
    for (const r of rows) {
      if (r.k === 0) history.items.push(JSON.parse(r.body) as ItemT);
      else if (r.k === 1) history.responses.push(JSON.parse(r.body) as ResponseRecord);
      else history.bytes = Number(r.body);
    }
    return history;
  }

  /** Ping for the health endpoint: resolves when the database answers. */
  async ping(): Promise<void> {
    await this.sql`SELECT 1`;
  }
}
