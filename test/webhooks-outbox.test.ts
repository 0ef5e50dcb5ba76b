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
    const kept = await FileOutbox.open(await tempDir(), carried, { webhookRetentionMs: 2 * 86_400_000 });
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

describe('D-167: the outbox holds bodies and attempts in webhooks.jsonl, memory an index', () => {
  const team = { team_id: 'team_demo', limit: 100 };
  /** The delivery log, bodies and attempts included, as data. */
  const view = async (o: FileOutbox) => JSON.stringify(await o.deliveries(team));
  const tried = (id: string, eventId: string, status: number, response: string, at = Math.floor(Date.now() / 1000)) => ({
    id,
    event_id: eventId,
    endpoint_id: 'we_a',
    created_at: at,
    status,
    duration_ms: 1,
    response,
    error: null,
  });
  const done = (eventId: string, state: 'succeeded' | 'failed', attempts = 1) => ({
    event_id: eventId,
    endpoint_id: 'we_a',
    state,
    attempts,
    next_at: 0,
  });

  /** Opened again: the same log, and a claim at `at` leases the deliveries of `due`. */
  async function agrees(dataDir: string, log: string, at: number, due: string[]) {
    const again = await FileOutbox.open(dataDir);
    assert.equal(await view(again), log);
    assert.deepEqual(
      (await again.claim('w', at, 1000, upTo(5))).map((c) => c.event.id),
      due,
    );
    await again.close();
  }

  test('a body and an attempt are read from the file when claimed or when the log is read, after a restart too', async () => {
    const dataDir = await tempDir();
    const file = path.join(dataDir, 'webhooks.jsonl');
    const first = await FileOutbox.open(dataDir);
    await first.add([{ ...event('evt_b1'), body: JSON.stringify({ text: 'A'.repeat(64) }) }]);
    await first.settle(tried('wa_1', 'evt_b1', 500, 'R'.repeat(16)), { ...done('evt_b1', 'failed'), state: 'pending' });
    await first.close();
    const o = await FileOutbox.open(dataDir);
    // The same bytes changed under the open outbox: what it answers comes from the file.
    const text = await fs.readFile(file, 'utf8');
    await fs.writeFile(file, text.replace('A'.repeat(64), 'B'.repeat(64)).replace('R'.repeat(16), 'S'.repeat(16)));
    assert.equal((await o.event('evt_b1'))?.body, JSON.stringify({ text: 'B'.repeat(64) }));
    const [c] = await o.claim('w', Date.now() + 1000, 1000, upTo(1));
    assert.equal(c?.event.body, JSON.stringify({ text: 'B'.repeat(64) }));
    const [log] = await o.deliveries(team);
    assert.deepEqual(
      log?.attempts.map((a) => a.response),
      ['S'.repeat(16)],
    );
    await o.close();
  });

  test('D-87: a prune is journaled (a restart forgets the same without a compaction); start-up compacts once it is due', async () => {
    const dataDir = await tempDir();
    const file = path.join(dataDir, 'webhooks.jsonl');
    const old = Math.floor(Date.now() / 1000) - 10 * 86_400;
    const o = await FileOutbox.open(dataDir);
    await o.add([...Array.from({ length: 20 }, (_, i) => event(`evt_old${i}`, ['we_a'], old)), event('evt_new')]);
    for (let i = 0; i < 20; i++) await o.settle(tried(`wa_${i}`, `evt_old${i}`, 200, 'ok', old), done(`evt_old${i}`, 'succeeded'));
    await o.settle(tried('wa_new', 'evt_new', 500, 'no'), done('evt_new', 'failed'));
    await o.redeliver('evt_new', ['we_a'], Date.now() + 60_000);
    await o.prune(Date.now() - 7 * 86_400_000);
    const kept = await view(o);
    await o.close();
    const bytes = (await fs.stat(file)).size;
    const again = await FileOutbox.open(dataDir);
    assert.equal(await view(again), kept);
    assert.equal((await fs.stat(file)).size, bytes, 'under the default slack the file is not rewritten');
    await again.close();
    const compacted = await FileOutbox.open(dataDir, [], { compaction: { factor: 1, slackBytes: 0 } });
    assert.ok((await fs.stat(file)).size < bytes / 4, 'start-up compacted the file');
    assert.equal(await view(compacted), kept, 'the redelivered delivery keeps its state and its attempt');
    await compacted.close();
    assert.ok(!(await fs.readFile(file, 'utf8')).includes('evt_old'));
    await agrees(dataDir, kept, Date.now() + 61_000, ['evt_new']);
  });

  test('a compaction while running moves what memory points at, with the lines written while it runs; a restart agrees', async () => {
    const dataDir = await tempDir();
    const file = path.join(dataDir, 'webhooks.jsonl');
    const old = Math.floor(Date.now() / 1000) - 10 * 86_400;
    const o = await FileOutbox.open(dataDir, [], { compaction: { factor: 1, slackBytes: 0 } });
    await o.add(Array.from({ length: 20 }, (_, i) => event(`evt_old${i}`, ['we_a'], old)));
    await o.add([event('evt_k1'), event('evt_k2')]);
    for (let i = 0; i < 20; i++) await o.settle(tried(`wa_${i}`, `evt_old${i}`, 200, 'ok', old), done(`evt_old${i}`, 'succeeded'));
    await o.settle(tried('wa_k1', 'evt_k1', 500, 'first'), done('evt_k1', 'failed'));
    const bytes = (await fs.stat(file)).size;
    await o.prune(Date.now() - 7 * 86_400_000);
    // The compaction has begun (its snapshot taken); these lines land in its tail.
    await o.settle(tried('wa_k2', 'evt_k2', 200, 'second'), done('evt_k2', 'succeeded'));
    await o.add([event('evt_k3')]);
    await o.redeliver('evt_k1', ['we_a'], Date.now());
    const kept = await view(o);
    await o.idle();
    assert.ok((await fs.stat(file)).size < bytes / 2, 'the file was compacted');
    assert.equal(await view(o), kept);
    await o.settle(tried('wa_k3', 'evt_k3', 200, 'third'), done('evt_k3', 'succeeded'));
    const after = await view(o);
    await o.close();
    await agrees(dataDir, after, Date.now() + 1000, ['evt_k1']);
  });

  test('a compaction that fails (a full disk) is told to warn and loses nothing; the next prune compacts', async () => {
    const dataDir = await tempDir();
    const warned: string[] = [];
    const opts = { compaction: { factor: 1, slackBytes: 0 }, warn: (m: string) => void warned.push(m) };
    const old = Math.floor(Date.now() / 1000) - 10 * 86_400;
    const o = await FileOutbox.open(dataDir, [], opts);
    await o.add([event('evt_o1', ['we_a'], old), event('evt_o2', ['we_a'], old + 60), event('evt_k')]);
    await o.settle(tried('wa_1', 'evt_o1', 200, 'ok', old), done('evt_o1', 'succeeded'));
    await o.settle(tried('wa_2', 'evt_o2', 200, 'ok', old), done('evt_o2', 'succeeded'));
    const fault = await injectDiskFault();
    try {
      fault.only = (file) => file.endsWith('.tmp');
      fault.full = true;
      await o.prune((old + 30) * 1000);
      await o.idle();
    } finally {
      fault.restore();
    }
    assert.equal(warned.length, 1);
    assert.match(warned[0]!, /webhooks\.jsonl not compacted: .*ENOSPC/);
    const kept = await view(o);
    await o.prune((old + 90) * 1000);
    await o.idle();
    assert.ok(!(await fs.readFile(path.join(dataDir, 'webhooks.jsonl'), 'utf8')).includes('evt_o'), 'compacted');
    assert.deepEqual(
      JSON.parse(kept).map((d: { event: { id: string } }) => d.event.id),
      ['evt_k', 'evt_o2'],
      'the first prune kept the rest',
    );
    const after = await view(o);
    await o.close();
    await agrees(dataDir, after, Date.now() + 1000, ['evt_k']);
  });
});
