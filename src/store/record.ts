// The conversation record as the store keeps it, described once: the schema, the type inferred from
// it, and the fast check that start-up runs on every journal line (test/record.test.ts proves that the
// two accept and refuse the same values).
import { z } from 'zod';
import { isPlainObject } from '../contract/index.ts';

/** An id names a file: a hand-edited one must not reach outside the data directory. */
export const SAFE_ID = /^[A-Za-z0-9_-]{3,128}$/;

/** A conversation as the store keeps it: the resource's fields plus what the services need. */
export const ConversationRecordSchema = z.object({
  id: z.string().regex(SAFE_ID, 'must be letters, digits, "_" or "-" (it names a file)'),
  app_id: z.string().min(1),
  /** D-7: total creation order, also across ties within one second. */
  seq: z.number().int().nonnegative(),
  created_at: z.number().int(),
  external_user_id: z.string().nullable(),
  title: z.string().nullable(),
  generated_title: z.record(z.string(), z.string()),
  metadata: z.record(z.string(), z.unknown()),
  /** §3, D-11: soft delete keeps the record; null while the conversation exists. */
  deleted_at: z.number().int().nullable(),
  /** D-24: user and assistant message items, kept here so metrics never read item files. */
  message_count: z.number().int().nonnegative(),
});
export type ConversationRecord = z.infer<typeof ConversationRecordSchema>;

const FIELD_COUNT = Object.keys(ConversationRecordSchema.shape).length;

/** An own `__proto__` key (JSON.parse makes one) would not survive zod's copy of a record. */
const isPlainRecordOf = (x: unknown, ok: (v: unknown) => boolean): boolean =>
  isPlainObject(x) && !Object.hasOwn(x, '__proto__') && Object.values(x).every(ok);

/**
 * ConversationRecordSchema's rules without zod's copy, for the well-formed record of every journal
 * line (zod was a large share of start-up; docs/benchmarks.md). True exactly when the schema accepts
 * `v` and gives it back unchanged; anything else (an extra key zod would strip, or a fault) goes to
 * the schema, which also words the error.
 */
export function isConversationRecord(v: unknown): v is ConversationRecord {
  if (!isPlainObject(v) || Object.keys(v).length !== FIELD_COUNT) return false;
  return (
    typeof v.id === 'string' &&
    SAFE_ID.test(v.id) &&
    typeof v.app_id === 'string' &&
    v.app_id.length > 0 &&
    Number.isSafeInteger(v.seq) &&
    (v.seq as number) >= 0 &&
    Number.isSafeInteger(v.created_at) &&
    (v.external_user_id === null || typeof v.external_user_id === 'string') &&
    (v.title === null || typeof v.title === 'string') &&
    isPlainRecordOf(v.generated_title, (x) => typeof x === 'string') &&
    isPlainRecordOf(v.metadata, () => true) &&
    (v.deleted_at === null || Number.isSafeInteger(v.deleted_at)) &&
    Number.isSafeInteger(v.message_count) &&
    (v.message_count as number) >= 0
  );
}
