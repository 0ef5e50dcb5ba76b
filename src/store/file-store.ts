// The lowdb-backed Store: one small JSON file per conversation, an append-only journal for the
// conversation records, and in-memory indexes rebuilt from the journal at start-up (docs/storage.md).
import fs from 'node:fs/promises';
import path from 'node:path';
import { Low } from 'lowdb';
import { z } from 'zod';
import type { ItemT } from '../contract/index.ts';
import { AtomicJsonFile, syncDir, writeDurably } from './atomic-json-file.ts';
import { acquireLock, releaseLock } from './dir-lock.ts';
import { Journal } from './journal.ts';
import { StoreError, type AppCounters, type ConversationFile, type ConversationRecord, type ResponseRecord, type Store } from './types.ts';

const SAFE_ID = /^[A-Za-z0-9_-]{3,128}$/;
const ConversationRecordSchema = z.object({
  // The id names a file: a hand-edited one must not reach outside the data directory.
  id: z.string().regex(SAFE_ID, 'must be letters, digits, "_" or "-" (it names a file)'),
  app_id: z.string().min(1),
  seq: z.number().int().nonnegative(),
  created_at: z.number().int(),
  external_user_id: z.string().nullable(),
  title: z.string().nullable(),
  generated_title: z.record(z.string(), z.string()),
  metadata: z.record(z.string(), z.unknown()),
  deleted_at: z.number().int().nullable(),
  message_count: z.number().int().nonnegative(),
});
/**
 * `conv`: a record (with `p`, the response whose exchange it completes). `intent`: the record an
 * exchange will give, written before the conversation file; an intent with no `conv` of the same `p`
 * after it was cut by a crash, and start-up checks the file to see whether the exchange landed.
 */
