// D-73 on the file store: the admin surface's conversations (test/support/admin-conversations-suite.ts),
// and what only the file store does: the earlier release's delete (a whole record without `purged_at`)
// reads as purged, and a `set` delete without it, a line no release wrote, is refused (D-117); a compaction keeps a kept history and its metadata; a history file left by a crash
// after its purge's journal line is removed at start; an export carries a kept history, not a purged one.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { FileStore } from '../src/store/file/file-store.ts';
import { adminConversationsSuite, adminHarness, exportKeepsWhatIsKept } from './support/admin-conversations-suite.ts';
import { tempDir } from './support/helpers.ts';
import { record, save } from './support/records.ts';

adminConversationsSuite('file store', (o) => adminHarness(o));

test("D-73, D-117: the earlier release's delete (a whole record) reads as purged at its deletion; one journaled since as kept", async () => {
  const dataDir = await tempDir();
  const lines = [
    { t: 'conv', v: record('conv_old2', { seq: 2, deleted_at: 1_600_000_100 }) },
    { t: 'conv', v: record('conv_new1', { seq: 3 }) },
    { t: 'set', id: 'conv_new1', f: { deleted_at: 1_700_000_000, purged_at: null } },
  ];
  await fs.writeFile(path.join(dataDir, 'conversations.jsonl'), lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
  const store = new FileStore({ dataDir });
  await store.open();
  try {
    assert.equal((await store.admin.get('conv_old2'))!.purgedAt, 1_600_000_100);
    assert.equal((await store.admin.get('conv_new1'))!.purgedAt, null);
    assert.deepEqual(await store.admin.restore('conv_old2'), { refused: 'purged' });
  } finally {
    await store.close();
  }
});

test('D-117: a delete line without purged_at, a format no release wrote, stops start-up naming its line', async () => {
  const dataDir = await tempDir();
  const lines = [
    { t: 'conv', v: record('conv_old1', { seq: 1 }) },
    { t: 'set', id: 'conv_old1', f: { deleted_at: 1_600_000_000 } },
  ];
  await fs.writeFile(path.join(dataDir, 'conversations.jsonl'), lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
  const store = new FileStore({ dataDir });
  await assert.rejects(store.open(), (err: Error) => {
    assert.match(err.message, /line 2: f\.purged_at: a delete says whether its history is kept/);
    assert.equal(err.name, 'DataFileError');
    return true;
  });
});

test('D-73: a compaction keeps a kept history, its metadata and its state; a purged one keeps neither', async () => {
  const dataDir = await tempDir();
  // Compacted at every write past a few bytes.
  const open = () => new FileStore({ dataDir, compaction: { factor: 1, slackBytes: 1 } });
  let store = open();
  await store.open();
  try {
    await store.putConversation(record('conv_k1', { seq: 1, metadata: { long: 'x'.repeat(600) } }));
    await store.putConversation(record('conv_k2', { seq: 2, metadata: { short: 1 } }));
    await store.saveResponse(save('conv_k1', 'resp_k1'));
    await store.saveResponse(save('conv_k2', 'resp_k2'));
    await store.updateConversation('conv_k1', (r) => ({ ...r!, deleted_at: 1_700_000_000 }));
    await store.updateConversation('conv_k2', (r) => ({ ...r!, deleted_at: 1_700_000_000 }));
    assert.equal(await store.admin.purgeDeleted(1_700_000_000, 1_700_000_500), 2);
    await store.putConversation(record('conv_k3', { seq: 3, metadata: { long: 'y'.repeat(600) } }));
    await store.saveResponse(save('conv_k3', 'resp_k3'));
    await store.updateConversation('conv_k3', (r) => ({ ...r!, deleted_at: 1_700_000_600 }));
    for (let i = 0; i < 5; i++) await store.updateConversation('conv_k3', (r) => ({ ...r!, title: `t${i}` }));
    await store.close();
    store = open();
    await store.open();
    const k3 = (await store.admin.get('conv_k3'))!;
    assert.deepEqual([k3.purgedAt, k3.record.metadata, k3.record.title], [null, { long: 'y'.repeat(600) }, 't4']);
    assert.equal((await store.readHistory('conv_k3')).responses.length, 1);
    assert.equal((await store.admin.get('conv_k1'))!.purgedAt, 1_700_000_500);
    const journal = await fs.readFile(path.join(dataDir, 'conversations.jsonl'), 'utf8');
    assert.ok(!journal.includes('x'.repeat(600)), 'the purged metadata is not written again');
    assert.ok(journal.includes('"purged_at":null'));
  } finally {
    await store.close();
  }
});

test('D-73: a history file left behind by a purge (a crash after its journal line) is removed at start', async () => {
  const dataDir = await tempDir();
  let store = new FileStore({ dataDir });
  await store.open();
  await store.putConversation(record('conv_c1', { seq: 1 }));
  await store.saveResponse(save('conv_c1', 'resp_c1'));
  const file = path.join(dataDir, 'conversations', 'c1', 'conv_c1.jsonl');
  const text = await fs.readFile(file, 'utf8');
  await store.updateConversation('conv_c1', (r) => ({ ...r!, deleted_at: 1_700_000_000 }));
  await store.admin.purgeDeleted(1_700_000_000, 1_700_000_100);
  await store.close();
  await fs.writeFile(file, text);
  store = new FileStore({ dataDir });
  await store.open();
  try {
    await assert.rejects(fs.stat(file), { code: 'ENOENT' });
    assert.deepEqual((await store.readHistory('conv_c1')).items, []);
  } finally {
    await store.close();
  }
});

test('D-73: an export carries a kept history, imported kept; a purged one comes empty (no metadata) and is imported purged', async () => {
  const dir = await tempDir();
  await exportKeepsWhatIsKept({ dataDir: dir }, () => new FileStore({ dataDir: dir }));
});
