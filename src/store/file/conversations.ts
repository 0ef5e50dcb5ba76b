// The file store's in-memory index (D-28): every conversation's record without its metadata, by id,
// by app in creation order and by user, with each app's counters and stored bytes; rebuilt from the
// journal at start-up, changed only once a line is durable.
import { isPlainObject } from '../../contract/index.ts';
import { DataFileError } from '../../core/errors.ts';
import type { AppCounters, ConversationPageQuery, ConversationRecord } from '../types.ts';
import type { Journal } from './journal.ts';
import type { LineAt } from './journal-io.ts';
import { type FieldsT, INLINE_LINE_BYTES } from './lines.ts';

/**
 * Where a conversation's metadata is (D-28): its JSON text when short, else the journal line that
 * holds it. Shared by the versions of a record that share the metadata, and moved by a compaction.
 */
export interface MetaRef {
  text: string | null;
  at: number;
  len: number;
}
export const EMPTY_META: MetaRef = Object.freeze({ text: '{}', at: -1, len: 0 }) as MetaRef;

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
  /** D-73: when a deleted conversation's history was purged (null: live, or deleted and kept). */
  declare purged_at: number | null;
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

/** Bytes of a conversation's record and history (D-27 counts a live one's, D-73 bounds deleted ones kept). */
function bytesOf(h: StoredConversation): number {
  return (h.meta.text === null ? h.meta.len : 256 + h.meta.text.length) + h.file_bytes;
}

/** Bytes a conversation occupies as the storage quota counts it (D-27): its record, its history. */
function storedBytes(h: StoredConversation): number {
  return h.deleted_at !== null ? 0 : bytesOf(h);
}

/** D-73: bytes a deleted conversation keeps until its history is purged (outside the quota, bounded per app). */
function keptBytes(h: StoredConversation): number {
  return h.deleted_at !== null && h.purged_at === null ? bytesOf(h) : 0;
}

/** What a compaction writes for a conversation (purged ones keep no metadata, D-73). */
function lineEstimate(h: StoredConversation): number {
  // A long line was measured; a short one is at most 512 bytes (INLINE_LINE_BYTES) with its metadata.
  if (h.meta.text === null && h.purged_at === null) return h.meta.len;
  let n = 160 + h.id.length + h.app_id.length + (h.title?.length ?? 4) * 3 + (h.external_user_id?.length ?? 4) * 3;
  for (const [k, v] of Object.entries(h.generated_title)) n += 6 + (k.length + v.length) * 3;
  return n + (h.purged_at === null ? (h.meta.text?.length ?? 2) : 2);
}

class AppIndex {
  constructor(readonly id: string) {}
  /** Creation order (ascending `seq`), soft-deleted included: their ids stay valid cursors (D-11). */
  readonly all: StoredConversation[] = [];
  readonly byUser = new Map<string, StoredConversation[]>();
  readonly counters: AppCounters = { conversations: 0, messages: 0, users: 0 };
  /** Bytes of its live conversations (the storage quota, D-27). */
  bytes = 0;
  /** D-73: bytes of its deleted conversations whose history is kept. */
  kept = 0;
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

export class ConversationIndex {
  readonly records = new Map<string, StoredConversation>();
  private readonly apps = new Map<string, AppIndex>();
  /** The highest seq indexed (D-7: the next one is never lower). */
  seq = 0;
  /** What a compaction would write (see lineEstimate): the journal is compacted at a multiple of it. */
  liveBytes = 0;

  /** `Stored` builds the in-memory form of a record (a class whose `metadata` reads the store's journal). */
  constructor(private readonly Stored: new () => StoredConversation) {}

