// FileStore.importConversations: the bulk path used to seed benchmarks and imports.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { FileStore } from '../src/store/file/file-store.ts';
import { DataFileError } from '../src/core/errors.ts';
import type { History, ConversationRecord } from '../src/store/types.ts';
import { tempDir } from './support/helpers.ts';

/** A stored record as plain data (the store keeps a class whose metadata is read on demand, D-28). */
const plain = (r: unknown) => JSON.parse(JSON.stringify(r)) as unknown;
/** A history without its size on disk. */
const parts = async (p: Promise<History & { bytes: number }>) => {
  const { items, responses } = await p;
  return { items, responses };
};

function entry(n: number, app = 'app_demo'): { record: ConversationRecord; file: History } {
  const id = `conv_import${String(n).padStart(4, '0')}`;
  const record: ConversationRecord = {
    id,
    app_id: app,
    // D-7: as a fresh store's nextSeq would give them, in the order the entries are made.
    seq: n + 1,
    created_at: 1_700_000_000 + n,
    external_user_id: n % 2 === 0 ? 'user_even' : null,
    title: `t${n}`,
    generated_title: {},
    metadata: {},
    deleted_at: null,
    message_count: 2,
  };
  const file: History = {
    items: [
      { id: `msg_u${n}`, type: 'message', role: 'user', content: [{ type: 'text', text: `hello ${n}` }], created_at: record.created_at },
      {
        id: `msg_a${n}`,
        type: 'message',
        role: 'assistant',
        content: [{ type: 'text', text: `hi ${n}` }],
        created_at: record.created_at,
        response_id: `resp_${n}`,
      },
    ],
    responses: [{ id: `resp_${n}`, created_at: record.created_at, status: 'completed' }],
  };
  return { record, file };
}

