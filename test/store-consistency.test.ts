// The store owns per-conversation consistency: changes of one conversation apply in turn to the
// record as it is then, and an exchange is saved with its Idempotency-Key claim as one step (the
// claim holds exactly when the exchange does, whatever a crash cut).
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { FileStore } from '../src/store/file/file-store.ts';
import { tempDir } from './support/helpers.ts';
import { legacyHistory, record, save } from './support/records.ts';

test('concurrent exchanges, a rename and a delete of one conversation each apply to the record as it is then', async () => {
  const dir = await tempDir();
  const store = new FileStore({ dataDir: dir });
  await store.open();
  try {
    await store.putConversation(record('conv_ab01'));
    // Started together: without turns, each would derive its record from the same one.
    await Promise.all([
      store.saveResponse(save('conv_ab01', 'resp_1')),
      store.updateConversation('conv_ab01', (r) => ({ ...r!, title: 'renamed' })),
      store.saveResponse(save('conv_ab01', 'resp_2')),
      store.saveResponse(save('conv_ab01', 'resp_3')),
    ]);
    const r = (await store.getConversation('conv_ab01'))!;
    assert.deepEqual([r.title, r.message_count], ['renamed', 6]);
    assert.equal((await store.readHistory('conv_ab01')).responses.length, 3);
    assert.equal((await store.appCounters('app_demo')).messages, 6);
    // A change that throws changes nothing, and the next one still runs.
    const refused = store.updateConversation('conv_ab01', () => {
      throw new Error('not found');
    });
    const deleted = store.updateConversation('conv_ab01', (x) => ({ ...x!, deleted_at: 5 }));
    await assert.rejects(refused, /not found/);
    assert.equal((await deleted).deleted_at, 5);
    assert.equal((await store.getConversation('conv_ab01'))!.title, 'renamed');
  } finally {
    await store.close();
  }
});

test('an exchange and its claim are one: kept together across a restart, and together when a crash cut the completion line', async () => {
  const dir = await tempDir();
  let store = new FileStore({ dataDir: dir });
  await store.open();
  await store.putConversation(record('conv_cd02'));
  await store.putConversation(record('conv_ef03', { seq: 2 }));
  await store.putConversation(record('conv_gh04', { seq: 3 }), { key: 'k-create', fingerprint: 'f0' });
  await store.saveResponse(save('conv_cd02', 'resp_1', { key: 'k-saved', fingerprint: 'f1' }));
  assert.deepEqual(
    (await store.idempotencyClaims(0)).map((c) => c.key),
    ['k-create', 'k-saved'],
  );
  await store.close();
  // Two crashes after the intent line: resp_2's file landed, resp_3's did not.
  const journal = path.join(dir, 'conversations.jsonl');
  const claim = (k: string) => ({ k, f: 'f', at: Date.now() });
  await fs.appendFile(
    journal,
    `${JSON.stringify({ t: 'intent', v: record('conv_ef03', { seq: 2, message_count: 2 }), p: 'resp_2', c: claim('k-landed') })}\n`,
  );
  await fs.appendFile(
    journal,
    `${JSON.stringify({ t: 'intent', v: record('conv_cd02', { message_count: 4 }), p: 'resp_3', c: claim('k-cut') })}\n`,
  );
  await legacyHistory(dir, 'conv_ef03', 'resp_2');
  store = new FileStore({ dataDir: dir });
  await store.open();
  try {
    assert.deepEqual(
      (await store.idempotencyClaims(0)).map((c) => c.key),
      ['k-create', 'k-saved', 'k-landed'],
      'the landed exchange keeps its claim; the one that never happened has none, so its retry runs',
    );
    assert.equal((await store.getConversation('conv_cd02'))!.message_count, 2);
    assert.deepEqual(await store.idempotencyClaims(Date.now() + 1), [], 'older claims are left out');
  } finally {
    await store.close();
  }
});
