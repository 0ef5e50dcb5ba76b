// The lowdb-backed Store: one small JSON file per conversation, an append-only journal for the
// conversation records, and in-memory indexes rebuilt from the journal at start-up (docs/storage.md).
import fs from 'node:fs/promises';
import path from 'node:path';
import { Low } from 'lowdb';
import { z } from 'zod';
import { isPlainObject, type ItemT, type UnsequencedEvent } from '../contract/index.ts';
import { AtomicJsonFile, syncDir, writeDurably } from './atomic-json-file.ts';
import { ClaimLog } from './claims.ts';
import { Journal } from './journal.ts';
import { ResponseLog } from './response-log.ts';
import { ConversationRecordSchema, SAFE_ID, isConversationRecord } from './record.ts';
import {
  StoreError,
  type AppCounters,
  type ConversationFile,
  type ConversationRecord,
  type IdempotencyClaim,
  type KeptClaim,
  type LiveResponseStart,
  type ResponseTrace,
  type ResponseRecord,
  type ResponseSave,
  type Store,
} from './types.ts';

/** An Idempotency-Key claim (see IdempotencyClaim), journaled with the exchange it ran. */
const Claim = z.object({ k: z.string(), f: z.string(), at: z.number() });
/**
 * `conv`: a record (with `p`, the response whose exchange it completes). `intent`: the record an
 * exchange will give, written before the conversation file; an intent with no `conv` of the same `p`
 * after it was cut by a crash, and start-up checks the file to see whether the exchange landed. Both
 * carry the exchange's Idempotency-Key claim `c`, which therefore holds exactly when the exchange does.
 */
const JournalEntry = z.discriminatedUnion('t', [
  z.object({ t: z.literal('conv'), v: ConversationRecordSchema, p: z.string().optional(), c: Claim.optional() }),
  z.object({ t: z.literal('intent'), v: ConversationRecordSchema, p: z.string(), c: Claim.optional() }),
]);
type ClaimT = z.infer<typeof Claim>;
type JournalEntryT = z.infer<typeof JournalEntry>;
/** An exchange whose intent was journaled but whose completion was not (see `settle`). */
interface Unfinished {
  intent: ConversationRecord;
  p: string;
  /** The record before the exchange, to merge with whatever landed after it. */
  base: ConversationRecord | undefined;
  c: ClaimT | undefined;
}

/**
 * Three-way merge of a record: the fields `mine` changed from `base` win, the rest come from `theirs`
 * (what landed meanwhile, e.g. a rename during a response); message counts add up.
 */
export function mergeRecord(base: ConversationRecord, mine: ConversationRecord, theirs: ConversationRecord): ConversationRecord {
  const out = { ...theirs } as Record<string, unknown>;
  for (const [k, v] of Object.entries(mine)) {
    if (k === 'message_count') continue;
    if (JSON.stringify(v) !== JSON.stringify((base as unknown as Record<string, unknown>)[k])) out[k] = v;
  }
  out.message_count = theirs.message_count + (mine.message_count - base.message_count);
  return out as unknown as ConversationRecord;
}

/** The usual journal line, checked without zod (see isConversationRecord). */
function isPlainEntry(e: unknown): e is { t: 'conv'; v: ConversationRecord } {
  return isPlainObject(e) && e.t === 'conv' && Object.keys(e).length === 2 && isConversationRecord(e.v);
}

const ConversationFileSchema = z.object({ items: z.array(z.looseObject({ id: z.string(), type: z.string() })), responses: z.array(z.looseObject({ id: z.string() })) });

/**
 * ConversationFileSchema's rules without zod's copy of the whole file: reading conversations that
 * are not cached allocated twice per read and showed as GC time (bench/profile.ts get). zod still
 * words the error when this says no.
 */
function isConversationFile(data: unknown): boolean {
  if (!isPlainObject(data) || !Array.isArray(data.items) || !Array.isArray(data.responses)) return false;
  for (const item of data.items as unknown[]) {
    if (!isPlainObject(item) || typeof item.id !== 'string' || typeof item.type !== 'string') return false;
  }
  for (const r of data.responses as unknown[]) if (!isPlainObject(r) || typeof r.id !== 'string') return false;
  return true;
}

/** Conversation files kept parsed in memory; a busy one is never evicted so reads see its writes. */
const FILE_CACHE_SIZE = 1_000;

