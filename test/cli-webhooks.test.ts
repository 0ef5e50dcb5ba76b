// `parley webhooks …` (docs/webhooks.md, D-88, D-89), in-process against a real server: endpoints
// created, listed, changed and deleted through the admin login (D-79); deliveries listed and redelivered; the
// signing secret computed locally; a saved delivery verified; `listen --forward-to` forwarding each
// event with headers that verify.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { webhookSecretText, webhookSigningKey } from '../src/core/api-keys.ts';
import { signedHeaders } from '../src/core/webhook-signature.ts';
import { checksumOf } from '../src/core/api-keys.ts';
import { atTerminal, runCli, serverEnv, startCli, waitFor } from './support/cli-helpers.ts';
import { APP, KEY, startTestServer, TARGET_JSON, tempDir, type TestServer } from './support/helpers.ts';
import { type Receiver, startReceiver } from './support/webhook-receiver.ts';

/** A loopback port nothing listens on: one the system gave, then closed. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

const ADMIN = TARGET_JSON.admin as { email: string; password: string };

const SECRET = webhookSecretText(webhookSigningKey(KEY));
const T = { timeout: 30_000 };
let server: TestServer;
let rx: Receiver;
let env: Record<string, string>;
/** The personal access token `parley admin login` kept in the profile. */
let token: string;

before(async () => {
  server = await startTestServer({ passwordHashCost: 10, webhookRetrySchedule: [0.05], webhookPollMs: 20 });
  rx = await startReceiver();
  const configHome = await tempDir('parley-cli-webhooks-');
  env = serverEnv(server.baseUrl, APP, { XDG_CONFIG_HOME: configHome });
  // D-79: the admin commands use the profile's admin login, as keys and audit do.
  const login = await runCli(['admin', 'login', '--email', ADMIN.email, '--password-stdin'], { env, input: `${ADMIN.password}\n` });
  assert.equal(login.code, 0, login.stderr);
  token = JSON.parse(await fs.readFile(path.join(configHome, 'parley', 'config.json'), 'utf8')).profiles.default.admin_token;
});
after(async () => {
  await server?.close();
  await rx?.close();
});

describe('parley webhooks: endpoints and deliveries (the admin login, D-79)', () => {
  test('create, list, update, deliveries, redeliver, delete; --json prints the API answer', T, async () => {
    const made = await runCli(
      ['webhooks', 'create', '--url', rx.url, '--events', 'conversation.created', '--description', 'cli', '--json'],
      { env },
    );
    assert.equal(made.code, 0, made.stderr);
    const id = JSON.parse(made.stdout).id as string;
    const list = await runCli(['webhooks', 'list'], { env });
    // A table with its header, as `keys list`, and the endpoint's creation time to the second.
    assert.match(list.stdout, /^ID +APP +STATE +URL +EVENTS +SIGNING KEY +CREATED +DESCRIPTION\n/);
    assert.match(
      list.stdout,
      new RegExp(
        `${id} +${APP} +enabled +${rx.url.replace(/[.]/g, '\\.')} +conversation\\.created +key_demo_secret +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ +cli`,
      ),
    );
    await server.call('POST', `/apps/${APP}/conversations`, {});
    await rx.waitFor((r) => r.length >= 1);
    const evt = rx.received[0]!.headers['webhook-id']!;
    let log = await runCli(['webhooks', 'deliveries', '--endpoint', id], { env });
    for (let i = 0; !/succeeded/.test(log.stdout) && i < 200; i++)
      log = await runCli(['webhooks', 'deliveries', '--endpoint', id], { env });
    assert.match(log.stdout, /^EVENT +TYPE +ENDPOINT +STATE +ATTEMPTS +LAST ATTEMPT +ANSWER\n/);
    assert.match(
      log.stdout,
      new RegExp(`${evt} +conversation\\.created +${id} +succeeded +1 +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ +200\\n`),
    );
    const again = await runCli(['webhooks', 'redeliver', evt], { env });
    assert.equal(again.code, 0, again.stderr);
    await rx.waitFor((r) => r.length >= 2);
    assert.equal(rx.received[1]!.headers['webhook-id'], evt);
    const off = await runCli(['webhooks', 'update', id, '--disable'], { env });
    assert.match(off.stdout, /disabled \(manual\)/);
    // D-64: at a terminal it asks, and anything but y keeps the endpoint; --yes (or a script) does not ask.
    const kept = await atTerminal(['webhooks', 'delete', id], 'n\n', env);
    assert.equal(kept.code, 0, kept.stderr);
    assert.match(kept.stderr, new RegExp(`Delete endpoint ${id}\\? It gets no more events\\. \\[y/N\\] `));
    assert.equal((await runCli(['webhooks', 'list', '--json'], { env })).stdout.includes(id), true);
    const gone = await runCli(['webhooks', 'delete', id, '--yes'], { env });
    assert.match(gone.stdout, new RegExp(`deleted ${id}`));
  });

  test(
    'no admin login exits 2 with its hint; a mistyped token is refused unsent; a bad option exits 2; a refused URL exit 1',
    T,
    async () => {
      const none = await runCli(['webhooks', 'list'], { env: { ...env, XDG_CONFIG_HOME: await tempDir('parley-cli-webhooks-none-') } });
      assert.equal(none.code, 2);
      assert.match(none.stderr, /hint: parley admin login\n/);
      const body = token.slice(0, -6);
      const wrong = body + (checksumOf(body) === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA');
      const mistyped = await runCli(['webhooks', 'list'], { env: { ...env, PARLEY_ADMIN_TOKEN: wrong } });
      assert.equal(mistyped.code, 2);
      assert.match(mistyped.stderr, /fails its checksum/);
      // The contract's own check, before any request (D-79).
      const badEvents = await runCli(['webhooks', 'create', '--url', rx.url, '--events', 'nope'], { env });
      assert.equal(badEvents.code, 2);
      assert.match(badEvents.stderr, /--events/);
      const refused = await runCli(['webhooks', 'create', '--url', 'http://169.254.169.254/', '--events', '*'], { env });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /metadata address/);
      assert.ok(!refused.stderr.includes(token));
    },
  );
});

