// The lines of the file store's journal (`conversations.jsonl`, docs/storage.md): their schemas, the
// exchange an intent line journals, and start-up's parser, which leaves a long line's metadata unread.
import { z } from 'zod';
import { isPlainObject } from '../../contract/index.ts';
import { ConversationRecordSchema, SAFE_ID, isConversationRecord } from '../record.ts';
import type { ConversationChange, ConversationRecord } from '../types.ts';
import type { LineAt } from './journal-io.ts';

/** An Idempotency-Key claim (see IdempotencyClaim), journaled with the work it ran. */
const Claim = z.object({ k: z.string(), f: z.string(), at: z.number() });
const Id = z.string().regex(SAFE_ID);
/** The fields a `set` or an exchange changes (D-28: a line holds what changed, not the record). */
const Fields = z.strictObject({
  title: z.string().nullable().optional(),
  deleted_at: z.number().int().nullable().optional(),
  generated_title: z.record(z.string(), z.string()).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  /** D-73: null with a delete (its history is kept), a time once purged; a delete always says which (D-117). */
  purged_at: z.number().int().nullable().optional(),
});
/**
 * The journal's lines (docs/storage.md). `conv`: a whole record (a create, a compaction's snapshot,
 * and every change before D-28), `b` the bytes of its history file, `p` the exchange a pre-D-28 line
 * completes. `set`: the fields a rename or a delete changes. `intent`: what an exchange will change
 * (`f`, `n` messages, `b` history bytes), written before the history file; `done` completes it. An
 * intent with no `done` was cut by a crash, and start-up checks the history file to see whether the
 * exchange landed. The earlier release's intent held the whole record (`v`, D-117: still read). D-73:
 * a deleted conversation's `purged_at` (a `conv` line's, or a `set` line's field) is null while its
 * history is kept; a `conv` line without it was purged as it was deleted (the earlier release's
 * deletes, and an import's of a deleted conversation without history); a `set` line that deletes
 * always holds it (D-117: no release wrote one without). `claim`: an Idempotency-Key
 * claim kept by a compaction. The claim `c` rides in both lines of an exchange: it holds exactly when
 * the exchange does.
 */
export const Entries = {
  conv: z.object({
    t: z.literal('conv'),
    v: ConversationRecordSchema,
    b: z.number().int().nonnegative().optional(),
    p: z.string().optional(),
    c: Claim.optional(),
    purged_at: z.number().int().nullable().optional(),
  }),
  set: z.object({ t: z.literal('set'), id: Id, f: Fields }).refine((e) => e.f.deleted_at == null || e.f.purged_at !== undefined, {
    path: ['f', 'purged_at'],
    message: 'a delete says whether its history is kept (null) or purged (D-73); no release wrote one without it (D-117)',
  }),
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
export type ClaimT = z.infer<typeof Claim>;
export type FieldsT = z.infer<typeof Fields>;
export type EntryT = { [K in keyof typeof Entries]: z.infer<(typeof Entries)[K]> }[keyof typeof Entries];

export function schemaOf(e: unknown): z.ZodType<EntryT> | undefined {
  if (!isPlainObject(e)) return undefined;
  if (e.t === 'intent') return ('v' in e ? Entries.intentV1 : Entries.intent) as z.ZodType<EntryT>;
  return typeof e.t === 'string' && Object.hasOwn(Entries, e.t) && e.t !== 'intentV1'
    ? (Entries[e.t as keyof typeof Entries] as z.ZodType<EntryT>)
    : undefined;
}

/** What an exchange changes, as journaled in its intent. */
export interface Exchange {
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
export function isPlainEntry(e: unknown): e is { t: 'conv'; v: ConversationRecord; b?: number; purged_at?: number | null } {
  if (!isPlainObject(e) || e.t !== 'conv') return false;
  let keys = 2;
  if (Object.hasOwn(e, 'b')) {
    if (!Number.isSafeInteger(e.b) || (e.b as number) < 0) return false;
    keys++;
  }
  if (Object.hasOwn(e, 'purged_at')) {
    if (e.purged_at !== null && !Number.isSafeInteger(e.purged_at)) return false;
    keys++;
  }
  return Object.keys(e).length === keys && isConversationRecord(e.v);
}

/** Metadata whose journal line is at most this long is kept in memory as JSON text (D-28). */
export const INLINE_LINE_BYTES = 512;

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

/** The fields of `next` that differ from `current` (message_count as a difference). */
export function diffOf(current: ConversationRecord, next: ConversationChange): { f: FieldsT; n: number } {
  const f: FieldsT = {};
  if (next.title !== undefined && next.title !== current.title) f.title = next.title;
  if (next.deleted_at !== undefined && next.deleted_at !== current.deleted_at) f.deleted_at = next.deleted_at;
  if (next.generated_title !== undefined && JSON.stringify(next.generated_title) !== JSON.stringify(current.generated_title))
    f.generated_title = next.generated_title;
  // Compared only when given as its own property (a copy of a stored record has none: it is read on demand).
  if (Object.hasOwn(next, 'metadata') && next.metadata !== undefined && JSON.stringify(next.metadata) !== JSON.stringify(current.metadata))
    f.metadata = next.metadata;
  const n = next.message_count === undefined ? 0 : next.message_count - current.message_count;
  return { f, n };
}