class AppIndex {
  /** Creation order (ascending `seq`), soft-deleted included: their ids stay valid cursors (D-11). */
  readonly all: ConversationRecord[] = [];
  readonly byUser = new Map<string, ConversationRecord[]>();
  readonly counters: AppCounters = { conversations: 0, messages: 0, users: 0 };
}

/** Where a record of `seq` is or would go in `list` (ascending by seq; O(1) past the end, the usual append). */
function seqIndex(list: readonly ConversationRecord[], seq: number): number {
  let lo = 0;
  let hi = list.length;
  if (hi > 0 && list[hi - 1]!.seq < seq) return hi;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.seq < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Puts `record` in `list` by `seq`, replacing the record of the same seq. */
function upsertBySeq(list: ConversationRecord[], record: ConversationRecord): void {
  const at = seqIndex(list, record.seq);
  if (list[at]?.seq === record.seq) list[at] = record;
  else list.splice(at, 0, record);
}

export interface FileStoreOptions {
  dataDir: string;
  /** Told when start-up drops a torn last journal line (see Journal.open). */
  warn?: (message: string) => void;
  /** D-36: how long a response's events stay resumable after its end (default RESPONSE_EVENTS_TTL_MS). */
  responseEventsTtlMs?: number;
}

export class FileStore implements Store {
  readonly dataDir: string;
  private readonly journal: Journal;
  private readonly records = new Map<string, ConversationRecord>();
  private readonly apps = new Map<string, AppIndex>();
  private readonly files = new Map<string, Promise<Low<ConversationFile>>>();
  private seq = 0;
  private lockFile: string;
  /** The last queued change of each conversation being changed (see `inTurn`). */
  private readonly turns = new Map<string, Promise<unknown>>();
  /** Idempotency-Key claims of the exchanges saved (see `idempotencyClaims`), oldest first. */
  private readonly claims = new ClaimLog();
  /** Live responses and their events (resumable responses: src/store/response-log.ts). */
  private readonly responseLog: ResponseLog;

  constructor(opts: FileStoreOptions) {
    this.dataDir = path.resolve(opts.dataDir);
    this.journal = new Journal(path.join(this.dataDir, 'conversations.jsonl'), { warn: opts.warn });
    this.lockFile = path.join(this.dataDir, 'LOCK');
    this.responseLog = new ResponseLog({ dir: path.join(this.dataDir, 'responses'), ttlMs: opts.responseEventsTtlMs, warn: opts.warn });
  }

  async open(): Promise<void> {
    try {
      // Only the last level is created: a missing parent is more likely a typo than a wish.
      await fs.mkdir(this.dataDir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new StoreError(this.dataDir, 'does not exist, nor does its parent folder; create it or choose another --data-dir');
      if (code !== 'EEXIST') throw new StoreError(this.dataDir, `cannot create the data directory (${code})`);
    }
    if (!(await fs.stat(this.dataDir)).isDirectory()) throw new StoreError(this.dataDir, 'is not a directory; choose another --data-dir');
    await this.lock();
    try {
      await this.load();
      await this.responseLog.open();
    } catch (err) {
      // Refusing to start must not leave the directory looking in use.
      await this.journal.close().catch(() => {});
      await fs.rm(this.lockFile, { force: true });
      throw err;
    }
  }

  private async load(): Promise<void> {
    const unfinished = new Map<string, Unfinished[]>();
    await this.journal.open((entry, line) => {
      if (isPlainEntry(entry)) {
        this.checkVersion(entry.v, line);
        this.index(entry.v);
        return;
      }
      const parsed = JournalEntry.safeParse(entry);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new StoreError(this.journal.file, `line ${line}: ${issue.path.join('.') || 'entry'}: ${issue.message}`);
      }
      this.checkVersion(parsed.data.v, line);
      this.replay(parsed.data, unfinished);
    });
    await this.settle(unfinished);
    // Compact when most lines are superseded versions: start-up time follows live data, not history.
    if (this.journal.lines > 2 * this.records.size + 1_000) {
      await this.journal.compact(() => [...this.records.values()].sort((a, b) => a.seq - b.seq).map((v) => ({ t: 'conv', v })));
    }
  }

  /**
   * The rules between lines, for a hand-edited journal: a record's app, seq and creation time never
   * change, and no two conversations of an app share a seq. The indexes assume both; breaking either
   * would hide a conversation from its list or leave it in another app's. Checked against the index
   * itself (a lookup by seq in the app's list), so start-up keeps no second map of 100,000 entries.
   */
  private checkVersion(v: ConversationRecord, line: number): void {
    const list = this.apps.get(v.app_id)?.all;
    const holder = list?.[seqIndex(list, v.seq)];
    if (holder && holder.seq === v.seq && holder.id !== v.id) throw this.badLine(line, `v.seq: ${v.seq} is already the seq of ${holder.id} (each conversation has its own)`);
    const prev = this.records.get(v.id);
    if (!prev) return;
    for (const field of ['app_id', 'seq', 'created_at'] as const) {
      if (v[field] !== prev[field]) {
        throw this.badLine(line, `v.${field}: ${JSON.stringify(v[field])} differs from ${JSON.stringify(prev[field])} in an earlier line of ${v.id} (it never changes)`);
      }
    }
  }

  private badLine(line: number, detail: string): StoreError {
    return new StoreError(this.journal.file, `line ${line}: ${detail}; restore the file from a backup or fix that line`);
  }

  private async lock(): Promise<void> {
    try {
      const owner = Number(await fs.readFile(this.lockFile, 'utf8'));
      if (owner && owner !== process.pid && isAlive(owner)) {
        throw new StoreError(this.dataDir, `is in use by another Parley process (pid ${owner}); stop it or choose another --data-dir`);
      }
    } catch (err) {
      if (err instanceof StoreError) throw err;
    }
    try {
      await fs.writeFile(this.lockFile, String(process.pid));
    } catch (err) {
      throw new StoreError(this.dataDir, `is not writable (${(err as NodeJS.ErrnoException).code}); Parley needs to write its data there`);
    }
  }

  async close(): Promise<void> {
    // Every write was awaited by its request; only those still under way need waiting for
    // (rewriting cached files here would cost a write each and change nothing).
    await Promise.all(
      [...this.files.values()].map(async (p) => {
        const db = await p.catch(() => undefined);
        if (db) await (db.adapter as AtomicJsonFile<ConversationFile>).idle();
      }),
    );
    await this.responseLog.close();
    await this.journal.close();
    await fs.rm(this.lockFile, { force: true });
  }

  nextSeq(): number {
    return ++this.seq;
  }

  getConversation(id: string): ConversationRecord | undefined {
    return this.records.get(id);
  }

  conversationsOf(appId: string, externalUserId?: string): readonly ConversationRecord[] {
    const app = this.apps.get(appId);
    if (!app) return [];
    return externalUserId === undefined ? app.all : (app.byUser.get(externalUserId) ?? []);
  }

  appCounters(appId: string): AppCounters {
    return { ...(this.apps.get(appId)?.counters ?? { conversations: 0, messages: 0, users: 0 }) };
  }

  async putConversation(record: ConversationRecord, claim?: IdempotencyClaim): Promise<void> {
    const c = claim && { k: claim.key, f: claim.fingerprint, at: Date.now() };
    await this.journal.append(c ? { t: 'conv', v: record, c } : { t: 'conv', v: record });
    if (c) this.claims.add({ key: c.k, fingerprint: c.f, at: c.at });
    // Indexed only once durable: nothing is listed that a crash could take back.
    this.index(record);
  }

  async readConversationFile(id: string): Promise<ConversationFile> {
    const db = await this.conversationDb(id);
    return db.data;
  }

  private replay(e: JournalEntryT, unfinished: Map<string, Unfinished[]>): void {
    if (e.t === 'intent') {
      const list = unfinished.get(e.v.id) ?? [];
      list.push({ intent: e.v, p: e.p, base: this.records.get(e.v.id), c: e.c });
      unfinished.set(e.v.id, list);
      return;
    }
    if (e.p !== undefined) {
      const list = unfinished.get(e.v.id)?.filter((u) => u.p !== e.p);
      if (list?.length) unfinished.set(e.v.id, list);
      else unfinished.delete(e.v.id);
    }
    if (e.c) this.claims.add({ key: e.c.k, fingerprint: e.c.f, at: e.c.at });
    this.index(e.v);
  }

  /** Exchanges cut by a crash: kept whole if their file write landed, forgotten whole if not. */
  private async settle(unfinished: Map<string, Unfinished[]>): Promise<void> {
    for (const [id, list] of unfinished) {
      const db = await this.conversationDb(id);
      for (const u of list) {
        const landed = db.data.responses.some((r) => r.id === u.p) || db.data.items.some((i) => (i as { response_id?: string }).response_id === u.p);
        if (!landed) continue;
        const current = this.records.get(id);
        const record = u.base && current ? mergeRecord(u.base, u.intent, current) : u.intent;
        await this.journal.append(u.c ? { t: 'conv', v: record, p: u.p, c: u.c } : { t: 'conv', v: record, p: u.p });
        if (u.c) this.claims.add({ key: u.c.k, fingerprint: u.c.f, at: u.c.at });
        this.index(record);
      }
    }
  }

  /**
   * Runs `fn` once every earlier change of conversation `id` has finished. A change reads the
   * record, derives the new one and stores it; without this, two concurrent changes (a rename
   * and a delete, a rename and a new message) would each start from the same record and the
   * later write would undo the earlier one (e.g. bring a deleted conversation back).
   */
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

  updateConversation(id: string, change: (current: ConversationRecord | undefined) => ConversationRecord): Promise<ConversationRecord> {
    return this.inTurn(id, async () => {
      const record = change(this.records.get(id));
      await this.putConversation(record);
      return record;
    });
  }

  saveResponse(save: ResponseSave): Promise<ConversationRecord> {
    return this.inTurn(save.conversationId, async () => {
      const current = this.records.get(save.conversationId);
      if (!current) throw new Error(`saveResponse: no conversation ${save.conversationId}`);
      const record = save.apply(current);
      await this.appendExchange(record, save.items, save.response, current, save.claim);
      return this.records.get(save.conversationId)!;
    });
  }

  idempotencyClaims(since: number): KeptClaim[] {
    return this.claims.since(since);
  }

  /** The exchange path without a turn or a claim: imports and tests that write history directly. */
  appendToConversation(record: ConversationRecord, items: ItemT[], response?: ResponseRecord, base?: ConversationRecord): Promise<void> {
    return this.appendExchange(record, items, response, base);
  }

  private async appendExchange(record: ConversationRecord, items: ItemT[], response?: ResponseRecord, base?: ConversationRecord, claim?: IdempotencyClaim): Promise<void> {
    const before = base ?? this.records.get(record.id);
    const p = response?.id ?? items[0]?.id;
    // The claim rides in both journal lines of the exchange: it holds exactly when the exchange does.
    const c = claim && p !== undefined ? { k: claim.key, f: claim.fingerprint, at: Date.now() } : undefined;
    // The intent is durable before the file changes: after a crash, start-up knows which file to check.
    if (p !== undefined) await this.journal.append(c ? { t: 'intent', v: record, p, c } : { t: 'intent', v: record, p });
    const db = await this.conversationDb(record.id);
    // The file first: if a crash falls between the two writes, the record's counters lag by one
    // response but no acknowledged item is lost.
    // §4.3: the history is sorted chronologically. An exchange is stamped when its request started but
    // lands when it is saved, so one that started earlier may land later: it takes the last item's time.
    let last = db.data.items.at(-1)?.created_at ?? 0;
    for (const item of items) last = item.created_at = Math.max(item.created_at, last);
    db.data.items.push(...items);
    if (response) {
      const at = db.data.responses.findIndex((r) => r.id === response.id);
      if (at >= 0) db.data.responses[at] = response;
      else db.data.responses.push(response);
    }
    try {
      await db.write();
    } catch (err) {
      // Nothing acknowledged: take the in-memory copy back to what is on disk.
      this.files.delete(record.id);
      throw err;
    }
    // A rename (or anything else) that landed meanwhile is kept.
    const current = this.records.get(record.id);
    const final = before && current && current !== before ? mergeRecord(before, record, current) : record;
    await this.journal.append(p === undefined ? { t: 'conv', v: final } : c ? { t: 'conv', v: final, p, c } : { t: 'conv', v: final, p });
    if (c) this.claims.add({ key: c.k, fingerprint: c.f, at: c.at });
    this.index(final);
  }

  /**
   * The bulk path (seeding, imports): many new conversations with their files, at the cost of one
   * fsync per file instead of an atomic rewrite plus a folder sync each. Every file is written
   * temp → fsync → rename, the folders are synced once, and only then are the records appended to
   * the journal in one group commit, which is the commit point: a crash before it leaves at most
   * files that no record points to. Resolves once everything is durable; nothing is indexed before.
   */
  async importConversations(entries: ReadonlyArray<{ record: ConversationRecord; file: ConversationFile }>, concurrency = 16): Promise<void> {
    const ids = new Set<string>();
    for (const { record } of entries) {
      if (!SAFE_ID.test(record.id)) throw new Error(`importConversations: ${JSON.stringify(record.id)} cannot name a file`);
      if (this.records.has(record.id) || ids.has(record.id)) throw new Error(`importConversations: conversation ${record.id} already exists`);
      ids.add(record.id);
    }
    const dirs = new Set<string>();
    let next = 0;
    const worker = async () => {
      while (next < entries.length) {
        const { record, file } = entries[next++]!;
        const target = this.conversationPath(record.id);
        dirs.add(path.dirname(target));
        await writeDurably(target, JSON.stringify(file));
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, entries.length) }, worker));
    await Promise.all([...dirs].map(syncDir));
    await Promise.all(entries.map(({ record }) => this.journal.append({ t: 'conv', v: record })));
    for (const { record } of entries) this.index(record);
  }

  private conversationPath(id: string): string {
    // Shard by the id's last two characters so that no folder holds 100,000 files.
    return path.join(this.dataDir, 'conversations', id.slice(-2), `${id}.json`);
  }

  private conversationDb(id: string): Promise<Low<ConversationFile>> {
    let p = this.files.get(id);
    if (p) {
      // Most recently used goes last.
      this.files.delete(id);
      this.files.set(id, p);
      return p;
    }
    p = (async () => {
      const adapter = new AtomicJsonFile<ConversationFile>(this.conversationPath(id), (data) => {
        if (isConversationFile(data)) return null;
        const parsed = ConversationFileSchema.safeParse(data);
        return parsed.success ? null : `${parsed.error.issues[0]!.path.join('.') || 'file'}: ${parsed.error.issues[0]!.message}`;
      });
      const db = new Low<ConversationFile>(adapter, { items: [], responses: [] });
      await db.read();
      return db;
    })();
    this.files.set(id, p);
    p.catch(() => this.files.delete(id));
    this.evict();
    return p;
  }

  /** Drops the least recently used files beyond the cache size (the map iterates oldest first). */
  private evict(): void {
    let excess = this.files.size - FILE_CACHE_SIZE;
    if (excess <= 0) return;
    for (const [id, p] of this.files) {
      if (excess-- <= 0) break;
      void p.then(
        (db) => {
          if (!(db.adapter as AtomicJsonFile<ConversationFile>).busy && this.files.get(id) === p) this.files.delete(id);
        },
        () => {},
      );
    }
  }

  private index(record: ConversationRecord): void {
    const prev = this.records.get(record.id);
    this.records.set(record.id, record);
    if (record.seq > this.seq) this.seq = record.seq;
    let app = this.apps.get(record.app_id);
    if (!app) {
      app = new AppIndex();
      this.apps.set(record.app_id, app);
    }
    upsertBySeq(app.all, record);
    if (!prev) app.counters.conversations++;
    app.counters.messages += record.message_count - (prev?.message_count ?? 0);
    if (record.external_user_id !== null) {
      let list = app.byUser.get(record.external_user_id);
      if (!list) {
        list = [];
        app.byUser.set(record.external_user_id, list);
        app.counters.users++;
      }
      upsertBySeq(list, record);
    }
  }

  // Resumable responses (D-30…D-39): kept apart, in src/store/response-log.ts.
  beginResponse(start: LiveResponseStart): Promise<{ running?: string }> {
    return this.responseLog.begin(start);
  }
  appendResponseEvent(id: string, event: UnsequencedEvent): Promise<void> {
    return this.responseLog.append(id, event);
  }
  responseTrace(id: string): Promise<ResponseTrace | undefined> {
    return this.responseLog.trace(id);
  }
  followResponse(id: string, after: number, signal?: AbortSignal): AsyncIterable<UnsequencedEvent> {
    return this.responseLog.follow(id, after, signal);
  }
  requestCancel(id: string): Promise<void> {
    return this.responseLog.requestCancel(id);
  }
  onCancelRequest(id: string, listener: () => void): () => void {
    return this.responseLog.onCancelRequest(id, listener);
  }
  unfinishedResponses(): Promise<ResponseTrace[]> {
    return this.responseLog.unfinishedResponses();
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
