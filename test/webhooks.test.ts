// Webhooks end to end (docs/webhooks.md, D-80…D-88) on the file store: endpoints managed on the admin
// surface and audited, every event type delivered to a real receiver on loopback and verified with the
// team's secret key, retries with the same webhook-id, Retry-After, 410, disabling, redelivery and the
// delivery log.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { webhookSecretText, webhookSigningKey } from '../src/core/api-keys.ts';
import { APP, KEY, startTestServer, type TestServer } from './support/helpers.ts';
import { WebhookEvents } from '../src/services/webhooks/events.ts';
import { SETTINGS } from '../src/settings.ts';
import { createEndpoint, demoAdminToken, type Receiver, startReceiver } from './support/webhook-receiver.ts';

const SECRET = webhookSecretText(webhookSigningKey(KEY));
const T = { timeout: 30_000 };

let server: TestServer;
let origin: string;
let token: string;
const receivers: Receiver[] = [];

async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${origin}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

async function endpoint(url: string, events: string[], app = APP): Promise<string> {
  const r = await admin('POST', '/webhook_endpoints', { app_id: app, url, events, description: 'test' });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.id;
}

const verified = (r: { headers: Record<string, string>; body: string }) => new Webhook(SECRET).verify(r.body, r.headers) as any;

before(async () => {
  server = await startTestServer({ passwordHashCost: 10, webhookRetrySchedule: [0.05, 0.05, 0.05], webhookPollMs: 20 });
  origin = new URL(server.baseUrl).origin;
  const s = await fetch(`${origin}/admin/v1/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@demo.example', password: 'parley-demo-admin' }),
  });
  const session = (await s.json()) as { csrf_token: string };
  const t = await fetch(`${origin}/admin/v1/tokens`, {
    method: 'POST',
    headers: {
      cookie: s.headers.get('set-cookie')!.split(';')[0]!,
      'x-csrf-token': session.csrf_token,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ name: 'webhooks' }),
  });
  token = ((await t.json()) as { token: string }).token;
});
after(async () => {
  await server?.close();
  for (const r of receivers) await r.close();
});

describe('endpoints on the admin surface (D-81, D-82)', () => {
  test('created, listed, changed, disabled and deleted, each audited; bad input changes nothing', T, async () => {
    const id = await endpoint('http://127.0.0.1:9/a', ['conversation.created'], 'app_knowledge');
    assert.match(id, /^we_/);
    const list = await admin('GET', '/webhook_endpoints?app_id=app_knowledge');
    assert.deepEqual(
      list.body.data.map((e: any) => e.id),
      [id],
    );
    const changed = await admin('PATCH', `/webhook_endpoints/${id}`, { events: ['*'], enabled: false });
    assert.equal(changed.status, 200);
    assert.deepEqual(changed.body.events, ['*']);
    assert.equal(changed.body.enabled, false);
    assert.equal(changed.body.disabled_reason, 'manual');
    const bad = await admin('POST', '/webhook_endpoints', { app_id: 'app_knowledge', url: 'http://127.0.0.1/', events: ['nope'] });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'events.0');
    const other = await admin('POST', '/webhook_endpoints', { app_id: 'app_other', url: 'http://127.0.0.1/', events: ['*'] });
    assert.equal(other.status, 404);
    const deleted = await admin('DELETE', `/webhook_endpoints/${id}`);
    assert.deepEqual(deleted.body, { id, object: 'webhook_endpoint', deleted: true });
    assert.equal((await admin('GET', `/webhook_endpoints/${id}`)).status, 404);
    const audit = await admin('GET', '/audit?limit=10');
    const actions = audit.body.data.filter((a: any) => a.target?.id === id).map((a: any) => a.action);
    assert.deepEqual(actions, ['webhook_endpoint.deleted', 'webhook_endpoint.updated', 'webhook_endpoint.created']);
  });

  test('a private or metadata URL is refused with invalid_webhook_url; loopback is allowed in local development (D-170)', T, async () => {
    for (const url of ['http://10.1.2.3/x', 'http://169.254.169.254/', 'http://[fd00::1]/', 'http://0xa9fea9fe/']) {
      const r = await admin('POST', '/webhook_endpoints', { app_id: APP, url, events: ['*'] });
      assert.equal(r.status, 400, url);
      assert.equal(r.body.error.code, 'invalid_webhook_url');
      assert.equal(r.body.error.param, 'url');
    }
  });
});

describe('the endpoints an app may have (D-169)', () => {
  test(
    'the default cap of 20 endpoints per app: one more is 409 limit_reached naming the cap and changes nothing; another app is not held back',
    T,
    async () => {
      const cap = Number(SETTINGS.webhookEndpointsPerApp.default);
      const made: string[] = [];
      for (let i = 0; i < cap; i++) made.push(await endpoint(`http://127.0.0.1:9/cap${i}`, ['conversation.created'], 'app_genui'));
      const over = await admin('POST', '/webhook_endpoints', { app_id: 'app_genui', url: 'http://127.0.0.1:9/over', events: ['*'] });
      assert.equal(over.status, 409);
      assert.equal(over.body.error.code, 'limit_reached');
      assert.equal(over.body.error.param, 'app_id');
      assert.match(over.body.error.message, new RegExp(`has ${cap} webhook endpoints.*WEBHOOK_ENDPOINTS_PER_APP`));
      assert.equal((await admin('GET', '/webhook_endpoints?app_id=app_genui')).body.data.length, cap, 'nothing was added');
      const elsewhere = await endpoint('http://127.0.0.1:9/elsewhere', ['conversation.created'], 'app_stream');
      for (const id of [...made, elsewhere]) assert.equal((await admin('DELETE', `/webhook_endpoints/${id}`)).status, 200);
    },
  );
});

