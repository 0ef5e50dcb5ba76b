// D-150: an endpoint is signed with the secret key it was registered for (and that key's successor
// during a roll's grace), so that keys made later change nothing a receiver verifies with; a key that
// stops working disables the endpoint, which says why (API, audit), and a working key brings it back.
// The receiver verifies with the published `standardwebhooks` package, as a team's would.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { webhookSecretText, webhookSigningKey } from '../src/core/api-keys.ts';
import { defaultSigningKey } from '../src/core/endpoint-signing.ts';
import { Key } from '../src/core/tenants.ts';
import { runCli, serverEnv } from './support/cli-helpers.ts';
import { APP, KEY, startTestServer, tempDir, type TestServer } from './support/helpers.ts';
import { adminClient, bearer } from './support/admin-client.ts';
import { demoAdminToken, type Receiver, type Received, startReceiver } from './support/webhook-receiver.ts';

const T = { timeout: 60_000 };
const secretOf = (key: string) => webhookSecretText(webhookSigningKey(key));

let server: TestServer;
let origin: string;
let token: string;
const receivers: Receiver[] = [];

/** The demo admin's call to the admin surface, with a personal access token. */
const admin = (method: string, path: string, body?: unknown) => adminClient(origin).call(method, path, body, bearer(token));

async function newKey(name: string): Promise<{ id: string; key: string }> {
  const r = await admin('POST', '/keys', { type: 'secret', name });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return { id: r.body.id, key: r.body.key };
}