describe('parley webhooks list: one rule with usage for the app (D-152)', () => {
  test("PARLEY_APP_ID does not narrow the team's endpoints; the --app flag does", T, async () => {
    const made: string[] = [];
    for (const app of [APP, 'app_genui']) {
      const r = await runCli(['webhooks', 'create', '--app', app, '--url', rx.url, '--events', '*', '--json'], { env });
      assert.equal(r.code, 0, r.stderr);
      made.push(JSON.parse(r.stdout).id);
    }
    try {
      const ids = async (args: string[], extra: Record<string, string> = {}) =>
        (
          JSON.parse((await runCli(['webhooks', 'list', '--json', ...args], { env: { ...env, ...extra } })).stdout).data as Array<{
            id: string;
          }>
        ).map((e) => e.id);
      // env holds PARLEY_APP_ID=app_demo: both apps' endpoints are listed all the same.
      assert.equal(env.PARLEY_APP_ID, APP);
      const all = await ids([]);
      assert.ok(
        made.every((id) => all.includes(id)),
        `both endpoints listed: ${all}`,
      );
      assert.deepEqual(
        (await ids(['--app', 'app_genui'])).filter((id) => made.includes(id)),
        [made[1]],
      );
    } finally {
      for (const id of made) await runCli(['webhooks', 'delete', id, '--yes'], { env });
    }
  });
});

describe('parley webhooks secret and verify (computed locally)', () => {
  test('secret prints the key in use signing secret and sends nothing', T, async () => {
    const r = await runCli(['webhooks', 'secret'], { env: { PARLEY_API_KEY: KEY, PARLEY_BASE_URL: 'http://127.0.0.1:2/v1' } });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), SECRET);
  });

  test('verify accepts a delivery as signed, refuses a changed one; --no-tolerance for an old one', T, async () => {
    const dir = await tempDir();
    const body = '{"id":"evt_x","object":"event"}';
    const file = path.join(dir, 'body.json');
    await fs.writeFile(file, body);
    const now = Math.floor(Date.now() / 1000);
    const h = signedHeaders([webhookSigningKey(KEY)], 'evt_x', now, body);
    const args = (hh: Record<string, string>) => Object.entries(hh).flatMap(([k, v]) => ['--header', `${k}: ${v}`]);
    const ok = await runCli(['webhooks', 'verify', '--payload', file, ...args(h)], { env: { PARLEY_API_KEY: KEY } });
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout.trim(), 'valid');
    await fs.writeFile(file, `${body} `);
    const bad = await runCli(['webhooks', 'verify', '--payload', file, ...args(h), '--secret', SECRET], {});
    assert.equal(bad.code, 1);
    assert.match(bad.stdout, /invalid: no v1 signature matches/);
    await fs.writeFile(file, body);
    const old = signedHeaders([webhookSigningKey(KEY)], 'evt_x', now - 3600, body);
    assert.equal((await runCli(['webhooks', 'verify', '--payload', file, ...args(old)], { env: { PARLEY_API_KEY: KEY } })).code, 1);
    const oldOk = await runCli(['webhooks', 'verify', '--payload', file, ...args(old), '--no-tolerance', '--json'], {
      env: { PARLEY_API_KEY: KEY },
    });
    assert.deepEqual(JSON.parse(oldOk.stdout), { object: 'webhook_verification', valid: true });
  });
});

describe('parley webhooks listen --forward-to (D-88)', () => {
  test('a Parley that is not there is said as a refused connection, not "fetch failed"', T, async () => {
    const closed = await closedPort();
    const r = await runCli(['webhooks', 'listen', '--forward-to', rx.url], {
      env: { ...env, PARLEY_BASE_URL: `http://127.0.0.1:${closed}/v1`, PARLEY_ADMIN_TOKEN: token },
    });
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /connection refused/);
    assert.doesNotMatch(r.stderr, /fetch failed/);
  });

  test('events are forwarded live with headers that verify; a line per event with the status', T, async () => {
    const local = await startReceiver();
    const run = startCli(['webhooks', 'listen', '--forward-to', local.url], { env });
    try {
      await waitFor(run.stderr, /Ready: forwarding app_demo/);
      const c = await server.call('POST', `/apps/${APP}/conversations`, { title: 'live' });
      await local.waitFor((r) => r.some((x) => x.json?.data?.id === c.body.id));
      const got = local.received.find((x) => x.json.data.id === c.body.id)!;
      assert.equal((new Webhook(SECRET).verify(got.body, got.headers) as { type: string }).type, 'conversation.created');
      await waitFor(run.stdout, new RegExp(`--> conversation\\.created \\[${got.headers['webhook-id']}\\]  <-- 200`));
    } finally {
      await server.close();
      const done = await run.done;
      assert.equal(done.code, 3, done.stderr);
      await local.close();
    }
  });
});
