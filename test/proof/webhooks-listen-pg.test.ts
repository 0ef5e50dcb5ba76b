// `parley webhooks listen` with two instances on PostgreSQL (docs/webhooks.md, D-88): connected to one
// instance, it forwards every event of its app whichever instance recorded it, each once, with headers
// that verify with the secret key, though no endpoint wants them; and the poll behind it (the outbox read
// in `seq` order) tells an event whose transaction committed after a later one's, once.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { Webhook } from 'standardwebhooks';
import { webhookSecretText, webhookSigningKey } from '../../src/core/api-keys.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import type { OutboxEvent } from '../../src/store/webhooks.ts';
import { serverEnv, startCli, waitFor } from '../support/cli-helpers.ts';
import { type Instance, startInstance } from '../support/fleet.ts';
import { APP, KEY } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { demoAdminToken, type Receiver, startReceiver } from '../support/webhook-receiver.ts';

usePostgres();

const SECRET = webhookSecretText(webhookSigningKey(KEY));
const instances: Instance[] = [];
let local: Receiver | undefined;
before(async () => {
  local = await startReceiver();
});
after(async () => {
  for (const i of instances) await i.kill();
  await local?.close();
});

async function call(i: Instance, method: string, path: string, body: unknown = {}): Promise<{ id: string }> {
  const r = await fetch(`${i.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200, await r.clone().text());
  return (await r.json()) as { id: string };
}

const forwarded = (r: Receiver, conversation: string, type = 'conversation.created') =>
  r.received.filter((x) => x.json?.type === type && x.json?.data?.id === conversation);

test('listen on A forwards the events B records, each once, verified; and A’s own, once', { timeout: 180_000 }, async () => {
  const databaseUrl = await freshDatabase();
  const a = await startInstance({ databaseUrl });
  const b = await startInstance({ databaseUrl });
  instances.push(a, b);
  const token = await demoAdminToken(a.origin);
  const run = startCli(['webhooks', 'listen', '--forward-to', local!.url], { env: serverEnv(a.base, APP, { PARLEY_ADMIN_TOKEN: token }) });
  try {
    await waitFor(run.stderr, /Ready: forwarding app_demo/);
    // B learns of the listener by a notice (milliseconds): until then its changes make no event. Wait
    // for that condition: a conversation created on B whose event reaches the listener on A.
    for (;;) {
      const { id } = await call(b, 'POST', `/apps/${APP}/conversations`);
      const arrived = local!.waitFor(() => forwarded(local!, id).length > 0).then(() => true);
      if (await Promise.race([arrived, new Promise<boolean>((r) => setTimeout(() => r(false), 500))])) break;
    }
    // Now every change, on either instance, reaches the listener once.
    const made: string[] = [];
    for (let i = 0; i < 10; i++) {
      const [x, y] = await Promise.all([call(a, 'POST', `/apps/${APP}/conversations`), call(b, 'POST', `/apps/${APP}/conversations`)]);
      made.push(x.id, y.id);
    }
    await call(b, 'PATCH', `/apps/${APP}/conversations/${made[1]}`, { title: 'renamed on B' });
    await local!.waitFor(() => made.every((id) => forwarded(local!, id).length > 0));
    await local!.waitFor(() => forwarded(local!, made[1]!, 'conversation.updated').length > 0);
    for (const id of made)
      assert.equal(forwarded(local!, id).length, 1, `conversation ${id} forwarded ${forwarded(local!, id).length} times`);
    const ids = local!.received.map((x) => x.headers['webhook-id']);
    assert.equal(new Set(ids).size, ids.length, 'an event forwarded twice');
    for (const x of local!.received) new Webhook(SECRET).verify(x.body, x.headers);
    await waitFor(
      run.stdout,
      new RegExp(`conversation\\.updated \\[${forwarded(local!, made[1]!, 'conversation.updated')[0]!.headers['webhook-id']}\\]  <-- 200`),
    );
  } finally {
    await a.stop();
    const done = await run.done;
    assert.equal(done.code, 3, done.stderr);
  }
});

test('the poll reads past a number whose transaction commits later, then tells that event too; each once', {
  timeout: 120_000,
}, async () => {
  const url = await freshDatabase();
  const one = new PgStore({ url });
  const two = new PgStore({ url });
  await one.open();
  await two.open();
  const sql = postgres(url, { max: 2 });
  try {
    const told: OutboxEvent[] = [];
    const waiters: Array<() => void> = [];
    one.outbox.onEvents((events) => {
      told.push(...events);
      for (const w of waiters.splice(0)) w();
    });
    const until = async (pred: () => boolean) => {
      while (!pred()) await new Promise<void>((r) => waiters.push(r));
    };
    const stop = one.outbox.follows.follow(APP);
    // The other store learns of the follow by its notice (a condition, polled).
    while (!two.outbox.follows.has(APP)) await new Promise((r) => setTimeout(r, 20));
    const ev = (id: string): OutboxEvent => ({
      id,
      team_id: 'team_demo',
      app_id: APP,
      type: 'conversation.created',
      created_at: Math.floor(Date.now() / 1000),
      body: JSON.stringify({ id }),
      deliveries: [],
    });
    // A transaction takes its number first and commits last.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let inserted!: () => void;
    const numbered = new Promise<void>((r) => (inserted = r));
    const slow = sql.begin(async (tx) => {
      await tx`INSERT INTO webhook_events (id, team_id, app_id, type, created_at, body, deliveries)
               VALUES ('evt_slow', 'team_demo', ${APP}, 'conversation.created', 0, '{"id":"evt_slow"}', '[]')`;
      inserted();
      await held;
    });
    await numbered;
    await two.outbox.add([ev('evt_after')]);
    await until(() => told.some((e) => e.id === 'evt_after'));
    assert.equal(
      told.some((e) => e.id === 'evt_slow'),
      false,
    );
    release();
    await slow;
    await until(() => told.some((e) => e.id === 'evt_slow'));
    // One's own event is told by one itself, and the poll does not tell it again.
    await one.outbox.add([ev('evt_own')]);
    await two.outbox.add([ev('evt_last')]);
    await until(() => told.some((e) => e.id === 'evt_last'));
    assert.deepEqual(told.map((e) => e.id).sort(), ['evt_after', 'evt_last', 'evt_own', 'evt_slow']);
    stop();
  } finally {
    await sql.end();
    await one.close();
    await two.close();
  }
});
