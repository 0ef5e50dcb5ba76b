// The `parley` CLI as a user runs it, against a real server on loopback (no mocks): main() in-process with
// its own streams and environment, and real processes for the executable's exit codes and output.
// Conversations (§4.1–4.5), config and metrics (§4.8–4.9), --json exactness, exit codes, the key's secrecy.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Command } from 'commander';
import { buildProgram } from '../cli/main.ts';
import { Session } from '../cli/context.ts';
import { Output } from '../cli/io.ts';
import { APP, KEY, OTHER_TEAM_KEY, startTestServer, TARGET, tempDir, type TestServer } from './support/helpers.ts';
import { ROOT, runCli, serverEnv, type CliOptions } from './support/cli-helpers.ts';

let s: TestServer;
let env: Record<string, string>;
before(async () => {
  s = await startTestServer();
  env = serverEnv(s.baseUrl);
});
after(() => s.close());

const base = `/apps/${APP}/conversations`;
const run = (args: string[], extra: CliOptions = {}) => runCli(args, { ...extra, env: { ...env, ...extra.env } });

/** Every output of every run in this file, to check that the key never appears in any of them. */
const outputs: string[] = [];
async function runAndKeep(args: string[], extra: CliOptions = {}) {
  const r = await run(args, extra);
  outputs.push(r.stdout, r.stderr);
  return r;
}

describe('help', () => {
  test('--help lists every command and exits 0 (test/proof/cli-process.test.ts: through the installed bin)', async () => {
    const r = await runCli(['--help']);
    assert.equal(r.code, 0, r.stderr);
    for (const c of ['conversations', 'send', 'chat', 'complete', 'config', 'metrics', 'serve', 'conformance'])
      assert.match(r.stdout, new RegExp(`^  ${c}\\b`, 'm'));
    assert.match(r.stdout, /PARLEY_API_KEY/);
  });

  test('every command has its own help with an example', () => {
    const out = new Output();
    const program = buildProgram(out, new Session(out));
    const walk = (c: Command): Command[] => [c, ...c.commands.flatMap(walk)];
    // `conformance` here is a placeholder that hands everything to the suite: its help is tested as users see it, below.
    const commands = walk(program).filter((c) => c.name() !== 'help' && c.name() !== 'conformance');
    assert.ok(commands.length >= 13);
    for (const c of commands) {
      let after = '';
      // addHelpText('after') listens for this event; capture its text the way commander prints it.
      (c as unknown as NodeJS.EventEmitter).emit('afterHelp', { error: false, command: c, write: (s: string) => (after += s) });
      assert.match(after, /Examples?:\n/, `${c.name()} has no example`);
      assert.match(after, /^ {2}(.*\| )?parley \S/m, `${c.name()} has no example`);
    }
  });
});

