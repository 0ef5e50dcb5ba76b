// Memory and disk stay bounded: what memory keeps per conversation does not grow with its
// metadata (D-28), a change appends what changed and the journal is compacted while requests go on
// (D-28), an exchange appends its own size to the history, which has a limit, and the history cache
// is capped by bytes (D-29), and a data directory written by the earlier release keeps working.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { LIMITS, type ItemT } from '../../src/contract/index.ts';
import { FileStore } from '../../src/store/file/file-store.ts';
import type { ConversationRecord } from '../../src/store/types.ts';
import { record as recordOf } from '../support/records.ts';
import { APP, FIXTURES_DIR, startTestServer, tempDir } from '../support/helpers.ts';

const conv = `/apps/${APP}/conversations`;
/** Metadata of exactly `bytes` bytes of compact JSON, the shape of the reproduction: many empty objects. */
function metadataOf(bytes: number): Record<string, unknown> {
  const n = Math.floor((bytes - 8) / 3);
  const m = { a: Array.from({ length: n }, () => ({})) as unknown[] };
  while (JSON.stringify(m).length < bytes) m.a.push(0);
  return m;
}
const FULL = metadataOf(LIMITS.metadataBytes - 100);

const record = (id: string, seq: number, over: Partial<ConversationRecord> = {}): ConversationRecord =>
  recordOf(id, { seq, created_at: 1, ...over });

/**
 * What the store keeps in memory for one conversation, in bytes of its own data: every own property,
 * strings by length, nested plain objects and arrays walked (a getter on the prototype, which reads
 * from disk, is not kept).
 */
function kept(value: unknown, seen = new Set<unknown>()): number {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object' || seen.has(value)) return 8;
  seen.add(value);
  let n = 16;
  for (const key of Object.keys(value)) n += key.length + kept((value as Record<string, unknown>)[key], seen);
  return n;
}

describe('memory per conversation (D-28)', () => {
  test('what the index keeps does not grow with the metadata; the metadata is served whole from disk, also after a restart', async () => {
    const s = await startTestServer();
    let again: Awaited<ReturnType<typeof startTestServer>> | undefined;
    try {
      const small = (await s.call('POST', conv, { title: 'small', metadata: { plan: 'pro' } })).body;
      const big = (await s.call('POST', conv, { title: 'big', metadata: FULL })).body;
      assert.deepEqual(big.metadata, FULL);
      const sizes = (store: typeof s.store) => Promise.all([small.id, big.id].map(async (id) => kept(await store.getConversation(id))));
      const [a, b] = await sizes(s.store);
      // 16 KB of metadata made of empty objects costs ~21 times its size as parsed objects.
      assert.ok(b! < 600 && b! <= a! + 16, `kept ${b} bytes for 16 KB of metadata, ${a} for 16 bytes`);
      assert.deepEqual((await s.call('GET', `${conv}/${big.id}`)).body.metadata, FULL);
      const listed = (await s.call('GET', `${conv}?order=asc`)).body.data;
      assert.deepEqual(
        listed.map((c: { metadata: unknown }) => c.metadata),
        [{ plan: 'pro' }, FULL],
      );
      await s.close();
      again = await startTestServer({ dataDir: s.dataDir });
      const [a2, b2] = await sizes(again.store);
      assert.ok(b2! < 600 && b2! <= a2! + 16, `after a restart: kept ${b2} bytes for 16 KB of metadata`);
      assert.deepEqual((await again.call('GET', `${conv}/${big.id}`)).body.metadata, FULL);
    } finally {
      await s.close().catch(() => {});
      await again?.close();
    }
  });
});

