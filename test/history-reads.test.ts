// D-163: a history read opens only the files the conversation has: the earlier release's document
// (`<id>.json`) is looked for only where start-up's sweep of the conversation folders saw one.
import assert from 'node:assert/strict';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { FileStore } from '../src/store/file/file-store.ts';
import { tempDir } from './support/helpers.ts';
import { exchange, record } from './support/records.ts';

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
  // conv_bb02's history in the earlier release's format (D-29): one JSON document.
  await fs.mkdir(path.join(dir, 'conversations', '02'), { recursive: true });
  await fs.writeFile(
    path.join(dir, 'conversations', '02', 'conv_bb02.json'),
    JSON.stringify({ items: exchange('resp_2'), responses: [{ id: 'resp_2', created_at: 1, status: 'completed' }] }),
  );
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
