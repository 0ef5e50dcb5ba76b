// D-129 (issue 37 item 4): synthetic test events for one endpoint, from `parley webhooks trigger` and
// `POST /admin/v1/webhook_endpoints/:id/test`, delivered to a real receiver on loopback, verified with
// the published Standard Webhooks package, in the delivery log and the audit log.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { webhookSecretText, webhookSigningKey } from '../src/core/api-keys.ts';
import type { WebhookEndpointT } from '../src/core/webhook-endpoint.ts';
import { WebhookEventView } from '../src/contract/admin-webhooks.ts';
import { ReferenceCompletion, ReferenceConversation, ReferenceResponse } from '../src/contract/index.ts';
import { WEBHOOK_EVENT_TYPES } from '../src/contract/webhook-event-types.ts';
import { testEvents } from '../src/services/webhooks/test-events.ts';
import { runCli, serverEnv } from './support/cli-helpers.ts';
import { APP, KEY, startTestServer, TARGET_JSON, tempDir, type TestServer } from './support/helpers.ts';
import { type Receiver, startReceiver } from './support/webhook-receiver.ts';

const ADMIN = TARGET_JSON.admin as { email: string; password: string };
const SECRET = webhookSecretText(webhookSigningKey(KEY));
const T = { timeout: 30_000 };
let server: TestServer;
let env: Record<string, string>;
let token: string;
const receivers: Receiver[] = [];

async function admin(method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${new URL(server.baseUrl).origin}/admin/v1${p}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** A receiver on loopback and an endpoint of `app` sending to it. */
async function endpointTo(app: string): Promise<{ rx: Receiver; id: string }> {
  const rx = await startReceiver();
  receivers.push(rx);
  const r = await admin('POST', '/webhook_endpoints', { app_id: app, url: rx.url, events: ['response.completed'] });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return { rx, id: r.body.id };
}

/** The delivery of `eventId` once it has had `attempts` attempts (the log is read until then, boundedly). */
async function deliveryOf(eventId: string, attempts: number): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const d = (await admin('GET', `/webhook_deliveries?event_id=${eventId}`)).body.data[0];
    if (d && d.attempts >= attempts && d.state !== 'pending') return d;
  }
  assert.fail(`the delivery of ${eventId} did not reach ${attempts} attempts`);
}

before(async () => {
  server = await startTestServer({ passwordHashCost: 10, webhookPollMs: 20 });
  const configHome = await tempDir('parley-cli-trigger-');
  env = serverEnv(server.baseUrl, 'app_knowledge', { XDG_CONFIG_HOME: configHome });
  const login = await runCli(['admin', 'login', '--email', ADMIN.email, '--password-stdin'], { env, input: `${ADMIN.password}\n` });
  assert.equal(login.code, 0, login.stderr);
  token = JSON.parse(await fs.readFile(path.join(configHome, 'parley', 'config.json'), 'utf8')).profiles.default.admin_token;
});
after(async () => {
  await server?.close();
  for (const r of receivers) await r.close();
});