describe('storage quota per plan (D-27)', () => {
  test('a create past the quota, or a send once it is reached, is 429 storage_quota_exceeded and changes nothing; a delete frees it', async () => {
    const fixturesDir = await tempDir();
    await fs.cp(FIXTURES_DIR, fixturesDir, { recursive: true });
    const fixtures = JSON.parse(await fs.readFile(path.join(fixturesDir, 'fixtures.json'), 'utf8'));
    for (const plan of fixtures.plans) if (plan.id === 'developer') plan.storage_bytes = 64 * 1024;
    await fs.writeFile(path.join(fixturesDir, 'fixtures.json'), JSON.stringify(fixtures));
    const s = await startTestServer({ fixturesDir });
    try {
      const created: string[] = [];
      let refused: Awaited<ReturnType<typeof s.call>> | undefined;
      for (let i = 0; i < 10 && !refused; i++) {
        const r = await s.call('POST', conv, { metadata: FULL });
        if (r.status === 200) created.push(r.body.id);
        else refused = r;
      }
      assert.ok(refused, 'no refusal after 10 creates of 16 KB into 64 KiB');
      assert.equal(created.length, 3);
      assert.equal(refused.status, 429);
      assert.deepEqual(
        { ...refused.body.error, message: undefined },
        { message: undefined, type: 'rate_limit_exceeded', param: null, code: 'storage_quota_exceeded' },
      );
      assert.match(refused.body.error.message, /storage quota.*Delete conversations/);
      assert.equal(refused.headers.get('retry-after'), null, 'waiting frees nothing');
      assert.equal(refused.headers.get('x-should-retry'), 'false');
      assert.equal((await s.call('GET', `/apps/${APP}/metrics`)).body.total_conversations, 3, 'the refused create stored nothing');
      // The send message that reaches the quota is the last one (its history counts).
      const send = (id: string) => s.call('POST', `${conv}/${id}`, { message: { content: 'x'.repeat(20_000) }, stream: false });
      assert.equal((await send(created[0]!)).status, 200);
      const full = await send(created[0]!);
      assert.equal(full.status, 429);
      assert.equal(full.body.error.code, 'storage_quota_exceeded');
      // A soft delete frees its conversation's share (the reply's own file counts until D-36's hour is over, D-93).
      assert.equal((await s.call('DELETE', `${conv}/${created[0]}`)).status, 200);
      assert.equal((await s.call('POST', conv, { metadata: { small: true } })).status, 200);
      // D-73: deleted histories are kept outside the quota, but hold at most the quota once more: the
      // deletes that pass it purge the oldest deletion first.
      assert.equal((await s.store.admin.get(created[0]!))!.purgedAt, null, 'kept while it fits');
      for (const id of created.slice(1)) assert.equal((await s.call('DELETE', `${conv}/${id}`)).status, 200);
      const purged = await Promise.all(created.map(async (id) => (await s.store.admin.get(id))!.purgedAt !== null));
      assert.deepEqual(purged, [true, false, false]);
      assert.ok((await s.store.admin.keptBytes(APP)) <= 64 * 1024);
    } finally {
      await s.close();
    }
  });
});

