// Webhooks on PostgreSQL with two instances (docs/webhooks.md, D-84, D-85): events written in their
// change's transaction, each delivery leased to one instance at a time (FOR UPDATE SKIP LOCKED), and an
// instance killed with SIGKILL mid-delivery hands its deliveries to the other once their leases end.
// Every acknowledged conversation's event arrives, verified with the secret key; each delivery has one
// successful attempt recorded.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { Webhook } from 'standardwebhooks';
import { webhookSecretText, webhookSigningKey } from '../../src/core/api-keys.ts';
import { startInstance, type Instance } from '../support/fleet.ts';
import { APP, KEY } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { createEndpoint, demoAdminToken } from '../support/webhook-receiver.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { outboxEvent, upTo } from '../support/outbox-suite.ts';

usePostgres();

const SECRET = webhookSecretText(webhookSigningKey(KEY));
const instances: Instance[] = [];
let receiver: http.Server | undefined;
let databaseUrl: string;
before(async () => {
  databaseUrl = await freshDatabase();
});
after(async () => {
  for (const i of instances) await i.kill();
  if (receiver) await new Promise((r) => receiver!.close(r));
});

test('two instances deliver every event; one killed mid-delivery, the other finishes its work; one success each', {
  timeout: 240_000,
}, async () => {
  const received = new Map<string, { conversation: string; count: number }>();
  const waiters: Array<() => void> = [];
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      const ev = new Webhook(SECRET).verify(body, headers) as { id: string; data: { id: string } };
      // A slow receiver: attempts are in flight when an instance dies.
      setTimeout(() => {
        received.set(ev.id, { conversation: ev.data.id, count: (received.get(ev.id)?.count ?? 0) + 1 });
        res.writeHead(200).end('ok');
        for (const w of waiters.splice(0)) w();
      }, 30);
    });
  });
  await new Promise<void>((r) => receiver!.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const env = { WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2', WEBHOOK_TIMEOUT_MS: '2000' };
  const a = await startInstance({ databaseUrl, env });
  const b = await startInstance({ databaseUrl, env });
  instances.push(a, b);
  const token = await demoAdminToken(a.origin);
  const endpointId = await createEndpoint(a.origin, token, url, ['conversation.created'], APP);
  // D-78: B sees the endpoint within 2 s; events are made only for endpoints an instance knows.
  for (;;) {
    const r = await fetch(`${b.origin}/admin/v1/webhook_endpoints/${endpointId}`, { headers: { authorization: `Bearer ${token}` } });
    if (r.status === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const create = async (i: Instance) => {
    const r = await fetch(`${i.base}/apps/${APP}/conversations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(r.status, 200);
    return ((await r.json()) as { id: string }).id;
  };
  const acknowledged: string[] = [];
  for (let i = 0; i < 40; i++) acknowledged.push(...(await Promise.all([create(a), create(b)])));
  // B dies while deliveries are under way (some of them leased to it).
  while (received.size < 10) await new Promise<void>((r) => waiters.push(r));
  await b.kill();
  for (let i = 0; i < 10; i++) acknowledged.push(await create(a));
  const arrived = () => new Set([...received.values()].map((v) => v.conversation));
  while (!acknowledged.every((id) => arrived().has(id))) await new Promise<void>((r) => waiters.push(r));
  assert.equal(new Set(acknowledged).size, acknowledged.length);

  const sql = postgres(databaseUrl, { max: 1 });
  try {
    // A delivery B had attempted (received) but not recorded is attempted again once its lease ends.
    while ((await sql`SELECT 1 FROM webhook_deliveries WHERE state = 'pending'`).length > 0) await new Promise((r) => setTimeout(r, 200));
    const states = await sql<{ state: string; n: string }[]>`SELECT state, count(*) AS n FROM webhook_deliveries GROUP BY state`;
    assert.deepEqual(
      states.map((s) => [s.state, Number(s.n)]),
      [['succeeded', acknowledged.length]],
    );
    const twice = await sql`SELECT event_id FROM webhook_attempts WHERE status = 200 GROUP BY event_id HAVING count(*) > 1`;
    assert.equal(twice.length, 0, 'a delivery with two successful attempts recorded');
  } finally {
    await sql.end();
  }
  // At least once: only attempts in flight when B died may have been received twice.
  const duplicates = [...received.values()].filter((v) => v.count > 1).length;
  assert.ok(duplicates <= 16, `${duplicates} events received twice`);
});

// The outbox's contract (settle, redeliver, the log, the failing clock, retention) is the outbox suite's
// (test/proof/pg-outbox-contract.test.ts); here, what only PostgreSQL does: claims made at once.
test('the PostgreSQL outbox: claims made at once skip the rows another has locked; each delivery to one owner, one per endpoint in each', {
  timeout: 120_000,
}, async () => {
  const store = new PgStore({ url: await freshDatabase() });
  await store.open();
  try {
    const o = store.outbox;
    await o.add([outboxEvent('evt_1', ['we_a', 'we_b']), outboxEvent('evt_2', ['we_a', 'we_b'])]);
    const now = Date.now() + 1000;
    const [one, two] = await Promise.all([
      o.claim('w1', now, 60_000, upTo(10, new Set())),
      o.claim('w2', now, 60_000, upTo(10, new Set())),
    ]);
    // Claims made at once skip the rows the other has locked (SKIP LOCKED): what neither kept is claimed next.
    const three = await o.claim('w3', now, 60_000, upTo(10, new Set()));
    const keys = [...one, ...two, ...three].map((c) => `${c.event.id}/${c.delivery.endpoint_id}`);
    assert.equal(new Set(keys).size, keys.length);
    assert.equal(keys.length, 4);
    for (const batch of [one, two, three]) assert.equal(new Set(batch.map((c) => c.delivery.endpoint_id)).size, batch.length);
    assert.deepEqual(await o.claim('w4', now, 60_000, upTo(10, new Set())), []);
  } finally {
    await store.close();
  }
});
