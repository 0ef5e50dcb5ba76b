// The webhook outbox of the file store (docs/webhooks.md, D-84…D-87): an event rides in its change's
// journal line and is brought into `webhooks.jsonl` at start-up when the process ended first; a
// compaction of conversations.jsonl keeps what the outbox still lacks; leases, settling, redelivery,
// the failing-since clock and retention, all surviving a reopen.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { FileStore } from '../src/store/file/file-store.ts';
import { FileOutbox } from '../src/store/file/webhooks.ts';
import type { ChangeEvents } from '../src/store/types.ts';
import { LocalFollows, type OutboxEvent } from '../src/store/webhooks.ts';
import { injectDiskFault } from './support/faulty-fs.ts';
import { tempDir } from './support/helpers.ts';
import { record } from './support/records.ts';

const now = () => Math.floor(Date.now() / 1000);

function event(id: string, endpoints = ['we_a'], at = now()): OutboxEvent {
  return {
    id,
    team_id: 'team_demo',
    app_id: 'app_demo',
    type: 'conversation.created',
    created_at: at,
    body: JSON.stringify({ id }),
    deliveries: endpoints.map((endpoint_id) => ({ endpoint_id, state: 'pending' as const })),
  };
}

/** Events for every change, numbered. */
function numbered(): ChangeEvents {
  let n = 0;
  return {
    wants: () => true,
    created: () => [event(`evt_c${++n}`)],
    updated: () => [event(`evt_u${++n}`)],
    saved: () => [event(`evt_s${++n}`)],
  };
}

describe('D-84: events written with their change (file store)', () => {
  test('an event whose change is durable reaches the outbox at start-up, even if the outbox journal lost it', async () => {
    const dataDir = await tempDir();
    const store = new FileStore({ dataDir });
    await store.open();
    store.changeEvents = numbered();
    await store.putConversation(record('conv_w1'));
    await store.updateConversation('conv_w1', () => ({ title: 'Renamed' }));
    await store.close();
    // As if the process had died after the journal line and before the outbox's own line.
    await fs.writeFile(path.join(dataDir, 'webhooks.jsonl'), '');
    const again = new FileStore({ dataDir });
    await again.open();
    assert.ok(await again.outbox.event('evt_c1'));
    assert.ok(await again.outbox.event('evt_u2'));
    const due = await again.outbox.claim('w', Date.now() + 1000, 10, 1000, new Set());
    assert.deepEqual(due.map((c) => c.event.id).sort(), ['evt_c1']);
    await again.close();
  });

  test('a change that throws writes no event; an unchanged update writes none either', async () => {
    const dataDir = await tempDir();
    const store = new FileStore({ dataDir });
    await store.open();
    store.changeEvents = numbered();
    await store.putConversation(record('conv_w2'));
    await assert.rejects(
      store.updateConversation('conv_w2', () => {
        throw new Error('refused');
      }),
    );
    await store.updateConversation('conv_w2', () => ({ title: null }));
    const all = await store.outbox.deliveries({ team_id: 'team_demo', limit: 10 });
    assert.deepEqual(
      all.map((d) => d.event.id),
      ['evt_c1'],
    );
    await store.close();
  });

  test('a compaction of conversations.jsonl keeps every event in the outbox', async () => {
    const dataDir = await tempDir();
    const store = new FileStore({ dataDir, compaction: { factor: 1, slackBytes: 0 } });
    await store.open();
    store.changeEvents = numbered();
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

describe('the outbox journal (D-85…D-87)', () => {
  test('a lease keeps a delivery from a second claim; settle, redeliver and the log survive a reopen', async () => {
    const dataDir = await tempDir();
    const o = await FileOutbox.open(dataDir);
    await o.add([event('evt_1', ['we_a', 'we_b']), event('evt_2', ['we_a'])]);
    const t = Date.now() + 1000;
    const first = await o.claim('w1', t, 10, 60_000, new Set());
    // One per endpoint at a time: evt_1→we_a and evt_1→we_b, not evt_2→we_a.
    assert.deepEqual(first.map((c) => `${c.event.id}/${c.delivery.endpoint_id}`).sort(), ['evt_1/we_a', 'evt_1/we_b']);
    assert.deepEqual(
      (await o.claim('w2', t, 10, 60_000, new Set())).map((c) => c.event.id),
      ['evt_2'],
    );
    const attempt = (id: string, status: number | null) => ({
      id,
      event_id: 'evt_1',
      endpoint_id: 'we_a',
      created_at: now(),
      status,
      duration_ms: 3,
      response: 'x',
      error: null,
    });
    await o.settle(attempt('wa_1', 500), {
      ...first.find((c) => c.delivery.endpoint_id === 'we_a')!.delivery,
      attempts: 1,
      state: 'failed',
    });
    assert.equal(await o.redeliver('evt_1', ['we_a'], Date.now()), 1);
    await o.close();
    const again = await FileOutbox.open(dataDir);
    const log = await again.deliveries({ team_id: 'team_demo', event_id: 'evt_1', endpoint_id: 'we_a', limit: 10 });
    assert.equal(log[0]!.delivery.state, 'pending');
    assert.equal(log[0]!.attempts[0]!.status, 500);
    assert.ok((await again.failingSince('we_a'))! > 0);
    assert.equal(await again.failingSince('we_b'), null);
    await again.settle(attempt('wa_2', 200), { ...log[0]!.delivery, attempts: 2, state: 'succeeded' });
    assert.equal(await again.failingSince('we_a'), null);
    await again.close();
  });

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

  test('retention drops finished events with their attempts and keeps pending ones', async () => {
    const dataDir = await tempDir();
    const o = await FileOutbox.open(dataDir);
    const old = now() - 10 * 86_400;
    await o.add([event('evt_old', ['we_a'], old), event('evt_pending', ['we_a'], old), event('evt_new', ['we_a'])]);
    await o.settle(
      { id: 'wa_9', event_id: 'evt_old', endpoint_id: 'we_a', created_at: old, status: 200, duration_ms: 1, response: '', error: null },
      { event_id: 'evt_old', endpoint_id: 'we_a', state: 'succeeded', attempts: 1, next_at: 0 },
    );
    await o.prune(Date.now() - 7 * 86_400_000);
    assert.equal(await o.event('evt_old'), undefined);
    assert.ok(await o.event('evt_pending'));
    await o.close();
    const again = await FileOutbox.open(dataDir);
    assert.equal(await again.event('evt_old'), undefined);
    assert.ok(await again.event('evt_new'));
    await again.close();
  });

  test('D-87: at start-up, carried events older than the retention given (WEBHOOK_RETENTION_DAYS) are not brought back; with none given, all are', async () => {
    const carried = [event('evt_old', ['we_a'], now() - 3 * 86_400), event('evt_new')];
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
