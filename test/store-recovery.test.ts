// The store's commit protocol for exchanges: an intent journaled before the conversation file, its
// completion after. A crash between them is settled at start-up; concurrent updates are merged.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { FileStore } from '../src/store/file/file-store.ts';
import { tempDir } from './support/helpers.ts';
import { exchange, legacyHistory, record } from './support/records.ts';

test('an intent whose file write never happened is forgotten; one whose file landed is completed', async () => {
  const dir = await tempDir();
  let store = new FileStore({ dataDir: dir });
  await store.open();
  await store.putConversation(record('conv_aa01'));
  await store.putConversation(record('conv_bb02', { seq: 2 }));
  await store.close();
  // A crash after each intent: conv_aa01's file was never written, conv_bb02's was.
  const journal = path.join(dir, 'conversations.jsonl');
  await fs.appendFile(
    journal,
    `${JSON.stringify({ t: 'intent', v: record('conv_aa01', { message_count: 2, metadata: { x: 1 } }), p: 'resp_1' })}\n`,
  );
  await fs.appendFile(
    journal,
    `${JSON.stringify({ t: 'intent', v: record('conv_bb02', { seq: 2, message_count: 2, metadata: { y: 2 } }), p: 'resp_2' })}\n`,
  );
  await legacyHistory(dir, 'conv_bb02', 'resp_2');
  store = new FileStore({ dataDir: dir });
  await store.open();
  assert.deepEqual(
    [(await store.getConversation('conv_aa01'))!.message_count, (await store.getConversation('conv_aa01'))!.metadata],
    [0, {}],
  );
  assert.deepEqual(
    [(await store.getConversation('conv_bb02'))!.message_count, (await store.getConversation('conv_bb02'))!.metadata],
    [2, { y: 2 }],
  );
  assert.equal((await store.appCounters('app_demo')).messages, 2);
  await store.close();
  // Settled once and for all: the completion was journaled.
  store = new FileStore({ dataDir: dir });
  await store.open();
  assert.equal((await store.getConversation('conv_bb02'))!.message_count, 2);
  await store.close();
});

test('a rename that lands while an exchange is written is kept (no lost update)', async () => {
  const dir = await tempDir();
  const store = new FileStore({ dataDir: dir });
  await store.open();
  const base = record('conv_cc03');
  await store.putConversation(base);
  const mine = { ...base, message_count: 2, metadata: { m: 1 } };
  await store.putConversation({ ...base, title: 'renamed meanwhile' });
  await store.appendToConversation(mine, exchange('resp_3'), { id: 'resp_3', created_at: 1, status: 'completed' }, base);
  const r = (await store.getConversation('conv_cc03'))!;
  assert.deepEqual([r.title, r.message_count, r.metadata], ['renamed meanwhile', 2, { m: 1 }]);
  await store.close();
});
