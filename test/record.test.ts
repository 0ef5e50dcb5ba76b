// The conversation record is described once (src/store/record.ts): its fast check, which start-up runs
// on every journal line, must accept exactly the values the schema accepts and gives back unchanged.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { ConversationRecordSchema, isConversationRecord } from '../src/store/record.ts';

/** Equal as JSON data: the same own keys and values, whatever the objects' prototypes. */
function sameData(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b);
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && sameData((a as any)[k], (b as any)[k]));
}

/** What the schema says of a value: accepted as it is, or not (zod drops unknown and `__proto__` keys). */
function schemaKeepsAsIs(v: unknown): boolean {
  const parsed = ConversationRecordSchema.safeParse(v);
  return parsed.success && sameData(parsed.data, v);
}

const key = fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'en-ca', 'fr-ca', ''));
const int = fc.oneof(
  fc.integer({ min: -5, max: 5 }),
  fc.constantFrom(0, -0, 2 ** 53 - 1, 2 ** 53, -(2 ** 53), 1.5, NaN, Infinity),
  fc.maxSafeInteger(),
);
const anyValue = fc.oneof(fc.jsonValue(), int, fc.constant(undefined), fc.string());

const validRecord = fc.record({
  id: fc.stringMatching(/^[A-Za-z0-9_-]{3,12}$/),
  app_id: fc.string({ minLength: 1 }),
  seq: fc.nat(),
  created_at: fc.integer(),
  external_user_id: fc.option(fc.string(), { nil: null }),
  title: fc.option(fc.string(), { nil: null }),
  generated_title: fc.dictionary(key, fc.string()),
  metadata: fc.dictionary(key, fc.jsonValue()),
  deleted_at: fc.option(fc.integer(), { nil: null }),
  message_count: fc.nat(),
});

const FIELDS = Object.keys(ConversationRecordSchema.shape);

/** A valid record, or one with a field changed, removed or added, or something else altogether. */
const candidate = fc.oneof(
  validRecord,
  fc.tuple(validRecord, fc.constantFrom(...FIELDS), anyValue).map(([r, k, v]) => ({ ...r, [k]: v })),
  fc.tuple(validRecord, fc.constantFrom(...FIELDS)).map(([r, k]) => {
    const copy: Record<string, unknown> = { ...r };
    delete copy[k];
    return copy;
  }),
  fc.tuple(validRecord, key, anyValue).map(([r, k, v]) => JSON.parse(JSON.stringify({ ...r, [k]: v }) ?? 'null')),
  fc.tuple(validRecord, fc.constantFrom('generated_title', 'metadata'), fc.jsonValue()).map(([r, k, v]) => ({ ...r, [k]: v })),
  anyValue,
);

test('the fast check accepts exactly what the schema accepts unchanged', () => {
  fc.assert(
    fc.property(candidate, (v) => {
      assert.equal(isConversationRecord(v), schemaKeepsAsIs(v), JSON.stringify(v));
    }),
    { numRuns: 3_000 },
  );
});

test('every valid record passes both; a record read from JSON with a __proto__ key goes to the schema', () => {
  const noProto = validRecord.filter((r) => !Object.hasOwn(r.generated_title, '__proto__') && !Object.hasOwn(r.metadata, '__proto__'));
  fc.assert(fc.property(noProto, (r) => isConversationRecord(r) && ConversationRecordSchema.safeParse(r).success));
  const withProto = JSON.parse(
    '{"id":"conv_1","app_id":"a","seq":0,"created_at":0,"external_user_id":null,"title":null,"generated_title":{"__proto__":"x"},"metadata":{},"deleted_at":null,"message_count":0}',
  );
  assert.equal(isConversationRecord(withProto), false);
  assert.equal(ConversationRecordSchema.safeParse(withProto).success, true);
});
