// The file store (docs/storage.md): one append-only history file per conversation, an append-only
// journal of the conversation records (`conversations.jsonl`), and in-memory indexes rebuilt from the
// journal at start-up. Changes of one conversation take turns (a keyed queue); each is durable in the
// journal before memory shows it. One process serves the directory (its LOCK, D-25).
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ItemT } from '../../contract/index.ts';
import type { IdempotencyClaim, KeptClaim } from '../../core/claims.ts';
import { DataFileError } from '../../core/errors.ts';
import { KeyedQueue } from '../../core/keyed-queue.ts';
import type {
  AppCounters,
  ConversationChange,
  ConversationPage,
  ConversationPageQuery,
  ConversationRecord,
  NewConversation,
  History,
  QuotaAdmit,
  ReplyStart,
  ResponseRecord,
  ResponseSave,
  Store,
} from '../types.ts';
import { FileAdminConversations } from './admin-conversations.ts';
import { ClaimLog } from './claims.ts';
import { Compactor } from './compaction.ts';
import { ConversationIndex, metadataIn, StoredConversation } from './conversations.ts';
import { importInto } from './bulk-import.ts';
import { acquireLock, releaseLock } from './dir-lock.ts';
import { HistoryCache } from './history-cache.ts';
import { Journal } from './journal.ts';
import { ExchangeWriter } from './exchange-writer.ts';
import { diffOf, type Exchange, parseLine } from './lines.ts';
import { ResponseLog } from './response-log.ts';
import { replayJournal, settleExchanges, sweepDataDir } from './startup.ts';
import { type ChangeEvents, NO_CHANGE_EVENTS, renameByUpdate } from '../types.ts';
import { FileOutbox, type OutboxEvent, withEvents } from './webhooks.ts';
import type { FileStoreOptions } from './options.ts';

export type { FileStoreOptions };

export class FileStore implements Store {
  readonly dataDir: string;
  private readonly journal: Journal;
  private readonly index: ConversationIndex;
  private readonly histories: HistoryCache;
  private readonly lockFile: string;
  /** The LOCK's content as this store wrote it; close() removes only that. */
  private lockText: string | undefined;
  /**
   * Each conversation's changes, in turn. A change reads the record, derives the new one and stores
   * it; without turns, two concurrent changes (a rename and a delete, a rename and a new message)
   * would each start from the same record and the later write would undo the earlier one.
   */
  private readonly turns = new KeyedQueue();
  /** Idempotency-Key claims of the exchanges saved (see `idempotencyClaims`), oldest first. */
  private readonly claims = new ClaimLog();
  /** Intents journaled whose `done` is not (a failed write): a compaction keeps them for start-up to settle. */
  private readonly openIntents = new Map<string, Exchange>();
  /** D-28: the journal compacted at start-up and while running (compaction.ts). */
  private readonly compactor: Compactor;
  /** D-28, D-94: an exchange's intent, history and `done` line, in that order (exchange-writer.ts). */
  private readonly exchanges: ExchangeWriter;
  /** Resumable responses (D-30…D-39), kept apart: src/store/file/response-log.ts. */
  readonly responses: ResponseLog;
  /** One process owns the directory (its LOCK): start-up saves what the last one left, no sweep. */
  readonly sweepMs = null;
  /** The usage ledger is a file of its own (usage.jsonl): it records a reply's usage before the save. */
  readonly savesUsage = false;
  /** D-73: the team's view of the conversations, and the purge of deleted histories. */
  readonly admin: FileAdminConversations;
  /** D-84: the webhook outbox (`webhooks.jsonl`, opened with the store), and what each change's events are. */
  outbox!: FileOutbox;
  private events: ChangeEvents = NO_CHANGE_EVENTS;

  constructor(private readonly opts: FileStoreOptions) {
    this.dataDir = path.resolve(opts.dataDir);
    this.journal = new Journal(path.join(this.dataDir, 'conversations.jsonl'), { warn: opts.warn, parse: parseLine });
    this.lockFile = path.join(this.dataDir, 'LOCK');
    const store = this;
    // The in-memory form of a record: its metadata is read from this store's journal when served (D-28).
    this.index = new ConversationIndex(
      class extends StoredConversation {
        get metadata(): Record<string, unknown> {
          return metadataIn(store.journal, store.index, this);
        }
      },
    );
    this.histories = new HistoryCache(this.dataDir, opts.historyCacheBytes);
    this.responses = new ResponseLog({
      dir: path.join(this.dataDir, 'responses'),
      ttlMs: opts.responseEventsTtlMs,
      warn: opts.warn,
      // D-176: a deleted conversation's kept responses are outside the quota, as its history is (D-73).
      counted: (id) => (this.index.records.get(id)?.deleted_at ?? null) === null,
    });
    const { index, journal, turns, histories, claims, openIntents } = this;
    this.compactor = new Compactor({ journal, index, claims, openIntents, outboxSettled: () => this.outbox.settled() }, opts);
    this.exchanges = new ExchangeWriter({
      journal,
      index,
      histories,
      claims,
      openIntents,
      adopt: (w) => this.outbox.adopt(w),
      appended: () => this.compactor.ifDue(),
      warn: opts.warn,
    });
    this.admin = new FileAdminConversations({
      index,
      journal,
      turns,
      histories,
      appended: () => this.compactor.ifDue(),
      restored: (id) => this.responses.recount(id, true),
      changeEvents: () => this.events,
      adopt: (w) => this.outbox.adopt(w),
    });
  }

