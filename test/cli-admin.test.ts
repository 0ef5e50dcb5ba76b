// The CLI's control-plane commands (D-79): `parley admin login|logout` keeps a personal access token in
// the profile (0600); `keys list|create|roll|revoke` and `audit list` use it (a new key printed once, the
// one exception to "the key is never printed"); without a login they exit 2 with the hint; a mistyped
// Parley-format key or token is refused before any request (D-70).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { checkFormat, checksumOf } from '../src/core/api-keys.ts';
import { type CliOptions, runCli, startFakeApi, atTerminal as atTerminalWith } from './support/cli-helpers.ts';
import { APP, KEY, startTestServer, TARGET_JSON, tempDir, type TestServer } from './support/helpers.ts';

const ADMIN = TARGET_JSON.admin as { email: string; password: string };

let server: TestServer;
let configHome: string;
let env: Record<string, string>;
before(async () => {
  server = await startTestServer({ passwordHashCost: 10 });
  configHome = await tempDir('parley-cli-admin-');
  env = { PARLEY_BASE_URL: server.baseUrl, XDG_CONFIG_HOME: configHome };
});
after(() => server.close());

const run = (args: string[], extra: CliOptions = {}) => runCli(args, { ...extra, env: { ...env, ...extra.env } });
const configFile = () => path.join(configHome, 'parley', 'config.json');
const profile = () => JSON.parse(fs.readFileSync(configFile(), 'utf8')).profiles.default;
const v1 = (key: string) => server.call('GET', `/apps/${APP}/config`, undefined, { key });
const login = () => run(['admin', 'login', '--email', ADMIN.email, '--password-stdin'], { input: `${ADMIN.password}\n` });

const atTerminal = (args: string[], typed: string) => atTerminalWith(args, typed, env);

