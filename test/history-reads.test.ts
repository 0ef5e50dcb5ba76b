// D-163: a history read opens only the files the conversation has: the earlier release's document
// (`<id>.json`) is looked for only where start-up's sweep of the conversation folders saw one; a
// history read for a get is kept only from its second read on.
import assert from 'node:assert/strict';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { FileStore } from '../src/store/file/file-store.ts';
import { HistoryCache } from '../src/store/file/history-cache.ts';
import { tempDir } from './support/helpers.ts';
import { exchange, legacyHistory, record } from './support/records.ts';

/** The files read synchronously while `run` runs (history-file.ts reads each history so). */
async function filesRead(run: () => Promise<void>): Promise<string[]> {
  const real = fsSync.readFileSync;
  const seen: string[] = [];
  fsSync.readFileSync = ((file: fsSync.PathOrFileDescriptor, ...rest: unknown[]) => {
    seen.push(String(file));
    return (real as (...a: unknown[]) => unknown)(file, ...rest);
  }) as typeof fsSync.readFileSync;
  try {
    await run();
  } finally {
    fsSync.readFileSync = real;
  }
  return seen.map((f) => path.basename(f));
}

test('D-163: a history read after start-up looks for <id>.json only where the sweep found one, and still reads that one', async () => {
  const dir = await tempDir();
  let store = new FileStore({ dataDir: dir });
  await store.open();
  const base = record('conv_aa01');
  await store.putConversation(base);
  await store.appendToConversation(
    { ...base, message_count: 2 },
    exchange('resp_1'),
    { id: 'resp_1', created_at: 1, status: 'completed' },
    base,
  );
  await store.putConversation(record('conv_bb02', { seq: 2 }));
  await store.close();
  await legacyHistory(dir, 'conv_bb02', 'resp_2');
  store = new FileStore({ dataDir: dir });
  await store.open();
  try {
    let a: unknown[] = [];
    let b: unknown[] = [];
    const read = await filesRead(async () => {
      a = (await store.readConversation('conv_aa01'))!.items!;
      b = (await store.readConversation('conv_bb02'))!.items!;
    });
    assert.deepEqual(read, ['conv_aa01.jsonl', 'conv_bb02.json', 'conv_bb02.jsonl']);
    assert.deepEqual(a, exchange('resp_1'));
    assert.deepEqual(b, exchange('resp_2'));
  } finally {
    await store.close();
  }
});

test('D-163: a history read for a get is kept from its second read on; one held is served as held', async () => {
  const dir = await tempDir();
  const ids = ['conv_pk_a1', 'conv_pk_b2'];
  for (const id of ids) {
    const file = path.join(dir, 'conversations', id.slice(-2), `${id}.jsonl`);
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, `${JSON.stringify({ items: exchange(`resp_${id}`), responses: [] })}\n`);
  }
  const cache = new HistoryCache(dir);
  const [a, b] = ids as [string, string];
  const first = await cache.peek(a);
  assert.deepEqual(first.items, exchange(`resp_${a}`));
  assert.equal(cache.has(a), false, 'read once for a get: not kept');
  const second = await cache.peek(a);
  assert.equal(cache.has(a), true, 'read again: kept');
  assert.notEqual(second, first);
  assert.equal(await cache.peek(a), second, 'a held one is served as held');
  // A history already held (a send read it) is served by a get as it is held.
  const held = await cache.get(b);
  assert.equal(await cache.peek(b), held);
});