  async open(): Promise<void> {
    try {
      // Only the last level is created: a missing parent is more likely a typo than a wish.
      await fs.mkdir(this.dataDir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT')
        throw new DataFileError(this.dataDir, 'does not exist, nor does its parent folder; create it or choose another --data-dir');
      if (code !== 'EEXIST') throw new DataFileError(this.dataDir, `cannot create the data directory (${code})`);
    }
    if (!(await fs.stat(this.dataDir)).isDirectory())
      throw new DataFileError(this.dataDir, 'is not a directory; choose another --data-dir');
    this.lockText = await acquireLock(this.lockFile, this.dataDir);
    try {
      await this.load();
      await this.responses.open();
    } catch (err) {
      // Refusing to start must not leave the directory looking in use.
      await this.outbox?.close().catch(() => {});
      await this.journal.close().catch(() => {});
      await releaseLock(this.lockFile, this.lockText);
      throw err;
    }
  }

  private async load(): Promise<void> {
    this.outbox = await FileOutbox.open(this.dataDir, [], this.opts);
    // D-167: only the events the outbox lacks are held, not every one the journal's lines carry.
    const carried: OutboxEvent[] = [];
    const unfinished = await replayJournal(this.journal, this.index, this.claims, (w) => {
      for (const e of w) if (this.outbox.lacks(e)) carried.push(e);
    });
    this.outbox.adopt(carried);
    await this.outbox.settled();
    if (this.opts.changeEvents) this.events = this.opts.changeEvents(this.outbox);
    this.histories.knowLegacy(await sweepDataDir(this.dataDir, this.journal.file, this.index));
    await settleExchanges(unfinished, {
      journal: this.journal,
      index: this.index,
      claims: this.claims,
      histories: this.histories,
      openIntents: this.openIntents,
      warn: this.opts.warn ?? ((m: string) => process.emitWarning(m)),
    });
    // Compact when most of the journal is superseded: start-up time follows live data, not history.
    if (this.compactor.due()) await this.compactor.run();
  }

  async close(): Promise<void> {
    await this.compactor.idle();
    // Every write was awaited by its request; only those still under way need waiting for.
    await this.turns.idle();
    await this.histories.idle();
    await this.responses.close();
    await this.outbox?.close();
    await this.journal.close();
    if (this.lockText !== undefined) await releaseLock(this.lockFile, this.lockText);
  }

  /** D-91: the directory is this process's own: never out of reach. */
  readonly reachable = 'always';

  available(): boolean {
    return true;
  }

  isUnavailable(): boolean {
    return false;
  }

  // The reads answer from the in-memory index: resolved promises, no other work.
  nextSeq(): Promise<number> {
    return Promise.resolve(++this.index.seq);
  }

  getConversation(id: string): Promise<ConversationRecord | undefined> {
    return Promise.resolve(this.index.records.get(id));
  }

  async readConversation(id: string): Promise<{ record: ConversationRecord; items?: ItemT[] } | undefined> {
    const record = this.index.records.get(id);
    if (!record || record.deleted_at !== null) return record && { record };
    return { record, items: (await this.histories.peek(id)).items };
  }

  renameConversation(appId: string, id: string, title: string | null): Promise<ConversationRecord | undefined> {
    return renameByUpdate(this, appId, id, title);
  }

  /** The apps that have conversations, sorted (for exports: src/store/port). */
  appIds(): string[] {
    return this.index.appIds();
  }

  /** Every conversation of an app (soft-deleted included), in creation order; optionally one user's (imports, tools). */
  conversationsOf(appId: string, externalUserId?: string): readonly ConversationRecord[] {
    return this.index.conversationsOf(appId, externalUserId);
  }

  listConversations(appId: string, q: ConversationPageQuery): Promise<ConversationPage | undefined> {
    return Promise.resolve(this.index.page(appId, q));
  }

  appCounters(appId: string): Promise<AppCounters> {
    return Promise.resolve(this.index.counters(appId));
  }

  storedBytes(appId: string): Promise<number> {
    return Promise.resolve(this.bytesOf(appId));
  }

  /** D-27 (D-93): an app's conversations, and its response files while they are kept (an hour after their end). */
  private bytesOf(appId: string): number {
    return this.index.bytes(appId) + this.responses.bytesOf(appId);
  }

  async readHistory(id: string): Promise<History & { bytes: number }> {
    const h = await this.histories.get(id);
    return { items: h.items, responses: h.responses, bytes: h.bytes };
  }

  /** D-104: the history, then the app's bytes and the record as they are once it is read (the save starts from the record as it is then). */
  async readForReply(id: string, appId: string): Promise<ReplyStart> {
    const history = await this.readHistory(id);
    const record = this.index.records.get(id);
    return { ...history, storedBytes: this.bytesOf(appId), base: record && { record } };
  }

  async putConversation(fresh: NewConversation, claim?: IdempotencyClaim, admit?: QuotaAdmit): Promise<ConversationRecord> {
    admit?.(this.bytesOf(fresh.app_id));
    const record = fresh.seq === undefined ? { ...fresh, seq: ++this.index.seq } : (fresh as ConversationRecord);
    const c = claim && { k: claim.key, f: claim.fingerprint, at: Date.now() };
    const w = this.events.wants(record.app_id) ? this.events.created(record) : [];
    // Indexed once durable (nothing is listed that a crash could take back), before any later line.
    await this.journal.append(withEvents(c ? { t: 'conv', v: record, c } : { t: 'conv', v: record }, w), (where) => {
      if (w.length > 0) this.outbox.adopt(w);
      if (c) this.claims.add({ key: c.k, fingerprint: c.f, at: c.at });
      this.index.add(this.index.fromRecord(record, where, this.index.records.get(record.id)?.file_bytes ?? 0));
    });
    this.compactor.ifDue();
    return record;
  }

  updateConversation(id: string, change: (current: ConversationRecord | undefined) => ConversationChange): Promise<ConversationRecord> {
    return this.turns.run(id, async () => {
      const current = this.index.records.get(id);
      const next = change(current);
      if (!current) throw new Error(`updateConversation: no conversation ${id}`);
      const { f } = diffOf(current, next);
      if (Object.keys(f).length === 0) return current;
      // D-73 (revising D-27): a delete keeps the history until it is purged (file/admin-conversations.ts).
      if (f.deleted_at != null) f.purged_at = current.deleted_at === null ? null : current.purged_at;
      const w = this.events.wants(current.app_id) ? this.events.updated(current.toJSON(), { ...current.toJSON(), ...f }) : [];
      // D-28: only what changed is appended (a rename is its title, not the 16 KB record).
      await this.journal.append(withEvents({ t: 'set', id, f }, w), (where) => {
        if (w.length > 0) this.outbox.adopt(w);
        this.index.add(this.index.changed(this.index.records.get(id)!, f, 0, 0, where));
        if (f.deleted_at !== undefined) this.responses.recount(id, f.deleted_at === null);
      });
      this.compactor.ifDue();
      return this.index.records.get(id)!;
    });
  }

  saveResponse(save: ResponseSave): Promise<ConversationRecord> {
    return this.turns.run(save.conversationId, async () => {
      const current = this.index.records.get(save.conversationId);
      if (!current) throw new Error(`saveResponse: no conversation ${save.conversationId}`);
      // Deleted while the response ran: its history is kept as it was at the delete (D-73), not added to.
      if (current.deleted_at !== null) return current;
      const { f, n } = diffOf(current, save.apply(current));
      const w = this.events.wants(current.app_id)
        ? this.events.saved({ ...current.toJSON(), ...f, message_count: current.message_count + n }, save)
        : [];
      await this.exchanges.write(current.id, f, n, save.items, save.response, save.claim, w);
      return this.index.records.get(save.conversationId)!;
    });
  }

  idempotencyClaims(since: number): Promise<KeptClaim[]> {
    return Promise.resolve(this.claims.since(since));
  }

  /** The exchange path without a turn or a claim: imports and tests that write history directly. */
  appendToConversation(record: ConversationRecord, items: ItemT[], response?: ResponseRecord, base?: ConversationRecord): Promise<void> {
    const current = this.index.records.get(record.id);
    if (!current) return Promise.reject(new Error(`appendToConversation: no conversation ${record.id}`));
    const { f } = diffOf(current, { ...record, message_count: undefined });
    // Fields `record` changed from `base` win; the others keep what landed meanwhile.
    if (base) {
      if (f.title !== undefined && base.title === record.title) delete f.title;
      if (f.generated_title !== undefined && JSON.stringify(base.generated_title) === JSON.stringify(record.generated_title))
        delete f.generated_title;
    }
    return this.exchanges.write(record.id, f, record.message_count - (base ?? current).message_count, items, response);
  }

  /** The bulk path (seeding, imports): many new conversations with their histories (bulk-import.ts). */
  async importConversations(entries: ReadonlyArray<{ record: ConversationRecord; file?: History }>, concurrency = 16): Promise<void> {
    await importInto({ index: this.index, journal: this.journal, histories: this.histories }, entries, concurrency);
    this.compactor.ifDue();
  }
}
