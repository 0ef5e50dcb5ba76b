// The lowdb-backed Store: one small JSON file per conversation, an append-only journal for the
// conversation records, and in-memory indexes rebuilt from the journal at start-up (docs/storage.md).
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { isPlainObject, type ItemT } from '../../contract/index.ts';
import { syncDir, writeDurably } from './durable.ts';
import { CLAIM_TTL_MS } from '../../core/claims.ts';
import { ClaimLog } from './claims.ts';
import { acquireLock, releaseLock } from './dir-lock.ts';
import { HistoryFile, legacyPath } from './history-file.ts';
import { Journal, type LineAt } from './journal.ts';
import { ResponseLog } from './response-log.ts';
import { ConversationRecordSchema, SAFE_ID, isConversationRecord } from '../record.ts';
import { DataFileError } from '../../core/errors.ts';
import type {
  AppCounters,
  ConversationChange,
  History,
  ConversationPage,
  ConversationPageQuery,
  ConversationRecord,
  QuotaAdmit,
  ResponseRecord,
  ResponseSave,
  Store,
} from '../types.ts';
import type { IdempotencyClaim, KeptClaim } from '../../core/claims.ts';

/** An Idempotency-Key claim (see IdempotencyClaim), journaled with the work it ran. */
const Claim = z.object({ k: z.string(), f: z.string(), at: z.number() });
const Id = z.string().regex(SAFE_ID);
/** The fields a `set` or an exchange changes (D-28: a line holds what changed, not the record). */
const Fields = z.strictObject({
  title: z.string().nullable().optional(),
  deleted_at: z.number().int().nullable().optional(),
  generated_title: z.record(z.string(), z.string()).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
/**
 * The journal's lines (docs/storage.md). `conv`: a whole record (a create, a compaction's snapshot,
 * and every change before D-28), `b` the bytes of its history file, `p` the exchange a pre-D-28 line
 * completes. `set`: the fields a rename or a delete changes. `intent`: what an exchange will change
 * (`f`, `n` messages, `b` history bytes), written before the history file; `done` completes it. An
 * intent with no `done` was cut by a crash, and start-up checks the history file to see whether the
 * exchange landed. Before D-28 an intent held the whole record (`v`). `claim`: an Idempotency-Key
 * claim kept by a compaction. The claim `c` rides in both lines of an exchange: it holds exactly when
 * the exchange does.
 */
const Entries = {
  conv: z.object({
    t: z.literal('conv'),
    v: ConversationRecordSchema,
    b: z.number().int().nonnegative().optional(),
    p: z.string().optional(),
    c: Claim.optional(),
  }),
  set: z.object({ t: z.literal('set'), id: Id, f: Fields }),
  intent: z.object({
    t: z.literal('intent'),
    id: Id,
    p: z.string(),
    f: Fields,
    n: z.number().int().nonnegative(),
    b: z.number().int().nonnegative(),
    c: Claim.optional(),
  }),
  intentV1: z.object({ t: z.literal('intent'), v: ConversationRecordSchema, p: z.string(), c: Claim.optional() }),
  done: z.object({ t: z.literal('done'), id: Id, p: z.string(), c: Claim.optional() }),
  claim: z.object({ t: z.literal('claim'), c: Claim }),
};
type ClaimT = z.infer<typeof Claim>;
type FieldsT = z.infer<typeof Fields>;
type EntryT = { [K in keyof typeof Entries]: z.infer<(typeof Entries)[K]> }[keyof typeof Entries];

function schemaOf(e: unknown): z.ZodType<EntryT> | undefined {
  if (!isPlainObject(e)) return undefined;
  if (e.t === 'intent') return ('v' in e ? Entries.intentV1 : Entries.intent) as z.ZodType<EntryT>;
  return typeof e.t === 'string' && Object.hasOwn(Entries, e.t) && e.t !== 'intentV1'
    ? (Entries[e.t as keyof typeof Entries] as z.ZodType<EntryT>)
    : undefined;
}

/** What an exchange changes, as journaled in its intent. */
interface Exchange {
  id: string;
  p: string;
  f: FieldsT;
  n: number;
  b: number;
  c: ClaimT | undefined;
  /** Where its intent line is (its metadata, if it changes it, is read from there). */
  where: LineAt;
  /** A pre-D-28 intent for a conversation with no earlier line: its whole record. */
  whole?: ConversationRecord;
}

/** The usual journal line, checked without zod (see isConversationRecord). */
function isPlainEntry(e: unknown): e is { t: 'conv'; v: ConversationRecord; b?: number } {
  if (!isPlainObject(e) || e.t !== 'conv') return false;
  const keys = Object.keys(e).length;
  return (keys === 2 || (keys === 3 && Number.isSafeInteger(e.b) && (e.b as number) >= 0)) && isConversationRecord(e.v);
}

/** Histories kept parsed in memory, by count and by bytes on disk; a busy one is never evicted. */
const FILE_CACHE_SIZE = 1_000;
const FILE_CACHE_BYTES = 64 * 2 ** 20;

/** Metadata whose journal line is at most this long is kept in memory as JSON text (D-28). */
const INLINE_LINE_BYTES = 512;

/**
 * Where a conversation's metadata is (D-28): its JSON text when short, else the journal line that
 * holds it. Shared by the versions of a record that share the metadata, and moved by a compaction.
 */
interface MetaRef {
  text: string | null;
  at: number;
  len: number;
}
const EMPTY_META: MetaRef = Object.freeze({ text: '{}', at: -1, len: 0 }) as MetaRef;

/**
 * What memory holds of a conversation (D-28): the record without its metadata, which is read from
 * the journal when served (`metadata`, a getter the store defines), and the bytes of its history.
 */
export abstract class StoredConversation implements ConversationRecord {
  declare id: string;
  declare app_id: string;
  declare seq: number;
  declare created_at: number;
  declare external_user_id: string | null;
  declare title: string | null;
  declare generated_title: Record<string, string>;
  declare deleted_at: number | null;
  declare message_count: number;
  /** Bytes of the conversation's history on disk. */
  declare file_bytes: number;
  declare meta: MetaRef;
  abstract get metadata(): Record<string, unknown>;
  /** The whole record, its fields in the order they are always written (see parseLine). */
  toJSON(): ConversationRecord {
    const { id, app_id, seq, created_at, external_user_id, title, generated_title, deleted_at, message_count } = this;
    return { id, app_id, seq, created_at, external_user_id, title, generated_title, metadata: this.metadata, deleted_at, message_count };
  }
}

/** Bytes a conversation occupies as the storage quota counts it (D-27): its record, its history. */
function storedBytes(h: StoredConversation): number {
  if (h.deleted_at !== null) return 0;
  return (h.meta.text === null ? h.meta.len : 256 + h.meta.text.length) + h.file_bytes;
}

/** What a compaction writes for a conversation (deleted ones keep no metadata: never served). */
function lineEstimate(h: StoredConversation): number {
  // A long line was measured; a short one is at most 512 bytes (INLINE_LINE_BYTES) with its metadata.
  if (h.meta.text === null && h.deleted_at === null) return h.meta.len;
  let n = 160 + h.id.length + h.app_id.length + (h.title?.length ?? 4) * 3 + (h.external_user_id?.length ?? 4) * 3;
  for (const [k, v] of Object.entries(h.generated_title)) n += 6 + (k.length + v.length) * 3;
  return n + (h.deleted_at === null ? (h.meta.text?.length ?? 2) : 2);
}

class AppIndex {
  constructor(readonly id: string) {}
  /** Creation order (ascending `seq`), soft-deleted included: their ids stay valid cursors (D-11). */
  readonly all: StoredConversation[] = [];
  readonly byUser = new Map<string, StoredConversation[]>();
  readonly counters: AppCounters = { conversations: 0, messages: 0, users: 0 };
  /** Bytes of its live conversations (the storage quota, D-27). */
  bytes = 0;
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
  /**
   * D-28: the journal is compacted once it is larger than `factor` × its live records plus `slackBytes`
   * (defaults 2 and 4 MiB; tests lower them).
   */
  compaction?: { factor?: number; slackBytes?: number };
  /** D-29: bytes of histories kept parsed in memory (default 64 MiB; tests lower it). */
  historyCacheBytes?: number;
  /** Tests: runs once a compaction has written its new file, before it takes the journal's place. */
  holdCompaction?: () => Promise<void>;
  /** Told when a compaction while running fails (the longer journal still holds everything). */
  onCompactionError?: (err: Error) => void;
  /** D-36: how long a response's events stay resumable after its end (default RESPONSE_EVENTS_TTL_MS). */
  responseEventsTtlMs?: number;
}

export class FileStore implements Store {
  readonly dataDir: string;
  private readonly journal: Journal;
  private readonly records = new Map<string, StoredConversation>();
  private readonly apps = new Map<string, AppIndex>();
  private readonly files = new Map<string, Promise<HistoryFile>>();
  private seq = 0;
  private lockFile: string;
  /** The LOCK's content as this store wrote it; close() removes only that. */
  private lockText: string | undefined;
  /** The last queued change of each conversation being changed (see `inTurn`). */
  private readonly turns = new Map<string, Promise<unknown>>();
  /** Idempotency-Key claims of the exchanges saved (see `idempotencyClaims`), oldest first. */
  private readonly claims = new ClaimLog();
  /** Builds the in-memory form of a record (a class whose `metadata` reads this store's journal). */
  private readonly Stored: new () => StoredConversation;
  /** Intents journaled whose `done` is not (a failed write): a compaction keeps them for start-up to settle. */
  private readonly openIntents = new Map<string, Exchange>();
  /** What a compaction would write (see lineEstimate): the journal is compacted at a multiple of it. */
  private liveBytes = 0;
  private compacting: Promise<void> | undefined;
  /** The journal's size right after the last compaction. */
  private compactedBytes = 0;
  /** Live responses and their events (resumable responses: src/store/response-log.ts). */
  /** Resumable responses (D-30…D-39), kept apart: src/store/response-log.ts. */
  readonly responses: ResponseLog;
  /** One process owns the directory (its LOCK): start-up saves what the last one left, no sweep. */
  readonly sweepMs = undefined;

  constructor(private readonly opts: FileStoreOptions) {
    this.dataDir = path.resolve(opts.dataDir);
    this.journal = new Journal(path.join(this.dataDir, 'conversations.jsonl'), { warn: opts.warn, parse: parseLine });
    this.lockFile = path.join(this.dataDir, 'LOCK');
    const store = this;
    this.Stored = class extends StoredConversation {
      get metadata(): Record<string, unknown> {
        return store.metadataOf(this);
      }
    };
    this.responses = new ResponseLog({ dir: path.join(this.dataDir, 'responses'), ttlMs: opts.responseEventsTtlMs, warn: opts.warn });
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
      await this.journal.close().catch(() => {});
      await releaseLock(this.lockFile, this.lockText);
      throw err;
    }
  }

  private async load(): Promise<void> {
    const unfinished = new Map<string, Exchange>();
    await this.journal.open((entry, line, where) => {
      if (isPlainEntry(entry)) {
        this.checkVersion(entry.v, line);
        this.index(this.fromRecord(entry.v, where, entry.b ?? 0));
        return;
      }
      const schema = schemaOf(entry);
      const parsed = schema ? schema.safeParse(entry) : Entries.conv.safeParse(entry);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new DataFileError(this.journal.file, `line ${line}: ${issue.path.join('.') || 'entry'}: ${issue.message}`);
      }
      this.replay(parsed.data, line, where, unfinished);
    });
    await this.sweep();
    await this.settle(unfinished);
    // Compact when most of the journal is superseded: start-up time follows live data, not history.
    if (this.compactionDue()) await this.compact();
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
    if (holder && holder.seq === v.seq && holder.id !== v.id)
      throw this.badLine(line, `v.seq: ${v.seq} is already the seq of ${holder.id} (each conversation has its own)`);
    const prev = this.records.get(v.id);
    if (!prev) return;
    for (const field of ['app_id', 'seq', 'created_at'] as const) {
      if (v[field] !== prev[field]) {
        throw this.badLine(
          line,
          `v.${field}: ${JSON.stringify(v[field])} differs from ${JSON.stringify(prev[field])} in an earlier line of ${v.id} (it never changes)`,
        );
      }
    }
  }

  private badLine(line: number, detail: string): DataFileError {
    return new DataFileError(this.journal.file, `line ${line}: ${detail}; restore the file from a backup or fix that line`);
  }

  async close(): Promise<void> {
    while (this.compacting) await this.compacting;
    // Every write was awaited by its request; only those still under way need waiting for.
    await Promise.all(
      [...this.files.values()].map(async (p) => {
        const h = await p.catch(() => undefined);
        if (h) await h.idle();
      }),
    );
    await this.responses.close();
    await this.journal.close();
    if (this.lockText !== undefined) await releaseLock(this.lockFile, this.lockText);
  }

  // The reads answer from the in-memory index: resolved promises, no other work.
  nextSeq(): Promise<number> {
    return Promise.resolve(++this.seq);
  }

  getConversation(id: string): Promise<ConversationRecord | undefined> {
    return Promise.resolve(this.records.get(id));
  }

  /** The apps that have conversations, sorted (for exports: src/store/port). */
  appIds(): string[] {
    return [...this.apps.keys()].sort();
  }

  /** Every conversation of an app (soft-deleted included), in creation order; optionally one user's (imports, tools). */
  conversationsOf(appId: string, externalUserId?: string): readonly ConversationRecord[] {
    const app = this.apps.get(appId);
    if (!app) return [];
    return externalUserId === undefined ? app.all : (app.byUser.get(externalUserId) ?? []);
  }

  listConversations(appId: string, q: ConversationPageQuery): Promise<ConversationPage | undefined> {
    const all = this.conversationsOf(appId, q.externalUserId);
    const up = q.direction === 'up';
    let start = up ? 0 : all.length - 1;
    if (q.cursor !== undefined) {
      const cursor = this.records.get(q.cursor);
      if (!cursor || cursor.app_id !== appId) return Promise.resolve(undefined);
      // Seqs are unique within an app (checkVersion), so a position by seq is one by (seq, id).
      start = up ? seqIndex(all, cursor.seq + 1) : seqIndex(all, cursor.seq) - 1;
    }
    const records: ConversationRecord[] = [];
    let hasMore = false;
    for (let i = start, step = up ? 1 : -1; i >= 0 && i < all.length; i += step) {
      const r = all[i]!;
      if (r.deleted_at !== null) continue;
      if (records.length === q.limit) {
        hasMore = true;
        break;
      }
      records.push(r);
    }
    return Promise.resolve({ records, hasMore });
  }

  appCounters(appId: string): Promise<AppCounters> {
    return Promise.resolve({ ...(this.apps.get(appId)?.counters ?? { conversations: 0, messages: 0, users: 0 }) });
  }

  storedBytes(appId: string): Promise<number> {
    return Promise.resolve(this.apps.get(appId)?.bytes ?? 0);
  }

  /** D-28: a conversation's metadata, read from where it is (memory if short, else its journal line). */
  private metadataOf(h: StoredConversation): Record<string, unknown> {
    const { text, at, len } = h.meta;
    if (text !== null) return JSON.parse(text) as Record<string, unknown>;
    const e = JSON.parse(this.journal.readAt({ at, len })) as { id?: string; v?: ConversationRecord; f?: FieldsT };
    const metadata = e.v?.metadata ?? e.f?.metadata;
    if ((e.v?.id ?? e.id) === h.id && isPlainObject(metadata)) return metadata;
    // A version of the record kept past a compaction that moved its line: the current one's.
    const current = this.records.get(h.id);
    if (current && current !== h && current.meta !== h.meta) return this.metadataOf(current);
    throw new DataFileError(this.journal.file, `byte ${at}: not the metadata of ${h.id}`);
  }

  async putConversation(record: ConversationRecord, claim?: IdempotencyClaim, admit?: QuotaAdmit): Promise<void> {
    admit?.(this.apps.get(record.app_id)?.bytes ?? 0);
    const c = claim && { k: claim.key, f: claim.fingerprint, at: Date.now() };
    // Indexed once durable (nothing is listed that a crash could take back), before any later line.
    await this.journal.append(c ? { t: 'conv', v: record, c } : { t: 'conv', v: record }, (where) => {
      if (c) this.claims.add({ key: c.k, fingerprint: c.f, at: c.at });
      this.index(this.fromRecord(record, where, this.records.get(record.id)?.file_bytes ?? 0));
    });
    this.compactIfDue();
  }

  async readHistory(id: string): Promise<History & { bytes: number }> {
    const h = await this.history(id);
    return { items: h.items, responses: h.responses, bytes: h.bytes };
  }

  /** The in-memory form of a whole record whose line is at `where`. */
  private fromRecord(v: ConversationRecord, where: LineAt, fileBytes: number): StoredConversation {
    const s = new this.Stored();
    s.id = v.id;
    // One string per app, not one per conversation.
    s.app_id = this.apps.get(v.app_id)?.id ?? v.app_id;
    s.seq = v.seq;
    s.created_at = v.created_at;
    s.external_user_id = v.external_user_id;
    s.title = v.title;
    s.generated_title = v.generated_title;
    s.deleted_at = v.deleted_at;
    s.message_count = v.message_count;
    s.file_bytes = fileBytes;
    s.meta = metaRef(v.metadata, where);
    return s;
  }

  /** A new version of `h` with `f` applied (metadata from the line at `where`). */
  private changed(h: StoredConversation, f: FieldsT, n: number, b: number, where?: LineAt): StoredConversation {
    const s = new this.Stored();
    Object.assign(s, h);
    if (f.title !== undefined) s.title = f.title;
    if (f.deleted_at !== undefined) s.deleted_at = f.deleted_at;
    if (f.generated_title !== undefined) s.generated_title = f.generated_title;
    if (f.metadata !== undefined) s.meta = metaRef(f.metadata, where);
    s.message_count += n;
    s.file_bytes += b;
    return s;
  }

  private replay(e: EntryT, line: number, where: LineAt, unfinished: Map<string, Exchange>): void {
    const known = (id: string) => {
      const h = this.records.get(id);
      if (!h) throw this.badLine(line, `${id} has no earlier line (a change of a conversation that was never created)`);
      return h;
    };
    switch (e.t) {
      case 'conv':
        this.checkVersion(e.v, line);
        // A pre-D-28 completion: its record is whole.
        if (e.p !== undefined) unfinished.delete(e.p);
        if (e.c) this.claims.add({ key: e.c.k, fingerprint: e.c.f, at: e.c.at });
        this.index(this.fromRecord(e.v, where, e.b ?? this.records.get(e.v.id)?.file_bytes ?? 0));
        return;
      case 'set':
        this.index(this.changed(known(e.id), e.f, 0, 0, where));
        return;
      case 'intent':
        if ('v' in e) {
          // Pre-D-28: the whole record the exchange would give; what it changes is what differs.
          this.checkVersion(e.v, line);
          const base = this.records.get(e.v.id);
          const f: FieldsT = { metadata: e.v.metadata };
          if (base && JSON.stringify(base.generated_title) !== JSON.stringify(e.v.generated_title)) f.generated_title = e.v.generated_title;
          if (base && base.title !== e.v.title) f.title = e.v.title;
          unfinished.set(e.p, {
            id: e.v.id,
            p: e.p,
            f,
            n: e.v.message_count - (base?.message_count ?? 0),
            b: 0,
            c: e.c,
            where,
            whole: base ? undefined : e.v,
          });
        } else {
          known(e.id);
          unfinished.set(e.p, { id: e.id, p: e.p, f: e.f, n: e.n, b: e.b, c: e.c, where });
        }
        return;
      case 'done': {
        const x = unfinished.get(e.p);
        if (!x || x.id !== e.id) throw this.badLine(line, `p: no earlier intent of ${e.id} for ${e.p}`);
        unfinished.delete(e.p);
        if (e.c) this.claims.add({ key: e.c.k, fingerprint: e.c.f, at: e.c.at });
        this.index(this.changed(known(e.id), x.f, x.n, x.b, x.where));
        return;
      }
      case 'claim':
        this.claims.add({ key: e.c.k, fingerprint: e.c.f, at: e.c.at });
        return;
    }
  }

  /**
   * One pass over the data directory and the conversation folders: removes the temporary files a
   * crash left (`*.tmp`; no write is under way, the LOCK is ours), and refuses to start if a history
   * file has no record in the journal, which has then lost lines (D-25).
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
        throw new DataFileError(dir, `cannot be read (${code})`);
      }
      for (const name of names) {
        if (name.endsWith('.tmp')) await fs.rm(path.join(dir, name), { force: true });
        else if (isShard) {
          const id = name.endsWith('.jsonl') ? name.slice(0, -6) : name.endsWith('.json') ? name.slice(0, -5) : undefined;
          if (id !== undefined && !this.records.has(id)) orphans.push(path.join(dir, name));
        }
      }
    };
    await scan(this.dataDir, false);
    const shards = await fs.readdir(root).catch(() => [] as string[]);
    await Promise.all(shards.map((s) => scan(path.join(root, s), true)));
    if (orphans.length > 0) {
      orphans.sort();
      const named = orphans
        .slice(0, 3)
        .map((f) => path.relative(this.dataDir, f))
        .join(', ');
      throw new DataFileError(
        this.journal.file,
        `has no record of ${orphans.length} conversation file${orphans.length === 1 ? '' : 's'} (${named}${orphans.length > 3 ? ', …' : ''}): ` +
          `it has lost lines (cut short, replaced by an older copy, or removed). Restore it from a backup; or, to start without ` +
          `${orphans.length === 1 ? 'that conversation' : 'those conversations'}, move ${orphans.length === 1 ? 'its file' : 'their files'} out of ${root}`,
      );
    }
  }

  /**
   * Exchanges cut by a crash: kept whole if their history write landed, forgotten whole if not. A
   * history that cannot be read affects only its conversation (D-25): its exchange stays open (kept by
   * a compaction) until the file can be read, and start-up goes on.
   */
  private async settle(unfinished: Map<string, Exchange>): Promise<void> {
    for (const x of unfinished.values()) {
      let h: HistoryFile;
      try {
        h = await this.history(x.id);
      } catch (err) {
        this.openIntents.set(x.p, x);
        (this.opts.warn ?? ((m: string) => process.emitWarning(m)))(
          `${(err as Error).message}; the exchange ${x.p} cut by a crash stays unsettled until the file can be read (the conversation's reads fail until then)`,
        );
        continue;
      }
      const landed = h.responses.some((r) => r.id === x.p) || h.items.some((i) => (i as { response_id?: string }).response_id === x.p);
      if (!landed) continue;
      if (x.whole && !this.records.has(x.id)) {
        const v = x.whole;
        await this.journal.append({ t: 'conv', v }, (where) => this.index(this.fromRecord(v, where, 0)));
      }
      await this.journal.append(x.c ? { t: 'done', id: x.id, p: x.p, c: x.c } : { t: 'done', id: x.id, p: x.p }, () => {
        if (x.c) this.claims.add({ key: x.c.k, fingerprint: x.c.f, at: x.c.at });
        this.index(this.changed(this.records.get(x.id)!, x.f, x.n, x.b, x.where));
      });
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

  updateConversation(id: string, change: (current: ConversationRecord | undefined) => ConversationChange): Promise<ConversationRecord> {
    return this.inTurn(id, async () => {
      const current = this.records.get(id);
      const next = change(current);
      if (!current) throw new Error(`updateConversation: no conversation ${id}`);
      const { f } = this.diff(current, next);
      if (Object.keys(f).length === 0) return current;
      // D-28: only what changed is appended (a rename is its title, not the 16 KB record).
      await this.journal.append({ t: 'set', id, f }, (where) => this.index(this.changed(this.records.get(id)!, f, 0, 0, where)));
      if (f.deleted_at != null && current.deleted_at === null) await this.dropHistory(id);
      this.compactIfDue();
      return this.records.get(id)!;
    });
  }

  /** D-27: a deleted conversation's history is never served again: its files go, freeing its quota. */
  private async dropHistory(id: string): Promise<void> {
    const file = this.historyPath(id);
    const cached = this.files.get(id);
    this.files.delete(id);
    await cached?.then((h) => h.idle()).catch(() => {});
    await fs.rm(file, { force: true }).catch(() => {});
    await fs.rm(legacyPath(file), { force: true }).catch(() => {});
  }

  /** The fields of `next` that differ from `current` (message_count as a difference). */
  private diff(current: StoredConversation, next: ConversationChange): { f: FieldsT; n: number } {
    const f: FieldsT = {};
    if (next.title !== undefined && next.title !== current.title) f.title = next.title;
    if (next.deleted_at !== undefined && next.deleted_at !== current.deleted_at) f.deleted_at = next.deleted_at;
    if (next.generated_title !== undefined && JSON.stringify(next.generated_title) !== JSON.stringify(current.generated_title))
      f.generated_title = next.generated_title;
    // Compared only when given as its own property (a copy of a stored record has none: it is read on demand).
    if (
      Object.hasOwn(next, 'metadata') &&
      next.metadata !== undefined &&
      JSON.stringify(next.metadata) !== JSON.stringify(current.metadata)
    )
      f.metadata = next.metadata;
    const n = next.message_count === undefined ? 0 : next.message_count - current.message_count;
    return { f, n };
  }

  saveResponse(save: ResponseSave): Promise<ConversationRecord> {
    return this.inTurn(save.conversationId, async () => {
      const current = this.records.get(save.conversationId);
      if (!current) throw new Error(`saveResponse: no conversation ${save.conversationId}`);
      // Deleted while the response ran: its history is gone and is not started again.
      if (current.deleted_at !== null) return current;
      const { f, n } = this.diff(current, save.apply(current));
      await this.appendExchange(current.id, f, n, save.items, save.response, save.claim);
      return this.records.get(save.conversationId)!;
    });
  }

  idempotencyClaims(since: number): Promise<KeptClaim[]> {
    return Promise.resolve(this.claims.since(since));
  }

  /** The exchange path without a turn or a claim: imports and tests that write history directly. */
  appendToConversation(record: ConversationRecord, items: ItemT[], response?: ResponseRecord, base?: ConversationRecord): Promise<void> {
    const current = this.records.get(record.id);
    if (!current) return Promise.reject(new Error(`appendToConversation: no conversation ${record.id}`));
    const { f } = this.diff(current, { ...record, message_count: undefined });
    // Fields `record` changed from `base` win; the others keep what landed meanwhile.
    if (base) {
      if (f.title !== undefined && base.title === record.title) delete f.title;
      if (f.generated_title !== undefined && JSON.stringify(base.generated_title) === JSON.stringify(record.generated_title))
        delete f.generated_title;
    }
    return this.appendExchange(record.id, f, record.message_count - (base ?? current).message_count, items, response);
  }

  private async appendExchange(
    id: string,
    f: FieldsT,
    n: number,
    items: ItemT[],
    response?: ResponseRecord,
    claim?: IdempotencyClaim,
  ): Promise<void> {
    const p = response?.id ?? items[0]?.id ?? `x_${Date.now()}`;
    // Read first: a damaged history refuses the exchange before anything is written.
    const h = await this.history(id);
    // §4.3: the history is sorted chronologically. An exchange is stamped when its request started but
    // lands when it is saved, so one that started earlier may land later: it takes the last item's time.
    let last = h.items.at(-1)?.created_at ?? 0;
    for (const item of items) last = item.created_at = Math.max(item.created_at, last);
    const part: History = { items, responses: response ? [response] : [] };
    const b = Buffer.byteLength(JSON.stringify(part)) + 1;
    // The claim rides in both journal lines of the exchange: it holds exactly when the exchange does.
    const c = claim ? { k: claim.key, f: claim.fingerprint, at: Date.now() } : undefined;
    const intent = { t: 'intent', id, p, f, n, b, ...(c ? { c } : {}) };
    // The intent is durable before the history changes: after a crash, start-up knows which file to check.
    const where = await this.journal.append(intent);
    const x: Exchange = { id, p, f, n, b, c, where };
    this.openIntents.set(p, x);
    try {
      await h.append(part);
    } catch (err) {
      // Nothing acknowledged: the history is read again from disk when next needed.
      this.files.delete(id);
      this.openIntents.delete(p);
      throw err;
    }
    await this.journal.append(c ? { t: 'done', id, p, c } : { t: 'done', id, p }, () => {
      this.openIntents.delete(p);
      if (c) this.claims.add({ key: c.k, fingerprint: c.f, at: c.at });
      this.index(this.changed(this.records.get(id)!, f, n, b, where));
    });
    this.compactIfDue();
  }

  /**
   * The bulk path (seeding, imports): many new conversations with their histories, at the cost of
   * one fsync per file instead of a write and a folder sync each. Every file is written
   * temp → fsync → rename, the folders are synced once, and only then are the records appended to
   * the journal in one group commit, which is the commit point: a crash before it leaves at most
   * files that no record points to. Resolves once everything is durable; nothing is indexed before.
   */
  async importConversations(entries: ReadonlyArray<{ record: ConversationRecord; file?: History }>, concurrency = 16): Promise<void> {
    const ids = new Set<string>();
    for (const { record } of entries) {
      if (!SAFE_ID.test(record.id)) throw new Error(`importConversations: ${JSON.stringify(record.id)} cannot name a file`);
      if (this.records.has(record.id) || ids.has(record.id))
        throw new Error(`importConversations: conversation ${record.id} already exists`);
      ids.add(record.id);
    }
    const dirs = new Set<string>();
    const sizes = new Map<string, number>();
    let next = 0;
    const worker = async () => {
      while (next < entries.length) {
        const { record, file } = entries[next++]!;
        // A conversation without history has no file, as one created and never used.
        if (!file) continue;
        const target = this.historyPath(record.id);
        dirs.add(path.dirname(target));
        const text = `${JSON.stringify(file)}\n`;
        sizes.set(record.id, Buffer.byteLength(text));
        await writeDurably(target, text);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, entries.length) }, worker));
    await Promise.all([...dirs].map(syncDir));
    await Promise.all(
      entries.map(({ record }) => {
        const b = sizes.get(record.id) ?? 0;
        return this.journal.append(b > 0 ? { t: 'conv', v: record, b } : { t: 'conv', v: record }, (where) =>
          this.index(this.fromRecord(record, where, b)),
        );
      }),
    );
    this.compactIfDue();
  }

  private historyPath(id: string): string {
    // Shard by the id's last two characters so that no folder holds 100,000 files.
    return path.join(this.dataDir, 'conversations', id.slice(-2), `${id}.jsonl`);
  }

  private history(id: string): Promise<HistoryFile> {
    let p = this.files.get(id);
    if (p) {
      // Most recently used goes last.
      this.files.delete(id);
      this.files.set(id, p);
      return p;
    }
    p = HistoryFile.read(this.historyPath(id));
    this.files.set(id, p);
    p.catch(() => this.files.delete(id));
    void p.then(
      (h) => {
        loaded.set(p, h);
        this.evict();
      },
      () => {},
    );
    return p;
  }

  /**
   * Drops the least recently used histories beyond the cache's count or bytes (the map iterates
   * oldest first); one being written is kept, so reads see its writes.
   */
  private evict(): void {
    let count = this.files.size;
    let bytes = 0;
    const ready: Array<[string, HistoryFile]> = [];
    for (const [id, p] of this.files) {
      const h = loaded.get(p);
      if (h) {
        bytes += h.bytes;
        ready.push([id, h]);
      }
    }
    for (const [id, h] of ready) {
      if (count <= FILE_CACHE_SIZE && bytes <= (this.opts.historyCacheBytes ?? FILE_CACHE_BYTES)) break;
      if (h.busy) continue;
      this.files.delete(id);
      count--;
      bytes -= h.bytes;
    }
  }

  private compactionDue(): boolean {
    const factor = this.opts.compaction?.factor ?? 2;
    const slack = this.opts.compaction?.slackBytes ?? 4 * 2 ** 20;
    // Never below what the last compaction wrote (as Redis rewrites its AOF): an estimate that falls
    // short cannot make compactions follow one another.
    return this.journal.bytes > factor * Math.max(this.liveBytes, this.compactedBytes) + slack;
  }

  /** D-28: compaction while running, once the journal passes its multiple of the live records. */
  private compactIfDue(): void {
    if (this.compacting || !this.compactionDue()) return;
    this.compacting = this.compact()
      .catch((err: Error) => this.opts.onCompactionError?.(err))
      .finally(() => {
        this.compacting = undefined;
      });
  }

  /**
   * Rewrites the journal as one `conv` line per conversation (deleted ones without metadata), the
   * claims still honoured and the intents not yet completed, while requests go on (Journal.rewrite).
   */
  private async compact(): Promise<void> {
    let heads: StoredConversation[] = [];
    let claims: KeptClaim[] = [];
    let intents: Exchange[] = [];
    const moved = new Map<MetaRef, LineAt>();
    const movedIntents = new Map<Exchange, LineAt>();
    await this.journal.rewrite(
      () => {
        heads = [...this.records.values()];
        claims = this.claims.since(Date.now() - CLAIM_TTL_MS);
        intents = [...this.openIntents.values()];
      },
      async (out) => {
        for (let i = 0; i < heads.length; i++) {
          const h = heads[i]!;
          const v: ConversationRecord = { ...h.toJSON() };
          if (h.deleted_at !== null) v.metadata = {};
          const where = await out(JSON.stringify(h.file_bytes > 0 ? { t: 'conv', v, b: h.file_bytes } : { t: 'conv', v }));
          if (h.meta.text === null && h.deleted_at === null) moved.set(h.meta, where);
          // Requests go on between batches.
          if (i % 512 === 511) await new Promise((r) => setImmediate(r));
        }
        for (const c of claims) await out(JSON.stringify({ t: 'claim', c: { k: c.key, f: c.fingerprint, at: c.at } }));
        for (const x of intents) movedIntents.set(x, await out(this.journal.readAt(x.where)));
      },
      (cut, start) => {
        const move = (w: LineAt, to: LineAt | undefined) => {
          if (w.at >= cut) w.at = w.at - cut + start;
          else if (to) Object.assign(w, { at: to.at, len: to.len });
        };
        for (const h of this.records.values()) {
          if (h.meta.text !== null) continue;
          if (h.meta.at < cut && !moved.has(h.meta)) {
            // Deleted before the snapshot: its metadata is never served again.
            h.meta = EMPTY_META;
            continue;
          }
          move(h.meta, moved.get(h.meta));
        }
        for (const x of this.openIntents.values()) move(x.where, movedIntents.get(x));
      },
      this.opts.holdCompaction,
    );
    this.compactedBytes = this.journal.bytes;
  }

  private index(record: StoredConversation): void {
    const prev = this.records.get(record.id);
    this.records.set(record.id, record);
    if (record.seq > this.seq) this.seq = record.seq;
    let app = this.apps.get(record.app_id);
    if (!app) {
      app = new AppIndex(record.app_id);
      this.apps.set(record.app_id, app);
    }
    upsertBySeq(app.all, record);
    if (!prev) app.counters.conversations++;
    app.counters.messages += record.message_count - (prev?.message_count ?? 0);
    app.bytes += storedBytes(record) - (prev ? storedBytes(prev) : 0);
    this.liveBytes += lineEstimate(record) - (prev ? lineEstimate(prev) : 0);
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

/**
 * Where the metadata of a record whose line is at `where` is kept (D-28). A long line is always read
 * back from the journal: start-up did not parse its metadata (see parseLine).
 */
function metaRef(metadata: Record<string, unknown>, where: LineAt | undefined): MetaRef {
  if (where && where.len > INLINE_LINE_BYTES) return { text: null, at: where.at, len: where.len };
  // The common case, and every deleted conversation after a compaction: nothing to read.
  if (Object.keys(metadata).length === 0) return EMPTY_META;
  return { text: JSON.stringify(metadata), at: -1, len: 0 };
}

const META_KEY = '"metadata":';
const AFTER_META = ',"deleted_at":';

/**
 * Start-up's parser of a journal line. A long `conv` line is parsed without its metadata (up to 16 KB
 * that memory does not keep, D-28; parsing 16 KB of `[{},{},…]` costs ~0.7 ms, 70 s for 100,000):
 * records are written with `metadata` just before `deleted_at`, and a JSON string cannot hold an
 * unescaped quote, so the first `"metadata":` key and the last `,"deleted_at":` key bound it. The
 * metadata is checked when it is read. Anything else, or a line that is then not a well-formed
 * record, is parsed whole.
 */
export function parseLine(raw: string): unknown {
  if (raw.length > INLINE_LINE_BYTES && raw.startsWith('{"t":"conv","v":{')) {
    const i = raw.indexOf(META_KEY);
    const j = raw.lastIndexOf(AFTER_META);
    if (i > 0 && j > i) {
      try {
        const e = JSON.parse(`${raw.slice(0, i + META_KEY.length)}{}${raw.slice(j)}`) as unknown;
        if (isPlainEntry(e)) return e;
      } catch {
        // Not the usual shape: parsed whole below.
      }
    }
  }
  return JSON.parse(raw);
}

/** The histories read so far, by their promise (for the cache's count of bytes). */
const loaded = new WeakMap<Promise<HistoryFile>, HistoryFile>();
