// What only the PostgreSQL store does (src/store/pg-store.ts, docs/postgres.md): two stores on one
// database act as two instances. A response produced on one is followed and cancelled from the other;
// one whose producer died is taken over once its lease expires (D-38); concurrent exchanges from two
// instances on one conversation all land (row locks, no lost update).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UnsequencedEvent } from '../../src/contract/index.ts';
import { PgStore } from '../../src/store/pg-store.ts';
import { StoreError, type LiveResponseStart } from '../../src/store/types.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { record, save } from '../support/store-suite.ts';

usePostgres();

const start = (id: string, c = 'conv_p1'): LiveResponseStart => ({ id, app_id: 'app_demo', conversation_id: c, created_at: 1_700_000_000, input: { content: 'hi', metadata: { k: 'v' } } });
const ev = (event: string, n: number) => ({ event, data: { n } }) as unknown as UnsequencedEvent;

async function two(): Promise<[PgStore, PgStore]> {
  const url = await freshDatabase();
  // The database layer across instances (the serving instance's lock is for the in-memory mirror).
  const a = new PgStore({ url, max: 3, exclusive: false });
  const b = new PgStore({ url, max: 3, exclusive: false });
  await Promise.all([a.open(), b.open()]);
  return [a, b];
}

test('a response produced on one instance is followed and cancelled from another; D-35 holds across them', async () => {
  const [a, b] = await two();
  try {
    assert.deepEqual(await a.beginResponse(start('resp_x')), {});
    assert.deepEqual(await b.beginResponse(start('resp_y')), { running: 'resp_x' });
    const asked = new Promise<void>((resolve) => a.onCancelRequest('resp_x', resolve));
    await b.requestCancel('resp_x');
    await asked;
    await a.appendResponseEvent('resp_x', ev('response.created', 0));
    const followed = (async () => {
      const got: number[] = [];
      for await (const e of b.followResponse('resp_x', -1)) got.push((e as unknown as { data: { n: number } }).data.n);
      return got;
    })();
    await a.appendResponseEvent('resp_x', ev('response.output_text.delta', 1));
    await a.appendResponseEvent('resp_x', ev('response.failed', 2));
    assert.deepEqual(await followed, [0, 1, 2]);
    assert.deepEqual((await b.responseTrace('resp_x'))!.start.input, { content: 'hi', metadata: { k: 'v' } });
    await assert.rejects(b.appendResponseEvent('resp_x', ev('response.completed', 3)), /not a live response of this instance/);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('D-38: a response whose instance died is handed to start-up once its lease expired, with its events, and only then', async () => {
  const [a, b] = await two();
  try {
    await a.beginResponse(start('resp_dead'));
    await a.appendResponseEvent('resp_dead', ev('response.created', 0));
    assert.deepEqual(await b.unfinishedResponses(), [], 'a live lease is left to its owner');
    // Instance a stops renewing (as a kill -9 leaves it): its lease runs out.
    await a.sql`UPDATE live_responses SET lease_until = 0 WHERE id = 'resp_dead'`;
    const taken = await b.unfinishedResponses();
    assert.deepEqual(taken.map((t) => [t.start.id, t.events!.length, t.ended]), [['resp_dead', 1, false]]);
    assert.deepEqual(await a.unfinishedResponses(), [], 'taken over once');
    await b.appendResponseEvent('resp_dead', ev('response.failed', 1));
    assert.equal((await a.responseTrace('resp_dead'))!.ended, true);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('exchanges and renames of one conversation from two instances at once: every one lands, none lost', async () => {
  const [a, b] = await two();
  try {
    await a.putConversation(record('conv_two'));
    await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).saveResponse(save('conv_two', `resp_${i}`))),
      b.updateConversation('conv_two', (r) => ({ ...r!, title: 'from b' })),
    ]);
    const file = await a.readConversationFile('conv_two');
    assert.equal(file.responses.length, 6);
    assert.equal(file.items.length, 12);
    assert.deepEqual(new Set(file.items.map((i) => i.id)).size, 12);
    const [row] = await a.sql`SELECT title, message_count FROM conversations WHERE id = 'conv_two'`;
    assert.deepEqual([row!.title, row!.message_count], ['from b', 12]);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('a second Parley on a database already served is refused, naming the database without its password; free again once the first closes', async () => {
  const url = await freshDatabase();
  const a = new PgStore({ url, max: 2 });
  await a.open();
  const b = new PgStore({ url, max: 2, lockWaitMs: 100 });
  try {
    await assert.rejects(b.open(), (e: Error) => e instanceof StoreError && /another Parley serves this database/.test(e.message) && !e.message.includes(new URL(url).password));
  } finally {
    await a.close();
  }
  const c = new PgStore({ url, max: 2 });
  await c.open();
  await c.close();
});

test('D-38: the sole instance restarted after a kill -9 hands start-up every response the dead one left, without waiting for its lease', async () => {
  const url = await freshDatabase();
  const dead = new PgStore({ url, max: 2, exclusive: false });
  await dead.open();
  await dead.beginResponse(start('resp_cut'));
  await dead.appendResponseEvent('resp_cut', ev('response.created', 0));
  // As a kill -9 leaves it: the lease is still running, nothing ended the response.
  await dead.sql.end();
  const next = new PgStore({ url, max: 2 });
  await next.open();
  try {
    const taken = await next.unfinishedResponses();
    assert.deepEqual(taken.map((t) => [t.start.id, t.events!.length]), [['resp_cut', 1]]);
    await next.appendResponseEvent('resp_cut', ev('response.failed', 1));
    assert.equal((await next.responseTrace('resp_cut'))!.ended, true);
  } finally {
    await next.close();
  }
});
