// Terminal manners (D-64): shell completion from the command tree and the server's recent ids, the delete
// confirmation that only a person at a terminal sees, relative times in tables with exact ones in --json.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ago } from '../cli/render.ts';
import { startTestServer, tempDir, type TestServer } from './support/helpers.ts';
import { runCli, serverEnv, type CliOptions, atTerminal as atTerminalWith } from './support/cli-helpers.ts';

let s: TestServer;
let env: Record<string, string>;
before(async () => {
  s = await startTestServer();
  env = serverEnv(s.baseUrl);
});
after(() => s.close());

const run = (args: string[], extra: CliOptions = {}) => runCli(args, { ...extra, env: { ...env, ...extra.env } });
const lines = (text: string) => text.split('\n').filter(Boolean);

async function create(): Promise<string> {
  const r = await run(['conversations', 'create', '--json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout).id;
}

const atTerminal = (args: string[], typed: string) => atTerminalWith(args, typed, env);

describe('conversations delete asks on a terminal only (D-64)', () => {
  test('"n" keeps it, "y" deletes it, --yes does not ask, a script is never asked', async () => {
    const id = await create();
    const no = await atTerminal(['conversations', 'delete', id], 'n\n');
    assert.equal(no.code, 0, no.stderr);
    assert.match(no.stderr, new RegExp(`Delete ${id}\\? .*\\[y/N\\]`));
    assert.match(no.stderr, new RegExp(`kept ${id}`));
    assert.equal((await run(['conversations', 'get', id])).code, 0, 'still there');

    const yes = await atTerminal(['conversations', 'delete', id], 'y\n');
    assert.equal(yes.code, 0, yes.stderr);
    assert.match(yes.stdout, new RegExp(`deleted ${id}`));
    assert.equal((await run(['conversations', 'get', id])).code, 1, 'gone');

    const other = await create();
    const skip = await atTerminal(['conversations', 'delete', other, '--yes'], '');
    assert.equal(skip.code, 0, skip.stderr);
    assert.doesNotMatch(skip.stderr, /\[y\/N\]/);
    assert.match(skip.stdout, /deleted/);

    const third = await create();
    const piped = await run(['conversations', 'delete', third], { input: 'n\n' });
    assert.equal(piped.code, 0, piped.stderr);
    assert.doesNotMatch(piped.stderr, /\[y\/N\]/);
    assert.match(piped.stdout, new RegExp(`deleted ${third}`));
  });
});

describe("another app's conversation or response", () => {
  test('get, update, delete, send, chat and responses hint at --app on a 404; an unknown app does not', async () => {
    // A key reaches every app of its team: the id may be right and the app wrong.
    const id = await create();
    const elsewhere = { env: { PARLEY_APP_ID: 'app_genui' } };
    for (const args of [
      ['conversations', 'get', id],
      ['conversations', 'update', id, '--title', 'x'],
      ['conversations', 'delete', id, '--yes'],
      ['send', id, 'hi'],
      ['chat', id],
    ]) {
      const r = await run(args, elsewhere);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, /error: not_found \(404\)/);
      assert.match(
        r.stderr,
        new RegExp(`hint: ${id} was not found in app app_genui \\(from PARLEY_APP_ID\\); if it belongs to another app, add --app <app_id>`),
      );
    }
    const flag = await run(['responses', 'get', 'resp_nope', '--app', 'app_genui']);
    assert.match(flag.stderr, /hint: resp_nope was not found in app app_genui \(from --app\)/);
    assert.equal((await run(['conversations', 'get', id])).code, 0, 'untouched in its own app');

    const unknownApp = await run(['conversations', 'get', id], { env: { PARLEY_APP_ID: 'app_nope' } });
    assert.match(unknownApp.stderr, /App "app_nope" not found/);
    assert.doesNotMatch(unknownApp.stderr, /hint:/);
  });

  test('delete at a terminal says not found before asking anything', async () => {
    const id = await create();
    const r = await atTerminal(['conversations', 'delete', id, '--app', 'app_genui'], 'y\n');
    assert.equal(r.code, 1);
    assert.doesNotMatch(r.stderr, /\[y\/N\]/);
    assert.match(r.stderr, /error: not_found \(404\).*\n.*\nhint: .*--app/);
    assert.equal((await run(['conversations', 'get', id])).code, 0, 'still there');
  });
});

describe('relative times (D-64)', () => {
  test('a table says how long ago; --json keeps the exact timestamp; get shows both', async () => {
    const user = `rel_${Date.now()}`;
    const c = JSON.parse((await run(['conversations', 'create', '--external-user-id', user, '--json'])).stdout);
    const table = await run(['conversations', 'list', '--external-user-id', user]);
    assert.match(lines(table.stdout)[1]!, new RegExp(`^${c.id}\\s+just now\\s+${user}`));
    const json = await run(['conversations', 'list', '--external-user-id', user, '--json']);
    assert.equal(JSON.parse(json.stdout).data[0].created_at, c.created_at);
    const get = await run(['conversations', 'get', c.id]);
    assert.match(get.stdout, /^created: +\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(just now\)$/m);
  });

  test('ago() in words', () => {
    const now = 1_700_000_000_000;
    const t = now / 1000;
    assert.equal(ago(t - 10, now), 'just now');
    assert.equal(ago(t - 180, now), '3 minutes ago');
    assert.equal(ago(t - 2 * 3600, now), '2 hours ago');
    assert.equal(ago(t - 86400, now), '1 day ago');
    assert.equal(ago(t - 400 * 86400, now), '1 year ago');
    assert.equal(ago(t + 120, now), 'in 2 minutes');
    assert.equal(ago(undefined, now), '-');
  });
});

describe('shell completion (D-64)', () => {
  test('__complete offers commands, options, choices, profiles and recent conversation ids', async () => {
    const id = await create();
    const c = async (...words: string[]) => lines((await run(['__complete', ...words])).stdout);
    assert.ok((await c('')).includes('conversations'));
    assert.ok(!(await c('')).includes('__complete'));
    assert.deepEqual(await c('conv'), ['conversations']);
    assert.deepEqual(await c('conversations', 'l'), ['list']);
    assert.deepEqual(await c('conversations', 'list', '--order', ''), ['asc', 'desc']);
    assert.ok((await c('conversations', 'list', '--')).includes('--external-user-id'));
    assert.ok((await c('conversations', 'list', '--')).includes('--base-url'), 'global options too');
    assert.ok((await c('conversations', 'get', '')).includes(id));
    assert.ok((await c('send', 'conv_')).includes(id));
    assert.deepEqual(await c('send', id, ''), [], 'the text is not completed');
    // Options already on the line apply: another app has other conversations.
    const streamConv = JSON.parse((await run(['conversations', 'create', '--json', '--app', 'app_stream'])).stdout).id as string;
    const ofStream = await c('conversations', 'get', '--app', 'app_stream', '');
    assert.ok(ofStream.includes(streamConv) && !ofStream.includes(id), ofStream.join(' '));
    assert.deepEqual(await c('completion', ''), ['bash', 'zsh', 'fish']);
    const home = await tempDir('parley-config-');
    await fs.mkdir(path.join(home, 'parley'));
    await fs.writeFile(
      path.join(home, 'parley', 'config.json'),
      JSON.stringify({ profiles: { staging: { base_url: s.baseUrl, api_key: 'k' } } }),
    );
    assert.deepEqual(lines((await run(['__complete', 'config', '--profile', ''], { env: { XDG_CONFIG_HOME: home } })).stdout), ['staging']);
    // A server that cannot be reached gives no ids and no error.
    const down = await run(['__complete', 'chat', ''], { env: { PARLEY_BASE_URL: 'http://127.0.0.1:9/v1' } });
    assert.equal(down.code, 0);
    assert.equal(down.stdout + down.stderr, '');
  });
});