  /** Puts a version of a conversation in place of the one before it, in every index and count. */
  add(record: StoredConversation): void {
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
    app.kept += keptBytes(record) - (prev ? keptBytes(prev) : 0);
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

  /**
   * The in-memory form of a whole record whose line is at `where`. D-73: `purgedAt` as its line says;
   * absent, a deleted one was purged as it was deleted (the earlier release's delete, D-117, or an
   * import's of a deleted conversation without history).
   */
  fromRecord(v: ConversationRecord, where: LineAt, fileBytes: number, purgedAt?: number | null): StoredConversation {
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
    s.purged_at = v.deleted_at === null ? null : purgedAt === undefined ? v.deleted_at : purgedAt;
    s.file_bytes = s.purged_at === null ? fileBytes : 0;
    s.meta = metaRef(v.metadata, where);
    return s;
  }

  /** A new version of `h` with `f` applied (metadata from the line at `where`). */
  changed(h: StoredConversation, f: FieldsT, n: number, b: number, where?: LineAt): StoredConversation {
    const s = new this.Stored();
    Object.assign(s, h);
    if (f.title !== undefined) s.title = f.title;
    if (f.deleted_at !== undefined) {
      s.deleted_at = f.deleted_at;
      // D-73: a delete's line says whether its history is kept (null) or purged (lines.ts checks it holds one).
      s.purged_at = f.deleted_at === null ? null : (f.purged_at ?? null);
    } else if (f.purged_at !== undefined) s.purged_at = f.purged_at;
    if (f.generated_title !== undefined) s.generated_title = f.generated_title;
    if (f.metadata !== undefined) s.meta = metaRef(f.metadata, where);
    s.message_count += n;
    s.file_bytes = s.purged_at === null ? s.file_bytes + b : 0;
    return s;
  }

  /**
   * The rules between lines, for a hand-edited journal: a record's app, seq and creation time never
   * change, and no two conversations of an app share a seq. The indexes assume both; breaking either
   * would hide a conversation from its list or leave it in another app's. Checked against the index
   * itself (a lookup by seq in the app's list), so start-up keeps no second map of 100,000 entries.
   * Says what is wrong, if anything.
   */
  checkVersion(v: ConversationRecord): string | undefined {
    const list = this.apps.get(v.app_id)?.all;
    const holder = list?.[seqIndex(list, v.seq)];
    if (holder && holder.seq === v.seq && holder.id !== v.id)
      return `v.seq: ${v.seq} is already the seq of ${holder.id} (each conversation has its own)`;
    const prev = this.records.get(v.id);
    if (!prev) return undefined;
    for (const field of ['app_id', 'seq', 'created_at'] as const) {
      if (v[field] !== prev[field])
        return `v.${field}: ${JSON.stringify(v[field])} differs from ${JSON.stringify(prev[field])} in an earlier line of ${v.id} (it never changes)`;
    }
    return undefined;
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

  /**
   * One page of an app's conversations that `keep` accepts (default: live ones, D-12); undefined when
   * the cursor is not this app's.
   */
  page(
    appId: string,
    q: ConversationPageQuery,
    keep: (r: StoredConversation) => boolean = (r) => r.deleted_at === null,
  ): { records: StoredConversation[]; hasMore: boolean } | undefined {
    const all = this.conversationsOf(appId, q.externalUserId);
    const up = q.direction === 'up';
    let start = up ? 0 : all.length - 1;
    if (q.cursor !== undefined) {
      const cursor = this.records.get(q.cursor);
      if (!cursor || cursor.app_id !== appId) return undefined;
      // Seqs are unique within an app (checkVersion), so a position by seq is one by (seq, id).
      start = up ? seqIndex(all, cursor.seq + 1) : seqIndex(all, cursor.seq) - 1;
    }
    const records: StoredConversation[] = [];
    let hasMore = false;
    for (let i = start, step = up ? 1 : -1; i >= 0 && i < all.length; i += step) {
      const r = all[i]! as StoredConversation;
      if (!keep(r)) continue;
      if (records.length === q.limit) {
        hasMore = true;
        break;
      }
      records.push(r);
    }
    return { records, hasMore };
  }

  /** D-24: the app's counters (soft-deleted conversations included). */
  counters(appId: string): AppCounters {
    return { ...(this.apps.get(appId)?.counters ?? { conversations: 0, messages: 0, users: 0 }) };
  }

  /** D-27: bytes of the app's live conversations. */
  bytes(appId: string): number {
    return this.apps.get(appId)?.bytes ?? 0;
  }

  /** D-73: bytes of the app's deleted conversations whose history is kept. */
  keptBytes(appId: string): number {
    return this.apps.get(appId)?.kept ?? 0;
  }
}

/**
 * Where the metadata of a record whose line is at `where` is kept (D-28). A long line is always read
 * back from the journal: start-up did not parse its metadata (see parseLine).
 */
export function metaRef(metadata: Record<string, unknown>, where: LineAt | undefined): MetaRef {
  if (where && where.len > INLINE_LINE_BYTES) return { text: null, at: where.at, len: where.len };
  // The common case, and every deleted conversation after a compaction: nothing to read.
  if (Object.keys(metadata).length === 0) return EMPTY_META;
  return { text: JSON.stringify(metadata), at: -1, len: 0 };
}

/** D-28: a conversation's metadata, read from where it is (memory if short, else its journal line). */
export function metadataIn(
  journal: Pick<Journal, 'readAt' | 'file'>,
  index: ConversationIndex,
  h: StoredConversation,
): Record<string, unknown> {
  const { text, at, len } = h.meta;
  if (text !== null) return JSON.parse(text) as Record<string, unknown>;
  const e = JSON.parse(journal.readAt({ at, len })) as { id?: string; v?: ConversationRecord; f?: FieldsT };
  const metadata = e.v?.metadata ?? e.f?.metadata;
  if ((e.v?.id ?? e.id) === h.id && isPlainObject(metadata)) return metadata;
  // A version of the record kept past a compaction that moved its line: the current one's.
  const current = index.records.get(h.id);
  if (current && current !== h && current.meta !== h.meta) return metadataIn(journal, index, current);
  throw new DataFileError(journal.file, `byte ${at}: not the metadata of ${h.id}`);
}