describe('conversations', { concurrency: 4 }, () => {
  test('create with every field, readable on a terminal; get --json is the API JSON exactly', async () => {
    const r = await runAndKeep([
      'conversations',
      'create',
      '--title',
      'Billing question',
      '--external-user-id',
      'user_42',
      '--metadata',
      '{"plan":"pro"}',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const id = /^id:\s+(conv_\w+)$/m.exec(r.stdout)?.[1];
    assert.ok(id, r.stdout);
    assert.match(r.stdout, /title:\s+Billing question/);
    assert.match(r.stdout, /external user:\s+user_42/);
    assert.match(r.stdout, /metadata:\s+\{"plan":"pro"\}/);

    const g = await runAndKeep(['conversations', 'get', id, '--json']);
    assert.equal(g.code, 0, g.stderr);
    const api = await s.call('GET', `${base}/${id}`);
    assert.deepEqual(JSON.parse(g.stdout), api.body);
    assert.equal(g.stdout.trim().split('\n').length, 1);
  });

  test('create --json prints the created conversation; metadata from @file via stdin (@-)', async () => {
    const r = await runAndKeep(['conv', 'create', '--json', '--metadata', '@-'], { input: '{"tier": "gold"}' });
    assert.equal(r.code, 0, r.stderr);
    const c = JSON.parse(r.stdout);
    assert.deepEqual(c.metadata, { tier: 'gold' });
    assert.deepEqual(c, omitItems((await s.call('GET', `${base}/${c.id}`)).body));
  });

  test('list: a table by default, the API JSON with --json, --all follows the cursors (D-12)', async () => {
    const user = `cli_list_${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await s.call('POST', base, { external_user_id: user, title: `T${i}` })).body.id);

    const table = await runAndKeep(['conversations', 'list', '--external-user-id', user, '--limit', '2', '--order', 'asc']);
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trim().split('\n');
    assert.match(lines[0]!, /^ID\s+CREATED\s+USER\s+TITLE$/);
    assert.deepEqual(
      lines.slice(1).map((l) => l.split(/\s+/)[0]),
      ids.slice(0, 2),
    );
    assert.match(table.stderr, new RegExp(`--after ${ids[1]}`));

    const json = await runAndKeep([
      'conversations',
      'list',
      '--external-user-id',
      user,
      '--limit',
      '2',
      '--after',
      ids[1]!,
      '--order',
      'asc',
      '--json',
    ]);
    const api = await s.call('GET', `${base}?external_user_id=${user}&limit=2&after=${ids[1]}&order=asc`);
    assert.deepEqual(JSON.parse(json.stdout), api.body);

    const all = await runAndKeep(['conversations', 'list', '--all', '--external-user-id', user, '--limit', '2', '--json']);
    assert.equal(all.code, 0, all.stderr);
    const pages = all.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(pages.length, 3);
    assert.deepEqual(
      pages.flatMap((p) => p.data.map((c: { id: string }) => c.id)),
      [...ids].reverse(),
    );

    const allTable = await runAndKeep([
      'conversations',
      'ls',
      '--all',
      '--external-user-id',
      user,
      '--limit',
      '2',
      '--before',
      ids[4]!,
      '--order',
      'asc',
    ]);
    assert.equal(allTable.code, 0, allTable.stderr);
    assert.deepEqual(
      allTable.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(/\s+/)[0])
        .sort(),
      ids.slice(0, 4).sort(),
    );
  });

  test('update sets and clears the title; delete soft-deletes; then get is a 404 (exit 1)', async () => {
    const id = (await s.call('POST', base, {})).body.id as string;
    const set = await runAndKeep(['conversations', 'update', id, '--title', 'Refund']);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /title:\s+Refund/);
    const cleared = await runAndKeep(['conversations', 'update', id, '--clear-title', '--json']);
    assert.equal(JSON.parse(cleared.stdout).title, null);
    const neither = await runAndKeep(['conversations', 'update', id]);
    assert.equal(neither.code, 2);
    assert.match(neither.stderr, /--title/);

    const del = await runAndKeep(['conversations', 'delete', id]);
    assert.equal(del.code, 0, del.stderr);
    assert.equal(del.stdout, `deleted ${id}\n`);
    const gone = await runAndKeep(['conversations', 'get', id]);
    assert.equal(gone.code, 1);
    assert.equal(gone.stdout, '');
    assert.match(gone.stderr, /^error: not_found \(404\): .+/m);
  });

  test('get shows the history readably', async () => {
    const id = (await s.call('POST', base, { title: 'History' })).body.id as string;
    const r = await runAndKeep(['conversations', 'get', id]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /title:\s+History/);
    assert.match(r.stdout, /\(no messages yet\)|^user: /m);
  });
});

function omitItems(c: Record<string, unknown>) {
  const { items: _items, ...rest } = c;
  return rest;
}

describe('config and metrics', { concurrency: 2 }, () => {
  test('config: readable, and exactly the API JSON with --json', async () => {
    const r = await runAndKeep(['config']);
    assert.equal(r.code, 0, r.stderr);
    const api = (await s.call('GET', `/apps/${APP}/config`)).body;
    assert.match(r.stdout, new RegExp(`app:\\s+${APP}`));
    assert.match(r.stdout, new RegExp(`agent:\\s+${api.agent.name}`));
    const j = await runAndKeep(['config', '--json']);
    assert.deepEqual(JSON.parse(j.stdout), api);
  });

  test('metrics: flags win over the environment; --json is the API JSON', async () => {
    const r = await runAndKeep(['metrics', '--json', '--app', APP], { env: { PARLEY_APP_ID: 'app_nonexistent' } });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(Object.keys(JSON.parse(r.stdout)).sort(), ['total_conversations', 'total_messages', 'total_users']);
    const h = await runAndKeep(['metrics']);
    assert.match(h.stdout, /^conversations:\s+\d+\nmessages:\s+\d+\nusers:\s+\d+\n$/);
  });
});

describe('errors and exit codes', { concurrency: 4 }, () => {
  test('API errors: exit 1, "error: <type> (<status>): <message>" with the param', async () => {
    const r = await runAndKeep(['conversations', 'list', '--limit', '0']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: invalid_request_error \(400\): .*limit.* \(param: limit, code: invalid_value\)$/m);
    const denied = await runAndKeep(['config', '--app', TARGET.apps.other_team!]);
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /^error: access_denied \(403\): /m);
    const badKey = await runAndKeep(['metrics', '--api-key', OTHER_TEAM_KEY.replace('other', 'wrong')]);
    assert.equal(badKey.code, 1);
    assert.match(badKey.stderr, /^error: invalid_api_key \(401\): /m);
  });

  test('usage errors: exit 2 (unknown option, missing key, bad --metadata, bad --timeout, unknown command)', async () => {
    const results = await Promise.all([
      runAndKeep(['conversations', 'list', '--bogus']),
      runAndKeep(['metrics'], { env: { PARLEY_API_KEY: undefined } }),
      runAndKeep(['conversations', 'create', '--metadata', '[1,2]']),
      runAndKeep(['conversations', 'create', '--metadata', '{oops']),
      runAndKeep(['config', '--timeout', 'soon']),
      runAndKeep(['frobnicate']),
      runAndKeep(['conversations', 'create', '--metadata', '@no-such-file.json']),
    ]);
    for (const r of results) {
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /error: /);
    }
    assert.match(results[1]!.stderr, /no API key/);
    assert.match(results[2]!.stderr, /--metadata must be a JSON object/);
    assert.match(results[6]!.stderr, /^error: --metadata: cannot read no-such-file\.json: no such file$/m);
  });

  test('an unreachable server: exit 3 with the URL tried', async () => {
    // Port 2 on loopback: nothing listens there, and no port-0 server of a test beside this one gets it.
    const port = 2;
    const r = await runAndKeep(['metrics', '--base-url', `http://127.0.0.1:${port}/v1`]);
    assert.equal(r.code, 3);
    assert.match(r.stderr, new RegExp(`^error: cannot reach http://127\\.0\\.0\\.1:${port}/v1/apps/${APP}/metrics: `, 'm'));
  });

  test('a server that never answers: exit 3 after --timeout, with the URL', async () => {
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((sock) => sockets.add(sock));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    try {
      const r = await runAndKeep(['config', '--timeout', '0.3', '--base-url', `http://127.0.0.1:${port}/v1`]);
      assert.equal(r.code, 3);
      assert.match(r.stderr, new RegExp(`^error: timeout: .*http://127\\.0\\.0\\.1:${port}/v1/apps/${APP}/config`, 'm'));
    } finally {
      for (const sock of sockets) sock.destroy();
      silent.close();
    }
  });
});

describe('serve and conformance', { concurrency: 2 }, () => {
  test("serve: a bad option or variable is a usage error in parley's words, not npm start's (exit 2)", async () => {
    for (const [args, env] of [
      [['serve', '--port', 'abc'], {}],
      [['serve'], { PORT: 'abc' }],
    ] as const) {
      const r = await runAndKeep([...args], { env });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /^error: port must be .*\(see parley serve --help\)$/m);
      assert.doesNotMatch(r.stderr, /npm start/);
    }
  });

  test("conformance --help is the suite's own, with examples and its --timeout in milliseconds; or the suite is said to be missing (exit 2)", async () => {
    const present = fs.existsSync(`${ROOT}/conformance/command.ts`);
    const r = await runAndKeep(['conformance', '--help']);
    if (present) {
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^Usage: parley conformance \[options\]/m);
      assert.match(r.stdout, /--timeout <ms>\s+per request, in milliseconds/);
      assert.match(r.stdout, /Examples?:\n/);
      assert.match(r.stdout, /^ {2}parley conformance --target \S+/m);
    } else {
      assert.equal(r.code, 2);
      assert.match(r.stderr, /^error: conformance suite not available/m);
    }
  });
});