const JournalEntry = z.discriminatedUnion('t', [
  z.object({ t: z.literal('conv'), v: ConversationRecordSchema, p: z.string().optional() }),
  z.object({ t: z.literal('intent'), v: ConversationRecordSchema, p: z.string() }),
]);
type JournalEntryT = z.infer<typeof JournalEntry>;
/** An exchange whose intent was journaled but whose completion was not (see `settle`). */
interface Unfinished {
  intent: ConversationRecord;
  p: string;
  /** The record before the exchange, to merge with whatever landed after it. */
  base: ConversationRecord | undefined;
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

/**
 * The same rules as JournalEntry for the usual, well-formed line, ~10× cheaper: zod was 15% of
 * start-up with 100,000 conversations. Anything unusual (extra keys, which zod would strip, or a
 * fault) goes to zod, which also words the error.
 */
function isPlainEntry(e: unknown): e is { t: 'conv'; v: ConversationRecord } {
  if (typeof e !== 'object' || e === null) return false;
  const { t, v } = e as { t?: unknown; v?: Record<string, unknown> };
  if (t !== 'conv' || typeof v !== 'object' || v === null || Object.keys(e).length !== 2) return false;
  return (
    Object.keys(v).length === 10 &&
    typeof v.id === 'string' &&
    SAFE_ID.test(v.id) &&
    typeof v.app_id === 'string' &&
    v.app_id.length > 0 &&
    Number.isSafeInteger(v.seq) &&
    (v.seq as number) >= 0 &&
    Number.isSafeInteger(v.created_at) &&
    (v.external_user_id === null || typeof v.external_user_id === 'string') &&
    (v.title === null || typeof v.title === 'string') &&
    isObject(v.generated_title) &&
    Object.values(v.generated_title).every((x) => typeof x === 'string') &&
    isObject(v.metadata) &&
    (v.deleted_at === null || Number.isSafeInteger(v.deleted_at)) &&
    Number.isSafeInteger(v.message_count) &&
    (v.message_count as number) >= 0
  );
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

const ConversationFileSchema = z.object({ items: z.array(z.looseObject({ id: z.string(), type: z.string() })), responses: z.array(z.looseObject({ id: z.string() })) });

/**
 * ConversationFileSchema's rules without zod's copy of the whole file: reading conversations that
 * are not cached allocated twice per read and showed as GC time (bench/profile.ts get). zod still
 * words the error when this says no.
 */
function isConversationFile(data: unknown): boolean {
  if (!isObject(data) || !Array.isArray(data.items) || !Array.isArray(data.responses)) return false;
  for (const item of data.items as unknown[]) {
    if (!isObject(item) || typeof item.id !== 'string' || typeof item.type !== 'string') return false;
  }
  for (const r of data.responses as unknown[]) if (!isObject(r) || typeof r.id !== 'string') return false;
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
}

export class FileStore implements Store {
  readonly dataDir: string;
  private readonly journal: Journal;
  private readonly records = new Map<string, ConversationRecord>();
  private readonly apps = new Map<string, AppIndex>();
  private readonly files = new Map<string, Promise<Low<ConversationFile>>>();
  private seq = 0;
  private lockFile: string;
  /** The LOCK's content as this store wrote it; close() removes only that. */
  private lockText: string | undefined;
  private readonly warn: (message: string) => void;

  constructor(opts: FileStoreOptions) {
    this.dataDir = path.resolve(opts.dataDir);
    this.journal = new Journal(path.join(this.dataDir, 'conversations.jsonl'), { warn: opts.warn });
    this.lockFile = path.join(this.dataDir, 'LOCK');
    this.warn = opts.warn ?? ((m: string) => process.emitWarning(m));
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
    this.lockText = await acquireLock(this.lockFile, this.dataDir);
    try {
      await this.load();
    } catch (err) {
      // Refusing to start must not leave the directory looking in use.
      await this.journal.close().catch(() => {});
      await releaseLock(this.lockFile, this.lockText);
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
    await this.sweep();
    const pending = await this.settle(unfinished);
    // Compact when most lines are superseded versions: start-up time follows live data, not history.
    if (this.journal.lines > 2 * this.records.size + 1_000) {
      await this.journal.compact(() => {
        const entries: JournalEntryT[] = [];
        for (const v of [...this.records.values()].sort((a, b) => a.seq - b.seq)) {
          // An exchange left unsettled keeps its intent, after the record it started from, so that
          // the next start-up settles it against the same base.
          for (const u of pending.get(v.id) ?? []) {
            if (u.base) entries.push({ t: 'conv', v: u.base });
            entries.push({ t: 'intent', v: u.intent, p: u.p });
          }
          entries.push({ t: 'conv', v });
        }
        return entries;
      });
    }
  }

  /**
   * One pass over the data directory and the conversation folders: removes the temporary files a
   * crash left (`*.tmp`; no write is under way, the LOCK is ours), and refuses to start if a
   * conversation file has no record in the journal, which has then lost lines (D-26).
   */
  private async sweep(): Promise<void> {
    const root = path.join(this.dataDir, 'conversations');
    const orphans: string[] = [];
    const scan = async (dir: string, isShard: boolean) => {
      let names: string[];
      try {
        names = await fs.readdir(dir);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') return;
        throw new StoreError(dir, `cannot be read (${code})`);
      }
      for (const name of names) {
        if (name.endsWith('.tmp')) await fs.rm(path.join(dir, name), { force: true });
        else if (isShard && name.endsWith('.json') && !this.records.has(name.slice(0, -5))) orphans.push(path.join(dir, name));
      }
    };
    await scan(this.dataDir, false);
    const shards = await fs.readdir(root).catch(() => [] as string[]);
    await Promise.all(shards.map((s) => scan(path.join(root, s), true)));
    if (orphans.length > 0) {
      orphans.sort();
      const named = orphans.slice(0, 3).map((f) => path.relative(this.dataDir, f)).join(', ');
      throw new StoreError(
        this.journal.file,
        `has no record of ${orphans.length} conversation file${orphans.length === 1 ? '' : 's'} (${named}${orphans.length > 3 ? ', …' : ''}): ` +
          `it has lost lines (cut short, replaced by an older copy, or removed). Restore it from a backup; or, to start without ` +
          `${orphans.length === 1 ? 'that conversation' : 'those conversations'}, move ${orphans.length === 1 ? 'its file' : 'their files'} out of ${root}`,
      );
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

  async close(): Promise<void> {
    // Every write was awaited by its request; only those still under way need waiting for
    // (rewriting cached files here would cost a write each and change nothing).
    await Promise.all(
      [...this.files.values()].map(async (p) => {
        const db = await p.catch(() => undefined);
        if (db) await (db.adapter as AtomicJsonFile<ConversationFile>).idle();
      }),
    );
    await this.journal.close();
    if (this.lockText !== undefined) await releaseLock(this.lockFile, this.lockText);
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

  async putConversation(record: ConversationRecord): Promise<void> {
    await this.journal.append({ t: 'conv', v: record });
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
      list.push({ intent: e.v, p: e.p, base: this.records.get(e.v.id) });
      unfinished.set(e.v.id, list);
      return;
    }
    if (e.p !== undefined) {
      const list = unfinished.get(e.v.id)?.filter((u) => u.p !== e.p);
      if (list?.length) unfinished.set(e.v.id, list);
      else unfinished.delete(e.v.id);
    }
    this.index(e.v);
  }

  /**
   * Exchanges cut by a crash: kept whole if their file write landed, forgotten whole if not. A file
   * that cannot be read affects only its conversation (D-27): its exchanges stay unsettled (returned,
   * and kept by a compaction) until the file can be read, and start-up goes on.
   */
  private async settle(unfinished: Map<string, Unfinished[]>): Promise<Map<string, Unfinished[]>> {
    const pending = new Map<string, Unfinished[]>();
    for (const [id, list] of unfinished) {
      let db: Low<ConversationFile>;
      try {
        db = await this.conversationDb(id);
      } catch (err) {
        pending.set(id, list);
        this.warn(`${(err as Error).message}; the exchange of ${list.map((u) => u.p).join(', ')} cut by a crash stays unsettled until the file can be read (the conversation's reads fail until then)`);
        continue;
      }
      for (const u of list) {
        const landed = db.data.responses.some((r) => r.id === u.p) || db.data.items.some((i) => (i as { response_id?: string }).response_id === u.p);
        if (!landed) continue;
        const current = this.records.get(id);
        const record = u.base && current ? mergeRecord(u.base, u.intent, current) : u.intent;
        await this.journal.append({ t: 'conv', v: record, p: u.p });
        this.index(record);
      }
    }
    return pending;
  }

  async appendToConversation(record: ConversationRecord, items: ItemT[], response?: ResponseRecord, base?: ConversationRecord): Promise<void> {
    const before = base ?? this.records.get(record.id);
    const p = response?.id ?? items[0]?.id;
    // The intent is durable before the file changes: after a crash, start-up knows which file to check.
    if (p !== undefined) await this.journal.append({ t: 'intent', v: record, p });
    const db = await this.conversationDb(record.id);
    // The file first: if a crash falls between the two writes, the record's counters lag by one
    // response but no acknowledged item is lost.
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
    await this.journal.append(p === undefined ? { t: 'conv', v: final } : { t: 'conv', v: final, p });
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
}
