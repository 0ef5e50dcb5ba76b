// `parley api METHOD PATH` (D-61) against a real server on loopback: fields, typed fields, headers, a body
// from stdin, --paginate, live streams, and errors that name their request (D-63).
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setField } from '../cli/commands/api.ts';
import { APP, startTestServer, tempDir, type TestServer } from './support/helpers.ts';
import { runCli, serverEnv, type CliOptions } from './support/cli-helpers.ts';

let s: TestServer;
let env: Record<string, string>;
before(async () => {
  s = await startTestServer();
  env = serverEnv(s.baseUrl);
});
after(() => s.close());

const run = (args: string[], extra: CliOptions = {}) => runCli(args, { ...extra, env: { ...env, ...extra.env } });

describe('parley api', () => {
  test('POST with string and typed fields: nested, typed values reach the server as JSON', async () => {
    const r = await run([
      'api',
      'POST',
      '/apps/{app}/conversations',
      '-f',
      'title=Support',
      '-F',
      'metadata[vip]=true',
      '-F',
      'metadata[seats]=3',
      '-F',
      'metadata[note]=null',
      '-f',
      'metadata[plan]=42',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const c = JSON.parse(r.stdout);
    assert.match(c.id, /^conv_/);
    assert.equal(c.title, 'Support');
    assert.deepEqual(c.metadata, { vip: true, seats: 3, note: null, plan: '42' });
  });

  test('GET fields go in the query string; the body is printed as the server sent it', async () => {
    const user = `api_user_${Date.now()}`;
    for (let i = 0; i < 3; i++)
      assert.equal((await run(['api', 'POST', `/apps/${APP}/conversations`, '-f', `external_user_id=${user}`])).code, 0);
    const r = await run(['api', 'GET', '/apps/{app}/conversations', '-f', 'limit=2', '-f', `external_user_id=${user}`]);
    assert.equal(r.code, 0, r.stderr);
    const page = JSON.parse(r.stdout);
    assert.equal(page.data.length, 2);
    assert.equal(page.has_more, true);

    // --paginate: one merged list of every item, in the shape of a page.
    const all = await run(['api', 'GET', '/apps/{app}/conversations', '--paginate', '-f', 'limit=1', '-f', `external_user_id=${user}`]);
    assert.equal(all.code, 0, all.stderr);
    assert.equal(all.stdout.trim().split('\n').length, 1);
    const merged = JSON.parse(all.stdout);
    assert.equal(merged.object, 'list');
    assert.equal(merged.data.length, 3);
    assert.equal(new Set(merged.data.map((c: { id: string }) => c.id)).size, 3);
    assert.equal(merged.has_more, false);
    assert.equal(merged.first_id, merged.data[0].id);
    assert.equal(merged.last_id, merged.data[2].id);
  });

  test('a body from stdin (--input -) or a file, and an Idempotency-Key header honoured by the server', async () => {
    const body = JSON.stringify({ title: 'from stdin' });
    const key = `key-${Date.now()}`;
    const first = await run(['api', 'POST', '/apps/{app}/conversations', '--input', '-', '-H', `Idempotency-Key: ${key}`, '--include'], {
      input: body,
    });
    assert.equal(first.code, 0, first.stderr);
    assert.equal(JSON.parse(first.stdout).title, 'from stdin');
    assert.match(first.stderr, /^HTTP 200$/m);
    const dir = await tempDir();
    const file = path.join(dir, 'body.json');
    await fs.writeFile(file, body);
    const again = await run(['api', 'post', '/apps/{app}/conversations', '--input', file, '-H', `Idempotency-Key: ${key}`, '-i']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(JSON.parse(again.stdout).id, JSON.parse(first.stdout).id, 'the same key replays the same conversation');
    assert.match(again.stderr, /^idempotent-replayed: true$/m);
  });

  test('an event stream is printed live: SSE text, or one payload per line with --json', async () => {
    const conv = JSON.parse((await run(['api', 'POST', '/apps/{app}/conversations'])).stdout).id as string;
    const sse = await run([
      'api',
      'POST',
      `/apps/{app}/conversations/${conv}`,
      '-f',
      'message[role]=user',
      '-f',
      'message[content]=hello',
      '-F',
      'stream=true',
    ]);
    assert.equal(sse.code, 0, sse.stderr);
    assert.match(sse.stdout, /^event: response\.created$/m);
    assert.match(sse.stdout, /^event: response\.completed$/m);
    const nd = await run([
      'api',
      'POST',
      `/apps/{app}/conversations/${conv}`,
      '-f',
      'message[role]=user',
      '-f',
      'message[content]=hello again',
      '-F',
      'stream=true',
      '--json',
    ]);
    assert.equal(nd.code, 0, nd.stderr);
    const lines = nd.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    assert.equal(lines[0]!.type, 'response.created');
    assert.equal(lines.at(-1)!.type, 'response.completed');
  });

  test('an API error exits 1 and names its request id; with --json its error object is on stdout', async () => {
    const r = await run(['api', 'GET', '/apps/{app}/conversations/conv_nope']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^error: not_found \(404\): /m);
    assert.match(r.stderr, /^request id: \S+$/m);
    const j = await run(['api', 'GET', '/apps/{app}/conversations/conv_nope', '--json']);
    assert.equal(j.code, 1);
    assert.equal(JSON.parse(j.stdout).error.type, 'not_found');
    // The same for every command, not only api.
    const get = await run(['conversations', 'get', 'conv_nope', '--json']);
    assert.equal(get.code, 1);
    assert.equal(JSON.parse(get.stdout).error.type, 'not_found');
    assert.match(get.stderr, /^request id: \S+$/m);
  });

  test('usage mistakes exit 2 and send nothing', async () => {
    for (const args of [
      ['api', 'FETCH', '/x'],
      ['api', 'POST', '/apps/{app}/conversations', '-f', 'novalue'],
      ['api', 'POST', '/apps/{app}/conversations', '-H', 'no colon'],
      ['api', 'POST', '/apps/{app}/conversations', '-H', 'Authorization: Bearer x'],
      ['api', 'POST', '/apps/{app}/conversations', '--paginate'],
      ['api', 'POST', '/apps/{app}/conversations', '-f', 'a=1', '--input', '-'],
      ['api', 'POST', '/apps/{app}/conversations', '-F', 'x=@/no/such/file'],
    ]) {
      const r = await run(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^error: /m);
    }
    // A path naming {app} needs an app.
    const noApp = await run(['api', 'GET', '/apps/{app}/config'], { env: { PARLEY_APP_ID: undefined } });
    assert.equal(noApp.code, 2);
    assert.match(noApp.stderr, /no app/);
  });

  test('D-120 --scenario and --test-id go on the request as Parley-Scenario and Parley-Test-Id', async () => {
    const r = await run(['api', 'GET', '/apps/{app}/config', '--scenario', 'status=503', '--test-id', 't-cli', '--json']);
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.stdout).error.code, 'store_unavailable');
    const bad = await run(['api', 'GET', '/apps/{app}/config', '--scenario', 'nope', '--json']);
    assert.equal(JSON.parse(bad.stdout).error.code, 'invalid_value');
    // A request command too: a send whose stream is cut after its 3rd event, resumed by the client itself.
    const c = JSON.parse((await run(['api', 'POST', '/apps/{app}/conversations'])).stdout).id as string;
    const sent = await run(['send', c, 'Hello', '--stream', '--scenario', 'drop-after=3', '--verbose']);
    assert.equal(sent.code, 0, sent.stderr);
    assert.match(sent.stderr, /stream dropped/);
    // The control plane plays no scenario: a command of it refuses the flags before any request.
    const admin = await run(['apps', 'list', '--scenario', 'status=503']);
    assert.equal(admin.code, 2);
    assert.match(admin.stderr, /--scenario and --test-id apply to the API's requests/);
  });

  test('setField nests objects and arrays as gh api does', () => {
    const o: Record<string, unknown> = {};
    setField(o, 'a[b][c]', 1);
    setField(o, 'tags[]', 'x');
    setField(o, 'tags[]', 'y');
    assert.deepEqual(o, { a: { b: { c: 1 } }, tags: ['x', 'y'] });
    assert.throws(() => setField(o, 'a[b][c][d]', 2), /already a value/);
    assert.throws(() => setField(o, '[x]', 2), /must look like/);
  });
});