describe('without an admin login (D-79)', () => {
  test('keys and audit exit 2 with the hint parley admin login, before any request', async () => {
    for (const args of [['keys', 'list'], ['keys', 'create', '--type', 'secret', '--name', 'x'], ['audit', 'list'], ['usage']]) {
      const r = await run(args, { env: { XDG_CONFIG_HOME: await tempDir() } });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /not signed in to the admin API/);
      assert.match(r.stderr, /hint: parley admin login\n/);
    }
  });

  test('a wrong password is the API error (exit 1, request id) and stores nothing', async () => {
    const home = await tempDir();
    const r = await run(['admin', 'login', '--email', ADMIN.email, '--password-stdin'], {
      input: 'not-the-password\n',
      env: { XDG_CONFIG_HOME: home },
    });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /\(401\)/);
    assert.match(r.stderr, /request id: \S+/);
    assert.doesNotMatch(r.stderr, /not-the-password/);
    assert.equal(fs.existsSync(path.join(home, 'parley', 'config.json')), false);
  });

  test('--verbose shows the sign-in request without the password, and the token is never shown', async () => {
    const home = await tempDir();
    const r = await run(['admin', 'login', '--email', ADMIN.email, '--password-stdin', '--verbose'], {
      input: `${ADMIN.password}\n`,
      env: { XDG_CONFIG_HOME: home },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /> POST http:\/\/127\.0\.0\.1:\d+\/admin\/v1\/sessions/);
    assert.match(r.stderr, /"password":"\[redacted\]"/);
    const token = JSON.parse(fs.readFileSync(path.join(home, 'parley', 'config.json'), 'utf8')).profiles.default.admin_token;
    assert.equal(r.stderr.includes(token), false);
    assert.equal(r.stderr.includes(ADMIN.password), false);
    const keys = await run(['keys', 'list', '--verbose'], { env: { XDG_CONFIG_HOME: home } });
    assert.match(keys.stderr, /> authorization: Bearer \[redacted\]/);
    assert.equal(keys.stderr.includes(token), false);
  });

  test('parley login keeps the admin login of the same server', async () => {
    const home = await tempDir();
    const e = { XDG_CONFIG_HOME: home };
    assert.equal((await run(['admin', 'login', '--email', ADMIN.email, '--password-stdin'], { input: ADMIN.password, env: e })).code, 0);
    const file = path.join(home, 'parley', 'config.json');
    const token = JSON.parse(fs.readFileSync(file, 'utf8')).profiles.default.admin_token;
    const r = await run(['login', '--base-url', server.baseUrl, '--api-key', KEY, '--app', APP], { env: e });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      (({ api_key, admin_token }) => ({ api_key, admin_token }))(JSON.parse(fs.readFileSync(file, 'utf8')).profiles.default),
      { api_key: KEY, admin_token: token },
    );
  });

  test('D-153: a server on another address: its token is not sent there; admin login moves the profile with a notice', async () => {
    const home = await tempDir();
    const e = { XDG_CONFIG_HOME: home };
    const file = path.join(home, 'parley', 'config.json');
    assert.equal((await run(['admin', 'login', '--email', ADMIN.email, '--password-stdin'], { input: ADMIN.password, env: e })).code, 0);
    const first = JSON.parse(fs.readFileSync(file, 'utf8')).profiles.default;
    // The same team's server, now on another address (a restart on another port).
    const moved = await startTestServer({ passwordHashCost: 10 });
    const elsewhere = await startFakeApi();
    try {
      const refused = await run(['keys', 'list'], { env: { ...e, PARLEY_BASE_URL: elsewhere.baseUrl } });
      assert.equal(refused.code, 2);
      assert.match(
        refused.stderr,
        /the admin login of profile default is for http:\/\/127\.0\.0\.1:\d+\/v1, not http:\/\/127\.0\.0\.1:\d+\/v1/,
      );
      assert.match(refused.stderr, /hint: parley admin login \(the profile then follows/);
      assert.equal(elsewhere.requests.length, 0, 'nothing was sent to the other address');
      const again = await run(['admin', 'login', '--email', ADMIN.email, '--password-stdin'], {
        input: ADMIN.password,
        env: { ...e, PARLEY_BASE_URL: moved.baseUrl },
      });
      assert.equal(again.code, 0, again.stderr);
      assert.match(
        again.stderr,
        new RegExp(
          `profile default now follows ${moved.baseUrl.replace(/[.]/g, '\\.')} \\(it was ${server.baseUrl.replace(/[.]/g, '\\.')}\\)`,
        ),
      );
      assert.match(again.stderr, new RegExp(`the admin token ${first.admin_token_id} made there was forgotten, not sent here`));
      const now = JSON.parse(fs.readFileSync(file, 'utf8')).profiles.default;
      assert.equal(now.base_url, moved.baseUrl);
      assert.notEqual(now.admin_token, first.admin_token);
      const keys = await run(['keys', 'list', '--json'], { env: { ...e, PARLEY_BASE_URL: moved.baseUrl } });
      assert.equal(keys.code, 0, keys.stderr);
      // The profile's address is now the default: no flag or variable needed.
      const followed = await run(['keys', 'list', '--json'], { env: { XDG_CONFIG_HOME: home, PARLEY_BASE_URL: '' } });
      assert.equal(followed.code, 0, followed.stderr);
    } finally {
      await moved.close();
      await elsewhere.close();
    }
  });

  test('D-153: logout with the server out of reach forgets the token and says plainly it could not revoke it (exit 1)', async () => {
    const home = await tempDir();
    const e = { XDG_CONFIG_HOME: home };
    const file = path.join(home, 'parley', 'config.json');
    const gone = await startTestServer({ passwordHashCost: 10 });
    const login = await run(['admin', 'login', '--email', ADMIN.email, '--password-stdin'], {
      input: ADMIN.password,
      env: { ...e, PARLEY_BASE_URL: gone.baseUrl },
    });
    assert.equal(login.code, 0, login.stderr);
    const id = JSON.parse(fs.readFileSync(file, 'utf8')).profiles.default.admin_token_id;
    await gone.close();
    const r = await run(['admin', 'logout'], { env: e });
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`could not revoke the admin token ${id} of profile default: .*connection refused`));
    assert.match(r.stderr, new RegExp(`parley admin tokens revoke ${id}`));
    assert.equal(JSON.parse(fs.readFileSync(file, 'utf8')).profiles.default.admin_token, undefined, 'forgotten here');
  });

  test('--password-stdin needs --email', async () => {
    const r = await run(['admin', 'login', '--password-stdin'], { input: 'x\n' });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--password-stdin needs --email/);
  });
});