describe('FileStore.importConversations', () => {
  test('records and files are served at once and survive a reopen', async () => {
    const dataDir = await tempDir();
    const store = new FileStore({ dataDir });
    await store.open();
    const entries = Array.from({ length: 40 }, (_, i) => entry(i));
    await store.importConversations(entries, 4);

    assert.equal(store.conversationsOf('app_demo').length, 40);
    assert.deepEqual(
      store.conversationsOf('app_demo').map((r) => r.id),
      entries.map((e) => e.record.id),
    );
    assert.equal(store.conversationsOf('app_demo', 'user_even').length, 20);
    assert.deepEqual(await store.appCounters('app_demo'), { conversations: 40, messages: 80, users: 1 });
    assert.deepEqual(await parts(store.readHistory(entries[7]!.record.id)), entries[7]!.file);
    await store.close();

    const reopened = new FileStore({ dataDir });
    await reopened.open();
    assert.deepEqual(plain(await reopened.getConversation(entries[39]!.record.id)), entries[39]!.record);
    assert.deepEqual(await parts(reopened.readHistory(entries[0]!.record.id)), entries[0]!.file);
    // D-7: the sequence continues after the imported records.
    assert.equal(await reopened.nextSeq(), entries[39]!.record.seq + 1);
    // No temp file is left behind.
    const shard = path.join(dataDir, 'conversations', entries[0]!.record.id.slice(-2));
    assert.deepEqual(
      (await fs.readdir(shard)).filter((f) => f.endsWith('.tmp')),
      [],
    );
    await reopened.close();
  });

  test('an id that already exists is refused and nothing is written', async () => {
    const dataDir = await tempDir();
    const store = new FileStore({ dataDir });
    await store.open();
    const first = entry(1);
    await store.importConversations([first]);
    const again = [entry(2), { ...first, file: { items: [], responses: [] } }];
    await assert.rejects(store.importConversations(again), /already exists/);
    assert.equal(await store.getConversation(again[0]!.record.id), undefined);
    assert.deepEqual(await parts(store.readHistory(first.record.id)), first.file);
    // A duplicate inside one batch is refused too.
    const dup = entry(3);
    await assert.rejects(store.importConversations([dup, dup]), /already exists/);
    assert.equal(await store.getConversation(dup.record.id), undefined);
    // An id that could reach outside the data directory is refused.
    const evil = entry(4);
    evil.record.id = '../../escape';
    await assert.rejects(store.importConversations([evil]), /cannot name a file/);
    await store.close();
  });

  test('a conversation file over 64 KiB (read through the thread pool) reads back whole', async () => {
    const dataDir = await tempDir();
    const store = new FileStore({ dataDir });
    await store.open();
    const big = entry(5);
    const text = 'é'.repeat(40_000);
    big.file.items[0] = { ...big.file.items[0]!, content: [{ type: 'text', text }] } as never;
    await store.importConversations([big]);
    await store.close();
    const reopened = new FileStore({ dataDir });
    await reopened.open();
    const file = await parts(reopened.readHistory(big.record.id));
    assert.deepEqual(file, big.file);
    await reopened.close();
  });

  test('start-up reads the journal by the same rules on the fast path and through zod', async () => {
    const dataDir = await tempDir();
    const store = new FileStore({ dataDir });
    await store.open();
    const a = entry(1);
    const b = entry(2);
    await store.importConversations([a, b]);
    await store.close();
    const journal = path.join(dataDir, 'conversations.jsonl');
    // An extra key takes the zod path, which strips it, as before.
    await fs.appendFile(journal, `${JSON.stringify({ t: 'conv', v: { ...b.record, title: 'renamed', extra: 1 } })}\n`);
    const reopened = new FileStore({ dataDir });
    await reopened.open();
    assert.deepEqual(plain(await reopened.getConversation(a.record.id)), a.record);
    assert.deepEqual(plain(await reopened.getConversation(b.record.id)), { ...b.record, title: 'renamed' });
    await reopened.close();

    // A record that breaks a rule stops start-up with the line and the field named.
    await fs.appendFile(journal, `${JSON.stringify({ t: 'conv', v: { ...a.record, message_count: -1 } })}\n`);
    const damaged = new FileStore({ dataDir });
    await assert.rejects(damaged.open(), (err: Error) => err instanceof DataFileError && /line 4: v\.message_count/.test(err.message));
  });

  test('a damaged conversation file is refused with the file and the field named', async () => {
    const dataDir = await tempDir();
    const store = new FileStore({ dataDir });
    await store.open();
    const a = entry(1);
    await store.importConversations([a]);
    await store.close();
    const file = path.join(dataDir, 'conversations', a.record.id.slice(-2), `${a.record.id}.jsonl`);
    await fs.writeFile(file, `${JSON.stringify({ items: [{ type: 'message' }], responses: [] })}\n`);
    const reopened = new FileStore({ dataDir });
    await reopened.open();
    await assert.rejects(
      reopened.readHistory(a.record.id),
      (err: Error) => err instanceof DataFileError && err.message.includes(file) && /items\.0\.id/.test(err.message),
    );
    await reopened.close();
  });

  test('close rewrites no file it only read; an exchange appends to its history (D-29)', async () => {
    const dataDir = await tempDir();
    const store = new FileStore({ dataDir });
    await store.open();
    const a = entry(1);
    const b = entry(2);
    await store.importConversations([a, b]);
    const fileOf = (id: string) => path.join(dataDir, 'conversations', id.slice(-2), `${id}.jsonl`);
    // An import is temp + rename, an exchange an append: a rewritten file would have a new inode.
    const readOnly = (await fs.stat(fileOf(b.record.id))).ino;
    const written = (await fs.stat(fileOf(a.record.id))).ino;
    await store.readHistory(b.record.id);
    await store.appendToConversation({ ...a.record, message_count: 3 }, [
      { id: 'msg_extra', type: 'message', role: 'user', content: [{ type: 'text', text: 'more' }], created_at: 1 } as never,
    ]);
    await store.close();
    assert.equal((await fs.stat(fileOf(b.record.id))).ino, readOnly);
    assert.equal((await fs.stat(fileOf(a.record.id))).ino, written);
    assert.equal(
      (await fs.readFile(fileOf(a.record.id), 'utf8')).trimEnd().split('\n').length,
      2,
      'the import and the exchange, one line each',
    );
    const reopened = new FileStore({ dataDir });
    await reopened.open();
    assert.equal((await reopened.readHistory(a.record.id)).items.length, 3);
    await reopened.close();
  });
});