describe('events delivered, signed with the secret key (D-80, D-83, D-85)', () => {
  test('conversation created, updated, deleted; response completed; completion completed: each verified', T, async () => {
    const rx = await receiver();
    const id = await endpoint(rx.url, ['*']);
    const c = await server.call('POST', `/apps/${APP}/conversations`, { title: 'Hello' });
    assert.equal(c.status, 200);
    const conv = c.body.id;
    await rx.waitFor((r) => r.some((x) => x.json?.type === 'conversation.created' && x.json.data.id === conv));
    await server.call('POST', `/apps/${APP}/conversations/${conv}`, { message: { content: 'Hi there' }, stream: false });
    await rx.waitFor((r) => r.some((x) => x.json?.type === 'response.completed' && x.json.data.conversation_id === conv));
    await server.call('PATCH', `/apps/${APP}/conversations/${conv}`, { title: 'Renamed' });
    await server.call('DELETE', `/apps/${APP}/conversations/${conv}`);
    await server.call('POST', `/apps/${APP}/completions`, { prompt: 'Say hi' });
    await rx.waitFor((r) => ['conversation.deleted', 'completion.completed'].every((t) => r.some((x) => x.json?.type === t)));
    for (const r of rx.received) {
      const ev = verified(r);
      assert.equal(ev.id, r.headers['webhook-id']);
      assert.match(ev.id, /^evt_/);
      assert.equal(ev.object, 'event');
      assert.equal(ev.app_id, APP);
      assert.equal(typeof ev.created_at, 'number');
    }
    const byType = (t: string) =>
      rx.received.find((x) => x.json.type === t && (x.json.data.id === conv || x.json.data.conversation_id === conv))?.json;
    assert.equal(byType('conversation.created').data.title, 'Hello');
    assert.equal(byType('response.completed').data.object, 'response');
    assert.equal(byType('response.completed').data.status, 'completed');
    assert.ok(byType('response.completed').data.output.length > 0);
    assert.equal(byType('conversation.deleted').data.deleted, true);
    const renamed = rx.received.find((x) => x.json.type === 'conversation.updated' && x.json.data.title === 'Renamed');
    assert.ok(renamed, 'conversation.updated with the new title');
    await admin('DELETE', `/webhook_endpoints/${id}`);
  });

  test('an endpoint gets only the types it asked for; another app events go to that app endpoints only', T, async () => {
    const rx = await receiver();
    const id = await endpoint(rx.url, ['conversation.deleted']);
    const c = await server.call('POST', `/apps/${APP}/conversations`, {});
    await server.call('POST', '/apps/app_knowledge/conversations', {});
    await server.call('DELETE', `/apps/${APP}/conversations/${c.body.id}`);
    await rx.waitFor((r) => r.length >= 1);
    assert.deepEqual(
      rx.received.map((x) => x.json.type),
      ['conversation.deleted'],
    );
    await admin('DELETE', `/webhook_endpoints/${id}`);
  });
});