describe('journal growth (D-28)', () => {
  test('a rename appends its title, not the 16 KB record; an exchange appends a few hundred bytes, not the record twice', async () => {
    const s = await startTestServer();
    try {
      const journal = path.join(s.dataDir, 'conversations.jsonl');
      const c = (await s.call('POST', conv, { metadata: FULL })).body;
      const size = async () => (await fs.stat(journal)).size;
      let before = await size();
      assert.equal((await s.call('PATCH', `${conv}/${c.id}`, { title: 'Renamed' })).status, 200);
      const rename = (await size()) - before;
      assert.ok(rename < 200, `a rename appended ${rename} bytes`);
      before = await size();
      assert.equal((await s.call('POST', `${conv}/${c.id}`, { message: { content: 'Hello' }, stream: false })).status, 200);
      const exchange = (await size()) - before;
      assert.ok(exchange < 1_000, `an exchange appended ${exchange} bytes to the journal`);
      const got = (await s.call('GET', `${conv}/${c.id}`)).body;
      assert.equal(got.title, 'Renamed');
      assert.deepEqual(got.metadata, FULL);
      assert.equal(got.items.length >= 2, true);
    } finally {
      await s.close();
    }
  });

  test('past its multiple of the live data the journal is compacted while running; requests complete while it is held', async () => {
    const dataDir = await tempDir();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let reached!: () => void;
    const atHook = new Promise<void>((r) => (reached = r));
    let holds = 0;
    const store = new FileStore({
      dataDir,
      compaction: { factor: 2, slackBytes: 64 * 1024 },
      holdCompaction: async () => {
        if (holds++ > 0) return;
        reached();
        await gate;
      },
    });
    await store.open();
    const journal = path.join(dataDir, 'conversations.jsonl');
    const meta = metadataOf(4_000);
    try {
      for (let i = 1; i <= 4; i++) await store.putConversation(record(`conv_c${i}0`, i, { metadata: { ...meta, n: i } }));
      // Renames of a conversation with large metadata: cheap lines now, but the journal grows past 2 × live + 64 KiB.
      // Written until the compaction begins (the store starts it as a write lands), then no more: what
      // the loop writes after the snapshot would be appended to the compacted journal, however busy the machine.
      const compacting = () => (store as unknown as { compactor: { compacting?: Promise<void> } }).compactor.compacting !== undefined;
      let i = 0;
      while (!compacting()) {
        // Whole records, as the earlier release wrote them, make the journal grow fast.
        await store.putConversation(record('conv_c10', 1, { metadata: { ...meta, n: 1 }, title: `v${i++}` }));
        assert.ok(i < 1_000, 'no compaction started');
      }
      await atHook;
      const linesAtHold = (await fs.readFile(journal, 'utf8')).split('\n').length;
      // Held after writing the new file, before the swap: every kind of request completes meanwhile.
      await store.putConversation(record('conv_c50', 5, { metadata: { ...meta, n: 5 } }));
      await store.updateConversation('conv_c20', () => ({ title: 'renamed during the compaction' }));
      await store.updateConversation('conv_c30', () => ({ deleted_at: 9 }));
      const items: ItemT[] = [
        { id: 'msg_during', type: 'message', role: 'user', content: [{ type: 'text', text: 'during' }], created_at: 1 } as ItemT,
      ];
      await store.saveResponse({
        conversationId: 'conv_c40',
        items,
        response: { id: 'resp_during', created_at: 1, status: 'completed' },
        apply: (r) => ({ message_count: r.message_count + 1, metadata: { changed: true } }),
      });
      assert.equal(holds, 1, 'the compaction is still held');
      release();
      await (store as unknown as { compactor: { compacting?: Promise<void> } }).compactor.compacting;
      const lines = (await fs.readFile(journal, 'utf8')).trimEnd().split('\n');
      // One line per conversation, then the lines appended since the snapshot (those above, a few renames).
      assert.ok(linesAtHold > 20 && lines.length < linesAtHold / 2, `${lines.length} lines after the compaction, ${linesAtHold} before`);
      const check = async (s: FileStore) => {
        assert.equal((await s.getConversation('conv_c10'))!.title, `v${i - 1}`);
        assert.deepEqual((await s.getConversation('conv_c10'))!.metadata, { ...meta, n: 1 });
        assert.deepEqual((await s.getConversation('conv_c50'))!.metadata, { ...meta, n: 5 });
        assert.equal((await s.getConversation('conv_c20'))!.title, 'renamed during the compaction');
        assert.deepEqual((await s.getConversation('conv_c20'))!.metadata, { ...meta, n: 2 });
        assert.equal((await s.getConversation('conv_c30'))!.deleted_at, 9);
        assert.deepEqual((await s.getConversation('conv_c40'))!.metadata, { changed: true });
        assert.equal((await s.getConversation('conv_c40'))!.message_count, 1);
        assert.deepEqual(
          (await s.readHistory('conv_c40')).items.map((x) => x.id),
          ['msg_during'],
        );
      };
      await check(store);
      // The next compaction waits for the journal to double again: ordinary writes start none.
      for (let k = 0; k < 20; k++) await store.updateConversation('conv_c20', () => ({ title: `after ${k}` }));
      assert.equal(holds, 1, 'no compaction follows at once');
      await store.updateConversation('conv_c20', () => ({ title: 'renamed during the compaction' }));
      await store.close();
      const reopened = new FileStore({ dataDir });
      await reopened.open();
      try {
        await check(reopened);
      } finally {
        await reopened.close();
      }
    } finally {
      release();
      await store.close().catch(() => {});
    }
  });
});

