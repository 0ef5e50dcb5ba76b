// The webhook outbox of the file store (docs/webhooks.md, D-84…D-87), what the outbox suite
// (test/support/outbox-suite.ts, run on both stores) does not reach: an event rides in its change's
// journal line and is brought into `webhooks.jsonl` at start-up when the process ended first; a
// compaction of conversations.jsonl keeps what the outbox still lacks; a full disk.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { FileStore } from '../src/store/file/file-store.ts';
import { FileOutbox } from '../src/store/file/webhooks.ts';
import { LocalFollows } from '../src/store/webhooks.ts';
import { injectDiskFault } from './support/faulty-fs.ts';
import { tempDir } from './support/helpers.ts';
import { numberedEvents, outboxEvent as event, upTo } from './support/outbox-suite.ts';
import { record } from './support/records.ts';

describe('D-84: events written with their change (file store)', () => {
  test('an event whose change is durable reaches the outbox at start-up, even if the outbox journal lost it', async () => {
    const dataDir = await tempDir();
    const store = new FileStore({ dataDir, changeEvents: numberedEvents });
    await store.open();
    await store.putConversation(record('conv_w1'));
    await store.updateConversation('conv_w1', () => ({ title: 'Renamed' }));
    await store.close();
    // As if the process had died after the journal line and before the outbox's own line.
    await fs.writeFile(path.join(dataDir, 'webhooks.jsonl'), '');
    const again = new FileStore({ dataDir });
    await again.open();
    assert.ok(await again.outbox.event('evt_c1'));
    assert.ok(await again.outbox.event('evt_u2'));
    const due = await again.outbox.claim('w', Date.now() + 1000, 1000, upTo(10, new Set()));
    assert.deepEqual(due.map((c) => c.event.id).sort(), ['evt_c1']);
    await again.close();
  });

  test('a compaction of conversations.jsonl keeps every event in the outbox', async () => {
    const dataDir = await tempDir();
    const store = new FileStore({ dataDir, compaction: { factor: 1, slackBytes: 0 }, changeEvents: numberedEvents });
    await store.open();
    for (let i = 0; i < 30; i++) await store.putConversation(record(`conv_k${i}`, { seq: i + 1 }));
    for (let i = 0; i < 30; i++) await store.updateConversation(`conv_k${i}`, () => ({ title: `t${i}` }));
    await store.close();
    const again = new FileStore({ dataDir });
    await again.open();
    const all = await again.outbox.deliveries({ team_id: 'team_demo', limit: 100 });
    assert.equal(all.length, 60);
    await again.close();
  });
});

describe('the outbox journal (D-84)', () => {
  test('D-84: events adopt could not write (a full disk) are written by settled once the disk takes them, and survive a reopen', async () => {
    const dataDir = await tempDir();
    const o = await FileOutbox.open(dataDir);
    const fault = await injectDiskFault();
    try {
      fault.full = true;
      o.adopt([event('evt_a1'), event('evt_a2')]);
      assert.ok(fault.refused > 0, 'the write was refused');
      // Remembered at once (the worker may start on them); not durable here, which settled says.
      assert.ok(await o.event('evt_a2'));
      await assert.rejects(o.settled(), { code: 'ENOSPC' });
      fault.full = false;
      await o.settled();
    } finally {
      fault.restore();
    }
    // Read back from the file alone, without close's own settle.
    const again = await FileOutbox.open(dataDir);
    assert.deepEqual([!!(await again.event('evt_a1')), !!(await again.event('evt_a2'))], [true, true]);
    await again.close();
    await o.close();
  });

  test('D-87: at start-up, carried events older than the retention given (WEBHOOK_RETENTION_DAYS) are not brought back; with none given, all are', async () => {
    const carried = [event('evt_old', ['we_a'], Math.floor(Date.now() / 1000) - 3 * 86_400), event('evt_new')];
    const kept = await FileOutbox.open(await tempDir(), carried, 2 * 86_400_000);
    assert.equal(await kept.event('evt_old'), undefined);
    assert.ok(await kept.event('evt_new'));
    await kept.close();
    const all = await FileOutbox.open(await tempDir(), carried);
    assert.ok(await all.event('evt_old'));
    await all.close();
  });
});

test("D-88: an app's listeners are counted, each release once; its first and last are told (PgFollows announces them)", () => {
  const told: string[] = [];
  const follows = new LocalFollows({ first: (a) => void told.push(`first ${a}`), last: (a) => void told.push(`last ${a}`) });
  const one = follows.follow('app_a');
  const two = follows.follow('app_a');
  assert.deepEqual([follows.has('app_a'), follows.has('app_b'), follows.size], [true, false, 1]);
  one();
  one();
  assert.ok(follows.has('app_a'), 'a second release of the same listener counts once');
  two();
  assert.deepEqual([follows.has('app_a'), follows.apps()], [false, []]);
  assert.deepEqual(told, ['first app_a', 'last app_a']);
});