describe('a restore on the admin surface (D-73, D-83, D-84)', () => {
  test('restoring a deleted conversation sends conversation.restored, the conversation as it is again, signed', T, async () => {
    const rx = await receiver();
    const id = await endpoint(rx.url, ['conversation.deleted', 'conversation.restored']);
    const conv = (await server.call('POST', `/apps/${APP}/conversations`, { title: 'Back again' })).body.id;
    await server.call('DELETE', `/apps/${APP}/conversations/${conv}`);
    const restored = await admin('POST', `/apps/${APP}/conversations/${conv}/restore`);
    assert.equal(restored.status, 200, JSON.stringify(restored.body));
    await rx.waitFor((r) => r.some((x) => x.json?.type === 'conversation.restored'));
    await rx.waitFor((r) => r.length >= 2);
    // D-85 promises no order between the two.
    assert.deepEqual(rx.received.map((x) => x.json.type).sort(), ['conversation.deleted', 'conversation.restored']);
    const ev = verified(rx.received.find((x) => x.json.type === 'conversation.restored')!);
    assert.equal(ev.data.id, conv);
    assert.equal(ev.data.object, 'conversation');
    assert.equal(ev.data.title, 'Back again');
    assert.equal(ev.data.deleted, undefined, 'the conversation as the API shows it again, not marked deleted');
    await admin('DELETE', `/webhook_endpoints/${id}`);
  });
});

describe('retries, Retry-After, 410, redeliver and the delivery log (D-85…D-87)', () => {
  test('a failing endpoint is retried with the same webhook-id and a fresh signature; the log keeps each attempt', T, async () => {
    const rx = await receiver();
    rx.script({ status: 500, body: 'boom' }, { status: 429, headers: { 'retry-after': '0' } });
    const id = await endpoint(rx.url, ['conversation.created']);
    await server.call('POST', `/apps/${APP}/conversations`, {});
    await rx.waitFor((r) => r.length >= 3);
    const ids = new Set(rx.received.map((r) => r.headers['webhook-id']));
    assert.equal(ids.size, 1);
    for (const r of rx.received) verified(r);
    const evt = [...ids][0]!;
    const log = await admin('GET', `/webhook_deliveries?endpoint_id=${id}`);
    await rx.waitFor(() => true);
    const d = log.body.data.find((x: any) => x.event_id === evt);
    assert.ok(d);
    const settled = await waitDelivery(evt, id, (x) => x.state === 'succeeded');
    assert.equal(settled.attempts, 3);
    assert.deepEqual(
      settled.attempt_log.map((a: any) => a.status),
      [200, 429, 500],
    );
    assert.equal(settled.attempt_log[2].response, 'boom');
    await admin('DELETE', `/webhook_endpoints/${id}`);
  });

  test('after the schedule runs out the delivery fails; redeliver sends it again', T, async () => {
    const rx = await receiver();
    rx.script({ status: 500 }, { status: 502 }, { status: 503 }, { status: 500 });
    const id = await endpoint(rx.url, ['conversation.created']);
    await server.call('POST', `/apps/${APP}/conversations`, {});
    await rx.waitFor((r) => r.length >= 4);
    const evt = rx.received[0]!.headers['webhook-id']!;
    const failed = await waitDelivery(evt, id, (x) => x.state === 'failed');
    assert.equal(failed.attempts, 4);
    const again = await admin('POST', `/events/${evt}/redeliver`, {});
    assert.equal(again.status, 200);
    await rx.waitFor((r) => r.length >= 5);
    assert.equal(rx.received[4]!.headers['webhook-id'], evt);
    await waitDelivery(evt, id, (x) => x.state === 'succeeded');
    const event = await admin('GET', `/events/${evt}`);
    assert.equal(event.body.id, evt);
    await admin('DELETE', `/webhook_endpoints/${id}`);
  });

  test('410 disables the endpoint (audited); a disabled endpoint gets nothing, its events skipped', T, async () => {
    const rx = await receiver();
    rx.script({ status: 410 });
    const id = await endpoint(rx.url, ['conversation.created']);
    await server.call('POST', `/apps/${APP}/conversations`, {});
    await rx.waitFor((r) => r.length >= 1);
    const ep = await waitFor(async () => {
      const e = await admin('GET', `/webhook_endpoints/${id}`);
      return e.body.enabled === false ? e.body : undefined;
    });
    assert.equal(ep.disabled_reason, 'gone');
    const c = await server.call('POST', `/apps/${APP}/conversations`, {});
    const skipped = await waitFor(async () => {
      const log = await admin('GET', `/webhook_deliveries?endpoint_id=${id}`);
      return log.body.data.find((x: any) => x.state === 'skipped');
    });
    assert.ok(skipped);
    assert.equal(rx.received.length, 1);
    void c;
    const audit = await admin('GET', '/audit?action=webhook_endpoint.disabled');
    assert.equal(audit.body.data[0].target.id, id);
    assert.equal(audit.body.data[0].actor.type, 'system');
  });
});