describe('conversation length (D-29)', () => {
  test('an exchange appends its own size to the history and leaves what is there untouched', async () => {
    const s = await startTestServer();
    try {
      const c = (await s.call('POST', conv, {})).body;
      const file = path.join(s.dataDir, 'conversations', c.id.slice(-2), `${c.id}.jsonl`);
      const sizes: number[] = [];
      let before = '';
      for (let i = 0; i < 4; i++) {
        const long = `${i} ${'x'.repeat(20_000)}`;
        assert.equal((await s.call('POST', `${conv}/${c.id}`, { message: { content: long }, stream: false })).status, 200);
        const text = await fs.readFile(file, 'utf8');
        assert.ok(text.startsWith(before), 'earlier exchanges are not rewritten');
        sizes.push(Buffer.byteLength(text) - Buffer.byteLength(before));
        before = text;
      }
      // Every exchange wrote about the same: its own size, not the conversation's.
      assert.ok(Math.max(...sizes) < 2 * Math.min(...sizes), `bytes written per exchange: ${sizes.join(', ')}`);
    } finally {
      await s.close();
    }
  });

  test(`a history of ${LIMITS.conversationBytes / 2 ** 20} MiB refuses send message with conversation_too_large, and nothing changes`, async () => {
    const s = await startTestServer();
    try {
      const c = (await s.call('POST', conv, {})).body;
      const text = 'y'.repeat(512 * 1024);
      const item = (n: number) =>
        ({ id: `msg_big${n}`, type: 'message', role: 'user', content: [{ type: 'text', text }], created_at: 1 }) as ItemT;
      for (let n = 0; (await s.store.readHistory(c.id)).bytes < LIMITS.conversationBytes; n++) {
        await s.store.appendToConversation({ ...(await s.store.getConversation(c.id))!, message_count: n + 1 }, [item(n)]);
      }
      const before = (await s.call('GET', `${conv}/${c.id}`)).body;
      const r = await s.call('POST', `${conv}/${c.id}`, { message: { content: 'one more' }, stream: false });
      assert.equal(r.status, 400);
      assert.deepEqual(
        { ...r.body.error, message: undefined },
        { message: undefined, type: 'invalid_request_error', param: 'conversation_id', code: 'conversation_too_large' },
      );
      assert.match(r.body.error.message, /start a new conversation/);
      assert.deepEqual((await s.call('GET', `${conv}/${c.id}`)).body, before);
      // Reading it still works, and so does a new conversation.
      const other = (await s.call('POST', conv, {})).body;
      assert.equal((await s.call('POST', `${conv}/${other.id}`, { message: { content: 'fine' }, stream: false })).status, 200);
    } finally {
      await s.close();
    }
  });

  test('the history cache is capped by bytes, not only by count', async () => {
    const dataDir = await tempDir();
    const store = new FileStore({ dataDir, historyCacheBytes: 1024 * 1024 });
    await store.open();
    try {
      const text = 'z'.repeat(300 * 1024);
      for (let i = 1; i <= 6; i++) {
        await store.putConversation(record(`conv_h${i}0`, i));
        await store.appendToConversation(record(`conv_h${i}0`, i, { message_count: 1 }), [
          { id: `msg_${i}`, type: 'message', role: 'user', content: [{ type: 'text', text }], created_at: 1 } as ItemT,
        ]);
      }
      for (let i = 1; i <= 6; i++) await store.readHistory(`conv_h${i}0`);
      await new Promise((r) => setImmediate(r));
      const cached = (store as unknown as { histories: { size: number; has(id: string): boolean } }).histories;
      assert.ok(cached.size <= 3, `${cached.size} histories of 300 KiB cached under a 1 MiB cap`);
      assert.ok(cached.has('conv_h60'), 'the most recent stays');
      assert.equal((await store.readHistory('conv_h10')).items[0]!.id, 'msg_1', 'an evicted one is read again');
    } finally {
      await store.close();
    }
  });
});

describe('a data directory written by the earlier release (7790031)', () => {
  test('reads whole records, intents and lowdb histories; new changes land in the new format and survive a restart', async () => {
    const fixture = path.resolve(import.meta.dirname, '..', 'fixtures', 'v1-data');
    const expected = JSON.parse(await fs.readFile(path.join(fixture, 'expected.json'), 'utf8'));
    const dataDir = path.join(await tempDir(), 'data');
    await fs.cp(path.join(fixture, 'data'), dataDir, { recursive: true });
    let s = await startTestServer({ dataDir });
    try {
      assert.deepEqual((await s.call('GET', `${conv}/${expected.a.id}`)).body, expected.a);
      assert.deepEqual((await s.call('GET', `${conv}/${expected.b.id}`)).body, expected.b);
      assert.equal((await s.call('GET', `${conv}/${expected.deleted}`)).status, 404);
      assert.deepEqual((await s.call('GET', `${conv}?order=asc`)).body, expected.list);
      assert.deepEqual((await s.call('GET', `/apps/${APP}/metrics`)).body, expected.metrics);
      // New changes on top of the old files.
      assert.equal((await s.call('PATCH', `${conv}/${expected.a.id}`, { title: 'After the upgrade' })).status, 200);
      const sent = await s.call('POST', `${conv}/${expected.a.id}`, { message: { content: 'And now?' }, stream: false });
      assert.equal(sent.status, 200);
      await s.close();
      s = await startTestServer({ dataDir });
      const a = (await s.call('GET', `${conv}/${expected.a.id}`)).body;
      assert.equal(a.title, 'After the upgrade');
      assert.deepEqual(a.metadata, expected.a.metadata);
      assert.deepEqual(a.items.slice(0, expected.a.items.length), expected.a.items);
      assert.ok(a.items.length >= expected.a.items.length + 2, 'the new exchange follows the old items');
      assert.equal((await s.call('GET', `/apps/${APP}/metrics`)).body.total_messages, expected.metrics.total_messages + 2);
    } finally {
      await s.close();
    }
  });
});