describe('admin login, keys, audit, logout (D-79)', () => {
  let token: string;
  let created: { id: string; key: string };

  test('admin login keeps a personal access token in the profile, 0600, never printed', async () => {
    const r = await login();
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /signed in to http:\/\/127\.0\.0\.1:\d+\/admin\/v1 as admin@demo\.example \(admin of /);
    const p = profile();
    token = p.admin_token;
    assert.equal(checkFormat(token), 'valid');
    assert.match(token, /^pat_/);
    assert.match(p.admin_token_id, /^\w+/);
    assert.equal(p.base_url, server.baseUrl);
    assert.equal(fs.statSync(configFile()).mode & 0o777, 0o600);
    assert.equal((r.stdout + r.stderr).includes(token), false, 'the token is not printed');
    assert.equal((r.stdout + r.stderr).includes(ADMIN.password), false, 'the password is not printed');
    // The sign-in's session was closed: only the token remains.
    const audit = await run(['audit', 'list', '--since', '1h', '--json']);
    assert.equal(audit.code, 0, audit.stderr);
    const actions = JSON.parse(audit.stdout).data.map((e: { action: string }) => e.action);
    assert.deepEqual(actions.slice(0, 3), ['session.ended', 'token.created', 'session.created']);
  });

  test('keys list shows the team keys redacted; --json is the admin API list', async () => {
    const r = await run(['keys', 'list']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ID\s+TYPE\s+NAME\s+KEY\s+CREATED\s+LAST USED\s+STATUS/);
    assert.match(r.stdout, /sk_live_…/);
    assert.equal(r.stdout.includes(server.baseUrl), false);
    assert.equal(r.stdout.includes(TARGET_JSON.api_key), false, 'a listed key is redacted');
    const j = await run(['keys', 'list', '--json']);
    const list = JSON.parse(j.stdout);
    assert.equal(list.object, 'list');
    assert.ok(list.data.every((k: { object: string }) => k.object === 'api_key'));
  });

  test('keys create prints the new key once on stdout, and it works on /v1', async () => {
    const r = await run(['keys', 'create', '--type', 'secret', '--name', 'CI', '--expires-in', '30d']);
    assert.equal(r.code, 0, r.stderr);
    const key = r.stdout.trim();
    assert.match(key, /^sk_live_[0-9A-Za-z]{38}$/);
    assert.equal(checkFormat(key), 'valid');
    assert.match(r.stderr, /shown this once/);
    assert.equal((await v1(key)).status, 200);
    const j = await run(['keys', 'create', '--type', 'publishable', '--name', 'widget', '--json']);
    assert.equal(j.code, 0, j.stderr);
    const body = JSON.parse(j.stdout);
    assert.equal(body.object, 'api_key');
    assert.match(body.key, /^pk_live_/);
    created = { id: (await listed()).find((k) => k.name === 'CI')!.id, key };
  });

  test('keys create and roll check their options with the contract before any request (exit 2)', async () => {
    const version = server.control.read().version;
    for (const [args, re] of [
      [['keys', 'create', '--type', 'secret', '--name', '   '], /--name:/],
      [['keys', 'create', '--type', 'secret', '--name', 'x', '--expires-in', 'soon'], /--expires-in must be a duration/],
      [['keys', 'create', '--type', 'other', '--name', 'x'], /argument 'other' is invalid/],
      // The flag is given in days: its bound is said in days too, never as 604800 seconds.
      [['keys', 'roll', 'key_x', '--expires-in', '8d'], /^error: --expires-in: must be at most 7d\n/],
    ] as const) {
      const r = await run([...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re);
    }
    assert.equal(server.control.read().version, version, 'nothing changed');
  });

  test('keys roll prints the new key; the old one works through its grace period', async () => {
    const r = await run(['keys', 'roll', created.id, '--expires-in', '1h']);
    assert.equal(r.code, 0, r.stderr);
    const next = r.stdout.trim();
    assert.match(next, /^sk_live_/);
    assert.notEqual(next, created.key);
    assert.equal((await v1(next)).status, 200);
    assert.equal((await v1(created.key)).status, 200, 'the old key until its grace ends');
    const old = (await listed()).find((k) => k.id === created.id)!;
    assert.ok(old.expires_at !== null && old.rolled_to !== null);
    created = { id: old.rolled_to!, key: next };
  });

  test("D-127: keys scenario set makes the key's requests follow a script (its id the test id); clear stops it", async () => {
    const set = await run(['keys', 'scenario', 'set', created.id, 'status=500', '', '--json']);
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout), { object: 'key_scenario', key_id: created.id, script: ['status=500', ''] });
    await v1(created.key);
    await v1(created.key);
    const runOf = await server.call('GET', `/apps/${APP}/test-runs/${created.id}`);
    assert.deepEqual(
      runOf.body.requests.map((q: { step: number }) => q.step),
      [1, 2],
    );
    const cleared = await run(['keys', 'scenario', 'clear', created.id]);
    assert.equal(cleared.code, 0, cleared.stderr);
    assert.match(cleared.stdout, new RegExp(`${created.id} follows no script`));
    const other = await run(['keys', 'scenario', 'set', 'key_other_secret', 'status=503']);
    assert.equal(other.code, 1);
    assert.match(other.stderr, /\(404\)/);
  });

  test('keys revoke asks at a terminal: "n" keeps it, "y" revokes it and /v1 refuses it at once', async () => {
    const no = await atTerminal(['keys', 'revoke', created.id], 'n\n');
    assert.equal(no.code, 0, no.stderr);
    assert.match(no.stderr, new RegExp(`Revoke ${created.id} \\(CI, sk_live_…\\w{4}\\)\\?`));
    assert.match(no.stderr, new RegExp(`kept ${created.id}`));
    assert.equal((await v1(created.key)).status, 200);
    const yes = await atTerminal(['keys', 'revoke', created.id], 'y\n');
    assert.equal(yes.code, 0, yes.stderr);
    assert.match(yes.stdout, new RegExp(`revoked ${created.id}`));
    assert.equal((await v1(created.key)).status, 401);
  });

  test('keys revoke of an unknown key: the error with its request id (exit 1); a script is never asked', async () => {
    const r = await run(['keys', 'revoke', 'key_nope'], { input: 'n\n' });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /\(404\)/);
    assert.match(r.stderr, /request id: \S+/);
    const j = await run(['keys', 'revoke', 'key_nope', '--yes', '--json']);
    assert.equal(j.code, 1);
    assert.equal(JSON.parse(j.stdout).error.type, 'not_found');
  });

  test('audit list shows the changes, filtered by action and time; --json is the admin list', async () => {
    const r = await run(['audit', 'list', '--action', 'key.revoked']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^TIME\s+ACTION\s+ACTOR\s+TARGET\s+CHANGES/);
    assert.match(r.stdout, new RegExp(`key\\.revoked\\s+admin@demo\\.example\\s+${created.id}`));
    const j = JSON.parse((await run(['audit', 'list', '--since', '1h', '--json'])).stdout);
    const actions = new Set(j.data.map((e: { action: string }) => e.action));
    for (const a of ['key.created', 'key.rolled', 'key.revoked']) assert.ok(actions.has(a), a);
    const future = JSON.parse((await run(['audit', 'list', '--since', String(Math.floor(Date.now() / 1000) + 3600), '--json'])).stdout);
    assert.deepEqual(future.data, []);
    const limited = await run(['audit', 'list', '--limit', '1']);
    assert.match(limited.stderr, /more: add --after \S+ for the next page/);
    const bad = await run(['audit', 'list', '--since', 'yesterday-ish']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /param: since/);
  });

  test("usage: the team's days and its credits; --json is the admin API's report; --app narrows it; bad dates exit 2", async () => {
    const c = await server.call('POST', `/apps/${APP}/completions`, { prompt: 'Summarise billing' });
    assert.equal(c.status, 200);
    const j = await run(['usage', '--json']);
    assert.equal(j.code, 0, j.stderr);
    const report = JSON.parse(j.stdout);
    assert.equal(report.object, 'usage');
    const today = report.data.find((d: { app_id: string }) => d.app_id === APP);
    assert.ok(today.requests >= 1 && today.total_tokens > 0);
    const r = await run(['usage', '--app', APP]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^DATE\s+APP\s+REQUESTS\s+INPUT\s+OUTPUT\s+TOTAL\s+CREDITS/);
    assert.match(r.stdout, new RegExp(`\\d{4}-\\d{2}-\\d{2}\\s+${APP}\\s+${today.requests}\\s`));
    assert.match(r.stdout, /\ncredits: [\d.-]+ left of [\d.]+ this month \([\d.]+ used; soft limit;/);
    // The profile's or the environment's app does not narrow the team's figures: only the flag does.
    const team = JSON.parse((await run(['usage', '--json'], { env: { PARLEY_APP_ID: 'app_genui' } })).stdout);
    assert.deepEqual(team.data, report.data);
    const narrowed = JSON.parse((await run(['usage', '--app', 'app_genui', '--json'])).stdout);
    assert.ok(narrowed.data.every((d: { app_id: string }) => d.app_id === 'app_genui'));
    // --since takes a duration as `audit list --since 24h` does: the UTC day that long ago.
    const dayAgo = () => new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const days = [dayAgo()];
    const since = await run(['usage', '--since', '24h', '--json']);
    days.push(dayAgo());
    assert.equal(since.code, 0, since.stderr);
    assert.ok(days.includes(JSON.parse(since.stdout).since), since.stdout);
    const bad = await run(['usage', '--since', '2026-02-30']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--since: must be a date that exists/);
    const other = await run(['usage', '--app', 'app_other']);
    assert.equal(other.code, 1);
    assert.match(other.stderr, /\(404\).*param: app_id/);
    assert.match(other.stderr, /request id: \S+/);
  });

  test('conversations list|get --include-deleted: a soft-deleted conversation and its kept history, through the admin login (D-73)', async () => {
    const made = await server.call('POST', `/apps/${APP}/conversations`, { title: 'Deleted one' });
    const id = made.body.id as string;
    assert.equal((await server.call('POST', `/apps/${APP}/conversations/${id}`, { message: { content: 'Hello' } })).status, 200);
    assert.equal((await server.call('DELETE', `/apps/${APP}/conversations/${id}`)).status, 200);
    const withApp = { env: { PARLEY_APP_ID: APP, PARLEY_API_KEY: KEY } };
    const plain = await run(['conversations', 'list', '--json'], withApp);
    assert.equal(
      JSON.parse(plain.stdout).data.some((c: { id: string }) => c.id === id),
      false,
      'the API never lists it',
    );
    const list = await run(['conversations', 'list', '--include-deleted'], withApp);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^ID\s+CREATED\s+USER\s+MESSAGES\s+DELETED\s+TITLE/);
    assert.match(list.stdout, new RegExp(`${id}\\s+just now\\s+-\\s+2\\s+just now, kept\\s+Deleted one`));
    const only = JSON.parse((await run(['conversations', 'list', '--only-deleted', '--all', '--json'], withApp)).stdout);
    assert.ok(only.data.length > 0 && only.data.every((c: { deleted_at: number | null }) => c.deleted_at !== null));
    const get = await run(['conversations', 'get', id, '--include-deleted'], withApp);
    assert.equal(get.code, 0, get.stderr);
    assert.match(get.stdout, /deleted: \d{4}-\d{2}-\d{2} [\d:]+Z; its history is kept until \d{4}-/);
    assert.match(get.stdout, /Hello/);
    const json = JSON.parse((await run(['conversations', 'get', id, '--include-deleted', '--json'], withApp)).stdout);
    assert.deepEqual([json.id, json.history, json.items.length > 0], [id, 'kept', true]);
    const restored = await run(['conversations', 'restore', id], withApp);
    assert.equal(restored.code, 0, restored.stderr);
    assert.match(restored.stdout, new RegExp(`restored ${id} \\(2 items\\)`));
    assert.equal((await server.call('GET', `/apps/${APP}/conversations/${id}`)).body.items.length, 2, 'the API reads it again');
    const again = await run(['conversations', 'restore', id], withApp);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /code: conversation_not_restorable/);
    const both = await run(['conversations', 'list', '--include-deleted', '--only-deleted'], withApp);
    assert.equal(both.code, 2);
    const noLogin = await run(['conversations', 'list', '--include-deleted'], {
      env: { ...withApp.env, XDG_CONFIG_HOME: await tempDir() },
    });
    assert.equal(noLogin.code, 2);
    assert.match(noLogin.stderr, /hint: parley admin login/);
  });

  test("admin tokens list shows the member's tokens with their last use, the CLI's own marked; revoke ends one", async () => {
    const list = await run(['admin', 'tokens', 'list']);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^ID +NAME +TOKEN +CREATED +LAST USED +EXPIRES\n/);
    const own = profile().admin_token_id;
    // The CLI's own token has been used by the commands above.
    assert.match(
      list.stdout,
      new RegExp(`${own} +parley CLI on .* \\(this CLI\\) +\\S+ +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ +(just now|\\d+ \\w+ ago)`),
    );
    // Another token of the same member, made on the admin API, revoked from the CLI.
    const other = await fetch(`${new URL(server.baseUrl).origin}/admin/v1/tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ci', expires_in_days: 1 }),
    }).then((r) => r.json() as Promise<{ id: string; token: string }>);
    const revoked = await run(['admin', 'tokens', 'revoke', other.id]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal(revoked.stdout, `revoked ${other.id}\n`);
    const refused = await fetch(`${new URL(server.baseUrl).origin}/admin/v1/keys`, { headers: { authorization: `Bearer ${other.token}` } });
    assert.equal(refused.status, 401);
    const ids = JSON.parse((await run(['admin', 'tokens', 'list', '--json'])).stdout).data.map((t: { id: string }) => t.id);
    assert.ok(ids.includes(own) && !ids.includes(other.id));
  });

  test('admin logout revokes the token and forgets it; the commands then need a login again', async () => {
    const r = await run(['admin', 'logout']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(profile().admin_token, undefined);
    const after = await fetch(`${new URL(server.baseUrl).origin}/admin/v1/keys`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(after.status, 401, 'the token is revoked on the server');
    assert.equal((await run(['keys', 'list'])).code, 2);
    const again = await run(['admin', 'logout']);
    assert.equal(again.code, 0);
    assert.match(again.stderr, /nothing to do/);
  });
});

async function listed(): Promise<Array<{ id: string; name: string; expires_at: number | null; rolled_to: string | null }>> {
  const r = await run(['keys', 'list', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout).data;
}

describe('a mistyped Parley-format key or token is refused before any request (D-70)', () => {
  const body = `sk_live_${'a'.repeat(32)}`;
  const wrong = `${body}${checksumOf(body) === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA'}`;

  test('the API key: exit 2 naming the checksum, nothing sent, the key not printed', async () => {
    const fake = await startFakeApi();
    try {
      for (const args of [
        ['conversations', 'list'],
        ['api', 'GET', '/apps/app_x/config'],
      ]) {
        const r = await runCli(args, { env: { ...fake.env, PARLEY_API_KEY: wrong } });
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, /the API key fails its checksum/);
        assert.equal(r.stderr.includes(wrong), false);
      }
      // The right checksum, or another shape (the demo keys, other implementations' keys), is sent as it is.
      const right = `${body}${checksumOf(body)}`;
      fake.handle((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
      await runCli(['api', 'GET', '/apps/app_x/config'], { env: { ...fake.env, PARLEY_API_KEY: right } });
      await runCli(['api', 'GET', '/apps/app_x/config'], { env: fake.env });
      assert.equal(fake.requests.length, 2);
      assert.equal(fake.requests[0]!.headers.authorization, `Bearer ${right}`);
    } finally {
      await fake.close();
    }
  });

  test('parley login refuses it before checking it with the server', async () => {
    const home = await tempDir();
    const r = await runCli(['login', '--base-url', 'http://127.0.0.1:2/v1', '--api-key', wrong, '--app', 'app_x'], {
      env: { XDG_CONFIG_HOME: home },
    });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /checksum/);
  });

  test('the admin token too', async () => {
    const pat = `pat_${'b'.repeat(32)}`;
    const r = await run(['keys', 'list'], { env: { PARLEY_ADMIN_TOKEN: `${pat}${checksumOf(pat) === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA'}` } });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /the admin token fails its checksum/);
  });
});