/** An endpoint at a new receiver for conversation.created, with `signing_key_id` when given. */
async function hook(signingKeyId?: string): Promise<{ id: string; rx: Receiver; body: any }> {
  const rx = await startReceiver();
  receivers.push(rx);
  const r = await admin('POST', '/webhook_endpoints', {
    app_id: APP,
    url: rx.url,
    events: ['conversation.created'],
    ...(signingKeyId ? { signing_key_id: signingKeyId } : {}),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return { id: r.body.id, rx, body: r.body };
}

/** Makes a conversation and waits for `rx` to receive its event. */
async function delivered(rx: Receiver): Promise<Received> {
  const n = rx.received.length;
  assert.equal((await server.call('POST', `/apps/${APP}/conversations`, {})).status, 200);
  await rx.waitFor((r) => r.length > n);
  return rx.received[n]!;
}

const verifies = (secret: string, r: Received) => {
  try {
    new Webhook(secret).verify(r.body, r.headers);
    return true;
  } catch {
    return false;
  }
};

before(async () => {
  server = await startTestServer({ passwordHashCost: 10, webhookPollMs: 20 });
  origin = new URL(server.baseUrl).origin;
  token = await demoAdminToken(origin);
});
after(async () => {
  await server?.close();
  for (const r of receivers) await r.close();
});

describe('D-150: an endpoint is signed with the key it was registered for', () => {
  test('20 keys made after it change nothing: the demo key still verifies; a named key signs alone', T, async () => {
    const h = await hook();
    // The default: the team's oldest working secret key, the demo key on the demo team.
    assert.equal(h.body.signing_key_id, 'key_demo_secret');
    assert.equal(h.body.signing_key_state, 'active');
    const made: Array<{ id: string; key: string }> = [];
    for (let i = 0; i < 20; i++) made.push(await newKey(`later ${i}`));
    const r = await delivered(h.rx);
    assert.ok(verifies(secretOf(KEY), r), `the demo key verifies: ${r.headers['webhook-signature']}`);
    assert.equal(r.headers['webhook-signature']!.split(' ').length, 1);
    const last = made.at(-1)!;
    const named = await hook(last.id);
    assert.equal(named.body.signing_key_id, last.id);
    const n = await delivered(named.rx);
    assert.ok(verifies(secretOf(last.key), n));
    assert.ok(!verifies(secretOf(KEY), n), 'signed with the named key only');
  });

  test('a rolled key and its successor both verify during the grace; the endpoint says rolled', T, async () => {
    const k = await newKey('to roll');
    const h = await hook(k.id);
    const rolled = await admin('POST', `/keys/${k.id}/roll`, { expires_in_seconds: 3600 });
    assert.equal(rolled.status, 200, JSON.stringify(rolled.body));
    const r = await delivered(h.rx);
    assert.ok(verifies(secretOf(k.key), r), 'the old key verifies during the grace');
    assert.ok(verifies(secretOf(rolled.body.key), r), 'its successor verifies too');
    const seen = await admin('GET', `/webhook_endpoints/${h.id}`);
    assert.equal(seen.body.signing_key_state, 'rolled');
    assert.equal(seen.body.enabled, true);
    // Moved to the successor, it is signed with it alone.
    const moved = await admin('PATCH', `/webhook_endpoints/${h.id}`, { signing_key_id: rolled.body.id });
    assert.equal(moved.body.signing_key_state, 'active');
    const m = await delivered(h.rx);
    assert.ok(verifies(secretOf(rolled.body.key), m) && !verifies(secretOf(k.key), m));
  });

  test('a revoked key disables its endpoints, which say so and are audited; a working key brings one back', T, async () => {
    const k = await newKey('to revoke');
    const h = await hook(k.id);
    assert.equal((await admin('POST', `/keys/${k.id}/revoke`)).status, 200);
    const seen = (await admin('GET', `/webhook_endpoints/${h.id}`)).body;
    assert.deepEqual(
      [seen.enabled, seen.disabled_reason, seen.signing_key_id, seen.signing_key_state],
      [false, 'signing_key', k.id, 'revoked'],
    );
    const audit = (await admin('GET', '/audit?action=webhook_endpoint.disabled&limit=50')).body.data;
    const entry = audit.find((a: any) => a.target?.id === h.id);
    assert.ok(entry, 'audited');
    assert.deepEqual(entry.changes.disabled_reason, [null, 'signing_key']);
    assert.equal(entry.actor.type, 'system');
    // Nothing is sent meanwhile: the delivery is skipped, as any disabled endpoint's.
    assert.equal((await server.call('POST', `/apps/${APP}/conversations`, {})).status, 200);
    let log = await admin('GET', `/webhook_deliveries?endpoint_id=${h.id}`);
    while (log.body.data[0]?.state !== 'skipped') log = await admin('GET', `/webhook_deliveries?endpoint_id=${h.id}`);
    assert.equal(log.body.data.length, 1);
    // Enabling it under the revoked key is refused and changes nothing.
    const refused = await admin('PATCH', `/webhook_endpoints/${h.id}`, { enabled: true });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.param, 'signing_key_id');
    assert.equal((await admin('GET', `/webhook_endpoints/${h.id}`)).body.enabled, false);
    const back = await admin('PATCH', `/webhook_endpoints/${h.id}`, { signing_key_id: 'key_demo_secret' });
    assert.deepEqual([back.body.enabled, back.body.disabled_reason, back.body.signing_key_state], [true, null, 'active']);
    const r = await delivered(h.rx);
    assert.ok(verifies(secretOf(KEY), r));
    assert.equal(h.rx.received.length, 1, 'the event made while it was disabled was not sent');
  });

  test("a roll without grace disables the old key's endpoints at once (expired)", T, async () => {
    const k = await newKey('rolled now');
    const h = await hook(k.id);
    assert.equal((await admin('POST', `/keys/${k.id}/roll`, { expires_in_seconds: 0 })).status, 200);
    const seen = (await admin('GET', `/webhook_endpoints/${h.id}`)).body;
    assert.deepEqual([seen.enabled, seen.disabled_reason, seen.signing_key_state], [false, 'signing_key', 'expired']);
  });

  test("the key named must be a working secret key of the team: 404 another team's or unknown, 400 otherwise", T, async () => {
    const rx = 'http://127.0.0.1:9/x';
    const make = (signing_key_id: string) => admin('POST', '/webhook_endpoints', { app_id: APP, url: rx, events: ['*'], signing_key_id });
    const count = async () => (await admin('GET', '/webhook_endpoints')).body.data.length;
    const before = await count();
    for (const id of ['key_other_secret', 'key_nope']) {
      const r = await make(id);
      assert.equal(r.status, 404, id);
      assert.equal(r.body.error.param, 'signing_key_id');
    }
    const revoked = await newKey('revoked first');
    await admin('POST', `/keys/${revoked.id}/revoke`);
    for (const id of ['key_demo_publishable', revoked.id]) {
      const r = await make(id);
      assert.equal(r.status, 400, id);
      assert.equal(r.body.error.param, 'signing_key_id');
    }
    assert.equal(await count(), before, 'a refused endpoint is not made');
    const h = await hook();
    const patched = await admin('PATCH', `/webhook_endpoints/${h.id}`, { signing_key_id: 'key_other_secret' });
    assert.equal(patched.status, 404);
    assert.equal((await admin('GET', `/webhook_endpoints/${h.id}`)).body.signing_key_id, 'key_demo_secret');
  });
});

describe('D-150 in the CLI: the key chosen, shown, and checked by `webhooks secret --endpoint`', () => {
  test('create/update --signing-key; list shows the key and its state; secret --endpoint refuses another key', T, async () => {
    const env = serverEnv(server.baseUrl, APP, { PARLEY_ADMIN_TOKEN: token, XDG_CONFIG_HOME: await tempDir('parley-cli-signing-') });
    const k = await newKey('cli');
    const made = await runCli(['webhooks', 'create', '--url', 'http://127.0.0.1:9/cli', '--events', '*', '--signing-key', k.id], { env });
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stdout, new RegExp(`signed with ${k.id}\\b`));
    const id = /^(we_\w+)/.exec(made.stdout)![1]!;
    // The secret a receiver needs, computed here from the key held, once the endpoint is known to use it.
    const mine = await runCli(['webhooks', 'secret', '--endpoint', id], { env: { ...env, PARLEY_API_KEY: k.key } });
    assert.equal(mine.code, 0, mine.stderr);
    assert.equal(mine.stdout.trim(), secretOf(k.key));
    const other = await runCli(['webhooks', 'secret', '--endpoint', id], { env });
    assert.equal(other.code, 2);
    assert.match(other.stderr, new RegExp(`endpoint ${id} is signed with ${k.id} .*not with the key in use`));
    assert.equal(other.stdout, '');
    const bad = await runCli(['webhooks', 'update', id, '--signing-key', 'key_demo_publishable'], { env });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /signing_key_id/);
    await admin('POST', `/keys/${k.id}/revoke`);
    const list = await runCli(['webhooks', 'list'], { env });
    assert.match(list.stdout, new RegExp(`${id} +${APP} +disabled \\(signing_key\\) .*${k.id} \\(revoked\\)`));
    const gone = await runCli(['webhooks', 'secret', '--endpoint', id], { env: { ...env, PARLEY_API_KEY: k.key } });
    assert.equal(gone.code, 2);
    assert.match(gone.stderr, new RegExp(`${k.id}, which is revoked: nothing is sent to it`));
    const back = await runCli(['webhooks', 'update', id, '--signing-key', 'key_demo_secret'], { env });
    assert.equal(back.code, 0, back.stderr);
    assert.match(back.stdout, /enabled .*signed with key_demo_secret\b/);
    assert.equal((await runCli(['webhooks', 'secret', '--endpoint', id], { env })).stdout.trim(), secretOf(KEY));
  });
});

test("D-150: the default key is the team's oldest; keys made in the same second keep the order they were made in", () => {
  const key = (id: string) =>
    Key.parse({ id, team_id: 'team_demo', type: 'secret', sha256: '0'.repeat(64), created_at: 1_800_000_000, signing_key: 'AA==' });
  // The fixtures' key first (dated at its seeding, D-77), then one made in that second whose id sorts before it.
  assert.equal(defaultSigningKey([key('key_demo_secret'), key('key_0made_later')], 'team_demo', 1_800_000_001)?.id, 'key_demo_secret');
  assert.equal(defaultSigningKey([key('key_b'), key('key_a')], 'team_demo', 1_800_000_001)?.id, 'key_b');
});
