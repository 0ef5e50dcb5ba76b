// D-156: the failed deliveries found and sent again by the server: `GET /webhook_deliveries?failed=true`
// filters before its limit (and is in /admin/v1/openapi.json), `POST /webhook_deliveries/redeliver` sends
// every delivery that ended failed since a time, audited per event, an admin's only; `parley webhooks
// deliveries --failed` and `redeliver --failed --since 24h` use them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { publishedDocuments } from '../src/api/routes.ts';
import { adminToken } from './support/admin-token.ts';
import { runCli, serverEnv } from './support/cli-helpers.ts';
import { APP, startTestServer, type TestServer } from './support/helpers.ts';
import { type Receiver, startReceiver } from './support/webhook-receiver.ts';

const T = { timeout: 30_000 };
let server: TestServer;
let rx: Receiver;
let token: string;
let env: Record<string, string>;
/** The receiver answers 500 while this is true. */
let down = true;
let endpoint: string;
/** The event whose delivery failed (older), and the one delivered (newer). */
let failedEvent: string;
let deliveredEvent: string;

async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${new URL(server.baseUrl).origin}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** The endpoint's deliveries whose state is `state`, asked until there are `n` (bounded by the test's timeout). */
async function deliveriesIn(state: string, n: number): Promise<any[]> {
  for (;;) {
    const r = await admin('GET', `/webhook_deliveries?endpoint_id=${endpoint}`);
    const found = r.body.data.filter((d: any) => d.state === state);
    if (found.length >= n) return found;
  }
}

before(async () => {
  // Two attempts (the first and one retry 50 ms later), then the delivery ends failed.
  server = await startTestServer({ passwordHashCost: 10, webhookRetrySchedule: [0.05], webhookPollMs: 20 });
  rx = await startReceiver(() => (down ? { status: 500, body: 'down' } : { status: 200, body: 'ok' }));
  token = await adminToken(server.baseUrl);
  env = serverEnv(server.baseUrl, APP, { PARLEY_ADMIN_TOKEN: token });
  const made = await admin('POST', '/webhook_endpoints', { app_id: APP, url: rx.url, events: ['conversation.created'] });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  endpoint = made.body.id;
  await server.call('POST', `/apps/${APP}/conversations`, {});
  [{ event_id: failedEvent }] = await deliveriesIn('failed', 1);
  down = false;
  await server.call('POST', `/apps/${APP}/conversations`, {});
  [{ event_id: deliveredEvent }] = await deliveriesIn('succeeded', 1);
});
after(async () => {
  await server?.close();
  await rx?.close();
});

describe('the failed deliveries (D-156)', () => {
  test('failed=true filters before the limit; since keeps recent events; both are in the document', T, async () => {
    const newest = await admin('GET', `/webhook_deliveries?endpoint_id=${endpoint}&limit=1`);
    assert.deepEqual(
      newest.body.data.map((d: any) => d.event_id),
      [deliveredEvent],
    );
    const failed = await admin('GET', `/webhook_deliveries?endpoint_id=${endpoint}&limit=1&failed=true`);
    assert.deepEqual(
      failed.body.data.map((d: any) => [d.event_id, d.state, d.attempts]),
      [[failedEvent, 'failed', 2]],
    );
    const future = Math.floor(Date.now() / 1000) + 3600;
    assert.deepEqual((await admin('GET', `/webhook_deliveries?endpoint_id=${endpoint}&since=${future}`)).body.data, []);
    const bad = await admin('GET', '/webhook_deliveries?failed=yes');
    assert.deepEqual([bad.status, bad.body.error.param], [400, 'failed']);
    const op = (publishedDocuments().admin as any).paths['/webhook_deliveries'].get;
    const names = op.parameters.filter((p: any) => p.in === 'query').map((p: any) => p.name);
    assert.ok(names.includes('failed') && names.includes('since'), names.join());
    assert.ok((publishedDocuments().admin as any).paths['/webhook_deliveries/redeliver'].post);
  });

  test(
    'parley webhooks deliveries --failed lists the failed only; redeliver --failed --since 24h sends them again, audited',
    T,
    async () => {
      const all = await runCli(['webhooks', 'deliveries', '--endpoint', endpoint], { env });
      assert.equal(all.code, 0, all.stderr);
      assert.ok(all.stdout.includes(deliveredEvent) && all.stdout.includes(failedEvent));
      const failed = await runCli(['webhooks', 'deliveries', '--endpoint', endpoint, '--failed', '--since', '24h'], { env });
      assert.equal(failed.code, 0, failed.stderr);
      assert.match(failed.stdout, new RegExp(`^EVENT .*\\n${failedEvent} +conversation\\.created +${endpoint} +failed +2 `));
      assert.ok(!failed.stdout.includes(deliveredEvent));

      const before = rx.received.length;
      const again = await runCli(['webhooks', 'redeliver', '--failed', '--since', '24h', '--endpoint', endpoint], { env });
      assert.equal(again.code, 0, again.stderr);
      assert.equal(again.stdout, 'redelivering 1 failed delivery of 1 event\n');
      await rx.waitFor((r) => r.length > before && r.at(-1)!.headers['webhook-id'] === failedEvent);
      assert.equal((await deliveriesIn('succeeded', 2)).length, 2, 'the failed one was sent again and delivered');
      const audit = await admin('GET', '/audit?action=webhook_event.redelivered&limit=1');
      assert.deepEqual(audit.body.data[0].target, { type: 'event', id: failedEvent });

      const none = await runCli(['webhooks', 'redeliver', '--failed', '--since', '24h', '--endpoint', endpoint], { env });
      assert.equal(none.stdout, '(no failed deliveries since then)\n');
      for (const args of [['--failed'], [], ['evt_x', '--failed', '--since', '1h'], ['--failed', '--since', 'soon']]) {
        const refused = await runCli(['webhooks', 'redeliver', ...args], { env });
        assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.stderr}`);
      }
    },
  );
});