describe("conformance gets parley's global options", { concurrency: 2 }, () => {
  const TARGET_FILE = path.join(ROOT, 'fixtures/target.json');
  const ONE_CASE = ['--only', 'S4.3-get-unknown-404'];
  const NO_ENV = { PARLEY_BASE_URL: undefined, PARLEY_API_KEY: undefined, PARLEY_APP_ID: undefined };
  const header = (url: string) => new RegExp(`^Parley conformance: ${url} `, 'm');

  test('--base-url before `conformance` reaches the suite; PARLEY_BASE_URL/PARLEY_API_KEY fill only what the target leaves out; its own --base-url wins', async () => {
    const flag = await runAndKeep(['--base-url', s.baseUrl, 'conformance', '--target', TARGET_FILE, ...ONE_CASE], { env: NO_ENV });
    assert.equal(flag.code, 0, flag.stdout + flag.stderr);
    assert.match(flag.stdout, header(s.baseUrl));
    assert.match(flag.stderr, /^conformance: --base-url from parley --base-url /m);

    // A target file with neither base_url nor api_key: both come from the environment.
    const { base_url: _b, api_key: _k, ...rest } = JSON.parse(fs.readFileSync(TARGET_FILE, 'utf8'));
    const bare = path.join(await tempDir(), 'target.json');
    fs.writeFileSync(bare, JSON.stringify(rest));
    const fromEnv = await runAndKeep(['conformance', '--target', bare, ...ONE_CASE]);
    assert.equal(fromEnv.code, 0, fromEnv.stdout + fromEnv.stderr);
    assert.match(fromEnv.stdout, header(s.baseUrl));
    assert.match(fromEnv.stderr, /^conformance: --base-url from PARLEY_BASE_URL, --api-key from PARLEY_API_KEY /m);

    const nowhere = 'http://127.0.0.1:9/v1';
    // A target that names its own base_url and api_key keeps them: exported variables only fill gaps.
    const own_target = path.join(await tempDir(), 'target.json');
    fs.writeFileSync(own_target, JSON.stringify({ ...rest, base_url: s.baseUrl, api_key: KEY }));
    const kept = await runAndKeep(['conformance', '--target', own_target, ...ONE_CASE], {
      env: { PARLEY_BASE_URL: nowhere, PARLEY_API_KEY: 'sk_live_not_the_target_key_000000000000' },
    });
    assert.equal(kept.code, 0, kept.stdout + kept.stderr);
    assert.match(kept.stdout, header(s.baseUrl));
    assert.doesNotMatch(kept.stderr, /from PARLEY_/);

    const own = await runAndKeep(['--base-url', nowhere, 'conformance', '--base-url', s.baseUrl, '--target', TARGET_FILE, ...ONE_CASE], {
      env: { PARLEY_BASE_URL: nowhere },
    });
    assert.equal(own.code, 0, own.stdout + own.stderr);
    assert.match(own.stdout, header(s.baseUrl));
  });

  test("parley --timeout <seconds> before `conformance` becomes the suite's milliseconds", async () => {
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((sock) => sockets.add(sock));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`;
    try {
      const r = await runAndKeep(['--timeout', '0.2', 'conformance', '--target', TARGET_FILE, '--base-url', url, ...ONE_CASE], {
        env: NO_ENV,
      });
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.match(r.stderr, /within 200 ms/);
    } finally {
      for (const sock of sockets) sock.destroy();
      silent.close();
    }
  });
});

test('no output of any run above, successful or not, shows the key', () => {
  assert.ok(outputs.length > 20);
  for (const o of outputs) assert.ok(!o.includes(KEY), `the key appeared in: ${o}`);
  // Parley's own answers match the interface: the CLI never has to warn about them.
  for (const o of outputs) assert.ok(!/^warning: /m.test(o), `a warning about Parley's answer: ${o}`);
});
