// Profiles (D-60): `parley login` checks and stores them owner-only in a temporary config directory (never
// the user's own), `--profile` / PARLEY_PROFILE choose one, flags and the environment still win, `logout`.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { configDir } from '../cli/profiles.ts';
import { APP, KEY, startTestServer, tempDir, type TestServer } from './support/helpers.ts';
import { runCli } from './support/cli-helpers.ts';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

async function freshConfig(): Promise<{ env: Record<string, string>; file: string }> {
  const home = await tempDir('parley-config-');
  return { env: { XDG_CONFIG_HOME: home }, file: path.join(home, 'parley', 'config.json') };
}

describe('parley login / logout', () => {
  test('login from piped answers: checked, stored 0600 in a 0700 directory, the key never printed; then used by every command', async () => {
    const { env, file } = await freshConfig();
    const r = await runCli(['login'], { env, input: `${s.baseUrl}\n${KEY}\n${APP}\n` });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Base URL .*API key .*Default app id/s);
    assert.match(r.stderr, /logged in: profile default/);
    assert.ok(!r.stdout.includes(KEY) && !r.stderr.includes(KEY), 'the key was printed');
    const stat = await fs.stat(file);
    assert.equal(stat.mode & 0o777, 0o600);
    assert.equal((await fs.stat(path.dirname(file))).mode & 0o777, 0o700);
    assert.deepEqual(JSON.parse(await fs.readFile(file, 'utf8')), {
      profiles: { default: { base_url: s.baseUrl, api_key: KEY, app_id: APP } },
    });

    // No PARLEY_* variable at all: the profile gives the URL, key and app.
    const created = await runCli(['conversations', 'create', '--title', 'via profile', '--json'], { env });
    assert.equal(created.code, 0, created.stderr);
    const api = await runCli(['api', 'GET', `/apps/{app}/conversations/${JSON.parse(created.stdout).id}`], { env });
    assert.equal(api.code, 0, api.stderr);
    assert.equal(JSON.parse(api.stdout).title, 'via profile');

    // The environment wins over the profile (here: an app the key cannot see is refused).
    const envWins = await runCli(['config', '--json'], { env: { ...env, PARLEY_APP_ID: 'app_nope' } });
    assert.equal(envWins.code, 1);
    assert.match(envWins.stderr, /\(404\)/);
    // And a flag wins over both.
    const flagWins = await runCli(['config', '--json', '--app', 'app_stream'], { env: { ...env, PARLEY_APP_ID: 'app_nope' } });
    assert.equal(flagWins.code, 0, flagWins.stderr);
    assert.equal(JSON.parse(flagWins.stdout).app_id, 'app_stream');

    const out = await runCli(['logout'], { env });
    assert.equal(out.code, 0);
    assert.match(out.stderr, /logged out: profile default/);
    assert.deepEqual(JSON.parse(await fs.readFile(file, 'utf8')), { profiles: {} });
    const none = await runCli(['conversations', 'list'], { env });
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no API key: run parley login/);
    const again = await runCli(['logout'], { env });
    assert.equal(again.code, 0);
    assert.match(again.stderr, /no profile default/);
  });

  test('a wrong key is refused by the server and nothing is stored', async () => {
    const { env, file } = await freshConfig();
    const r = await runCli(['login', '--base-url', s.baseUrl, '--app', APP], {
      env,
      input: 'sk_live_wrong_0123456789abcdef0123456789abcdef\n',
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: invalid_api_key \(401\)/m);
    await assert.rejects(fs.stat(file), { code: 'ENOENT' });
  });

  test('named profiles: --profile and PARLEY_PROFILE choose, an unknown one is a usage error', async () => {
    const { env } = await freshConfig();
    assert.equal((await runCli(['login', '--base-url', s.baseUrl, '--api-key', KEY, '--app', APP], { env })).code, 0);
    const staging = await runCli(['login', '--profile', 'staging', '--base-url', s.baseUrl, '--app', 'app_stream'], {
      env,
      input: `${KEY}\n`,
    });
    assert.equal(staging.code, 0, staging.stderr);
    const byFlag = await runCli(['config', '--json', '--profile', 'staging'], { env });
    assert.equal(JSON.parse(byFlag.stdout).app_id, 'app_stream');
    const byEnv = await runCli(['config', '--json'], { env: { ...env, PARLEY_PROFILE: 'staging' } });
    assert.equal(JSON.parse(byEnv.stdout).app_id, 'app_stream');
    const byDefault = await runCli(['config', '--json'], { env });
    assert.equal(JSON.parse(byDefault.stdout).app_id, APP);
    const unknown = await runCli(['config', '--profile', 'prod'], { env });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /no profile "prod" .*known: default, staging/);
    const logout = await runCli(['logout', '--profile', 'staging'], { env });
    assert.equal(logout.code, 0);
    assert.equal((await runCli(['config', '--json'], { env })).code, 0, 'the default profile stays');
  });

  test('the config directory follows XDG_CONFIG_HOME, else ~/.config; a relative XDG_CONFIG_HOME is ignored', () => {
    assert.equal(configDir({ XDG_CONFIG_HOME: '/x/y', HOME: '/h' }), '/x/y/parley');
    assert.equal(configDir({ HOME: '/h' }), '/h/.config/parley');
    assert.equal(configDir({ XDG_CONFIG_HOME: 'rel', HOME: '/h' }), '/h/.config/parley');
  });

  test('a config file that is not JSON is a usage error naming it', async () => {
    const { env, file } = await freshConfig();
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, '{oops');
    const r = await runCli(['conversations', 'list'], { env });
    assert.equal(r.code, 2);
    assert.ok(r.stderr.includes(`${file} is not valid JSON`), r.stderr);
  });
});
