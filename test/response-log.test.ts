// The file store's response log (src/store/file/response-log.ts): a follower gets an event only once it is
// written, so that no client sees an event that a kill -9 would then lose (D-38 rebuilds an
// interrupted response from what its file holds; test/proof/resumable-crash.test.ts is the crash).
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ResponseLog } from '../src/store/file/response-log.ts';
import { tempDir } from './support/helpers.ts';

type AnyFn = (...args: any[]) => any;

test('an event is followed (and traced) only once it is written to its file', async () => {
  const probe = await fs.open(path.join(os.tmpdir(), `parley-rl-probe-${process.pid}`), 'w');
  const proto = Object.getPrototypeOf(probe) as Record<string, AnyFn>;
  await probe.close();
  await fs.rm(path.join(os.tmpdir(), `parley-rl-probe-${process.pid}`), { force: true });
  const write = proto.write!;
  // Holds the file writes of events (their JSON has "event"), as a slow disk would.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let holding = false;
  proto.write = async function (this: unknown, ...args: unknown[]) {
    if (holding && typeof args[0] === 'string' && args[0].includes('"event"')) await held;
    return write.apply(this, args);
  };
  const log = new ResponseLog({ dir: await tempDir() });
  try {
    await log.open();
    await log.begin({
      id: 'resp_w',
      app_id: 'app_demo',
      conversation_id: 'conv_w',
      created_at: 1,
      input: { content: 'hi', metadata: null },
    });
    holding = true;
    const follower = log.follow('resp_w', -1)[Symbol.asyncIterator]();
    const first = follower.next();
    await log.append('resp_w', { event: 'response.created', data: { id: 'resp_w', object: 'response', status: 'in_progress' } });
    // In memory, not yet on disk: neither a trace nor a follower shows it.
    assert.deepEqual((await log.trace('resp_w'))!.events, []);
    release();
    assert.deepEqual((await first).value, { event: 'response.created', data: { id: 'resp_w', object: 'response', status: 'in_progress' } });
    assert.equal((await log.trace('resp_w'))!.events!.length, 1);
    holding = false;
    await log.append('resp_w', { event: 'response.completed', data: { id: 'resp_w', status: 'completed' } });
    assert.equal((await follower.next()).value?.event, 'response.completed');
    assert.equal((await follower.next()).done, true);
  } finally {
    release();
    proto.write = write;
    await log.close();
  }
});