describe('D-129: test events', () => {
  test(
    '`parley webhooks trigger conversation.created --duplicate` delivers two signed deliveries with one webhook-id, verified by standardwebhooks; logged and audited',
    T,
    async () => {
      // The app in use (app_knowledge) has this one endpoint: trigger takes it without --endpoint.
      const { rx, id } = await endpointTo('app_knowledge');
      const run = await runCli(['webhooks', 'trigger', 'conversation.created', '--duplicate'], { env });
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, new RegExp(`^sending conversation\\.created test event evt_\\w+ to ${id}, twice each\\n$`));
      await rx.waitFor((r) => r.length >= 2);
      const wh = new Webhook(SECRET);
      const events = rx.received.map((r) => wh.verify(r.body, r.headers) as any);
      assert.equal(rx.received[0]!.headers['webhook-id'], rx.received[1]!.headers['webhook-id'], 'one webhook-id');
      assert.equal(events[0].id, rx.received[0]!.headers['webhook-id']);
      assert.deepEqual(
        events.map((e) => [e.type, e.test, e.app_id]),
        [
          ['conversation.created', true, 'app_knowledge'],
          ['conversation.created', true, 'app_knowledge'],
        ],
      );
      ReferenceConversation.parse(events[0].data);
      const d = await deliveryOf(events[0].id, 2);
      assert.deepEqual([d.state, d.attempts, d.endpoint_id, d.event_type], ['succeeded', 2, id, 'conversation.created']);
      assert.deepEqual(
        d.attempt_log.map((a: any) => a.status),
        [200, 200],
      );
      const audit = (await admin('GET', '/audit?action=webhook_endpoint.tested&limit=5')).body.data;
      assert.equal(audit[0]?.target?.id, id);
      assert.deepEqual(audit[0]?.changes?.events?.[1], [events[0].id]);
    },
  );

  test(
    'out of order: two events about one resource, the later one delivered first; a delay leaves it pending; bad input changes nothing',
    T,
    async () => {
      const { rx, id } = await endpointTo('app_stream');
      const r = await admin('POST', `/webhook_endpoints/${id}/test`, { type: 'response.completed', out_of_order: true });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual([r.body.object, r.body.sends, r.body.event_ids.length], ['webhook_test', 1, 2]);
      await rx.waitFor((x) => x.length >= 2);
      const [first, second] = rx.received.map((x) => new Webhook(SECRET).verify(x.body, x.headers) as any);
      assert.deepEqual([first.id, second.id], [r.body.event_ids[1], r.body.event_ids[0]], 'the later event came first');
      assert.ok(first.created_at > second.created_at);
      assert.equal(first.data.id, second.data.id, 'one resource');
      ReferenceResponse.parse(first.data);
      const later = await admin('POST', `/webhook_endpoints/${id}/test`, { type: 'completion.failed', delay_s: 3600 });
      assert.equal(later.status, 200);
      const pending = (await admin('GET', `/webhook_deliveries?event_id=${later.body.event_ids[0]}`)).body.data[0];
      assert.deepEqual([pending.state, pending.attempts], ['pending', 0]);
      assert.ok(pending.next_attempt_at >= later.body.due_at - 1 && later.body.due_at > Date.now() / 1000 + 3000);
      const bad = await admin('POST', `/webhook_endpoints/${id}/test`, { type: 'nope' });
      assert.deepEqual([bad.status, bad.body.error.param], [400, 'type']);
      assert.equal((await admin('POST', `/webhook_endpoints/${id}/test`, { type: 'response.completed', delay_s: 3601 })).status, 400);
      assert.equal((await admin('POST', '/webhook_endpoints/we_unknown/test', { type: 'response.completed' })).status, 404);
      assert.equal(rx.received.length, 2, 'nothing more was sent');
    },
  );
});

test('D-129: every type’s data is shaped as a real one (the contract’s schemas), the event as the admin surface shows events', () => {
  const endpoint = { id: 'we_x', team_id: 'team_demo', app_id: APP } as WebhookEndpointT;
  for (const type of WEBHOOK_EVENT_TYPES) {
    const [e] = testEvents(endpoint, { type, duplicate: true }, Date.now());
    const body = JSON.parse(e!.body);
    WebhookEventView.parse(body);
    assert.equal(body.test, true);
    const schema = type.startsWith('conversation.')
      ? ReferenceConversation
      : type.startsWith('response.')
        ? ReferenceResponse
        : ReferenceCompletion;
    schema.parse(body.data);
    assert.equal(body.data.status ?? 'completed', type.endsWith('.failed') ? 'failed' : 'completed', type);
    assert.deepEqual(e!.deliveries, [{ endpoint_id: 'we_x', state: 'pending', due_at: e!.deliveries[0]!.due_at, sends: 2 }]);
  }
});