/** Polls the admin surface until `get` gives something (the worker's state changes are not pushed). */
async function waitFor<T>(get: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const v = await get();
    if (v !== undefined) return v;
    await new Promise((r) => setImmediate(r));
  }
}

function waitDelivery(evt: string, endpointId: string, pred: (d: any) => boolean): Promise<any> {
  return waitFor(async () => {
    const log = await admin('GET', `/webhook_deliveries?endpoint_id=${endpointId}&event_id=${evt}`);
    const d = log.body.data[0];
    return d && pred(d) ? d : undefined;
  });
}

describe('failed replies and completions (D-83)', () => {
  test('response.failed and completion.failed carry the error, verified', T, async () => {
    const rx = await receiver();
    const id = await endpoint(rx.url, ['response.failed', 'completion.failed'], 'app_faulty');
    const c = await server.call('POST', '/apps/app_faulty/conversations', {});
    await server.call('POST', `/apps/app_faulty/conversations/${c.body.id}`, { message: { content: 'Hello' }, stream: false });
    await server.call('POST', '/apps/app_faulty/completions', { prompt: 'Hello' });
    await rx.waitFor((r) => ['response.failed', 'completion.failed'].every((t) => r.some((x) => x.json?.type === t)));
    for (const r of rx.received) {
      const ev = verified(r);
      assert.equal(ev.data.status, 'failed');
      assert.equal(typeof ev.data.error.code, 'string');
    }
    assert.equal(rx.received.find((r) => r.json.type === 'response.failed')!.json.data.conversation_id, c.body.id);
    await admin('DELETE', `/webhook_endpoints/${id}`);
  });
});

describe('timeouts and endpoints failing too long (D-85, D-86)', () => {
  test(
    'an endpoint that never answers times out (a failed attempt with no status) and is disabled once failing past the limit',
    T,
    async () => {
      const held: http.ServerResponse[] = [];
      const silent = http.createServer((_req, res) => held.push(res));
      await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
      const own = await startTestServer({
        passwordHashCost: 10,
        webhookRetrySchedule: [0.05, 0.05, 0.05, 0.05, 0.05],
        webhookTimeoutMs: 200,
        webhookDisableAfterMs: 1,
        webhookPollMs: 20,
      });
      try {
        const o = new URL(own.baseUrl).origin;
        const t = await demoAdminToken(o);
        const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/never`;
        const id = await createEndpoint(o, t, url, ['conversation.created'], APP);
        await own.call('POST', `/apps/${APP}/conversations`, {});
        const get = async (p: string) =>
          (await fetch(`${o}/admin/v1${p}`, { headers: { authorization: `Bearer ${t}` } })).json() as Promise<any>;
        const ep = await waitFor(async () => {
          const e = await get(`/webhook_endpoints/${id}`);
          return e.enabled === false ? e : undefined;
        });
        assert.equal(ep.disabled_reason, 'failing');
        const log = await get(`/webhook_deliveries?endpoint_id=${id}`);
        const attempts = log.data[0].attempt_log;
        assert.ok(attempts.length >= 1);
        for (const a of attempts.filter((x: any) => x.error !== 'endpoint disabled')) {
          assert.equal(a.status, null);
          assert.match(a.error, /no answer within 200 ms/);
        }
      } finally {
        await own.close();
        silent.closeAllConnections();
        await new Promise((r) => silent.close(r));
      }
    },
  );
});

describe('payloads (D-83)', () => {
  test('a payload over 20,480 bytes sends data as { id, object, url } on the public URL', () => {
    const doc = {
      apps: [{ id: 'app_demo', team_id: 'team_demo' }],
      webhook_endpoints: [{ id: 'we_1', app_id: 'app_demo', events: ['*'], enabled: true }],
    };
    const events = new WebhookEvents({ read: () => doc } as never, () => 'https://parley.example');
    const big = { id: 'conv_big', object: 'conversation', metadata: { note: 'x'.repeat(21_000) } };
    const [ev] = events.make('app_demo', 'conversation.updated', big, '/conversations/conv_big');
    const body = JSON.parse(ev!.body);
    assert.deepEqual(body.data, {
      id: 'conv_big',
      object: 'conversation',
      url: 'https://parley.example/v1/apps/app_demo/conversations/conv_big',
    });
    assert.equal(body.id, ev!.id);
    const small = events.make('app_demo', 'conversation.updated', { id: 'conv_s', object: 'conversation' }, '/conversations/conv_s');
    assert.equal(JSON.parse(small[0]!.body).data.id, 'conv_s');
    assert.deepEqual(events.make('app_other', 'conversation.updated', big, '/x'), []);
  });
});
