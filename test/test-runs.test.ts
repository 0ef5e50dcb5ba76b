// Scripts and test runs (docs/scenarios.md, D-125…D-127) on a real server: a request carrying
// Parley-Test-Id is listed in its test run with what its client's behaviour shows; `script=<name>` gives
// the n-th request of a test id step n (past the end, the last); a key's script applies to every request
// made with that key, its id the test id.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { adminClient, bearer } from './support/admin-client.ts';
import { APP, FIXTURES_DIR, startTestServer, tempDir, type TestServer } from './support/helpers.ts';
import { loadScriptBook } from '../src/store/fixtures.ts';
import { demoAdminToken } from './support/webhook-receiver.ts';
import { visitor, widgetCall } from './support/widget.ts';

let server: TestServer;
let token: string;
before(async () => {
  server = await startTestServer();
  token = await demoAdminToken(new URL(server.baseUrl).origin);
});
after(() => server.close());

const admin = (method: string, path: string, body?: unknown) =>
  adminClient(new URL(server.baseUrl).origin).call(method, path, body, bearer(token));
const run = (id: string) => server.call('GET', `/apps/${APP}/test-runs/${encodeURIComponent(id)}`);
const list = (headers: Record<string, string>, key?: string) =>
  server.call('GET', `/apps/${APP}/conversations`, undefined, { headers, key });

test('D-125: a request carrying Parley-Test-Id is listed with its method, path, status and the headers its client sent', async () => {
  const id = { 'parley-test-id': 'listed-1' };
  const created = await server.call('POST', `/apps/${APP}/conversations`, {}, { headers: { ...id, 'idempotency-key': 'k-listed-1' } });
  assert.equal(created.status, 200);
  const missing = await server.call('GET', `/apps/${APP}/responses/resp_nope/events?starting_after=3`, undefined, {
    headers: { ...id, 'last-event-id': '3' },
  });
  assert.equal(missing.status, 404);
  // Another request without the header is in no run.
  assert.equal((await list({})).status, 200);
  const r = await run('listed-1');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.object, 'test_run');
  assert.equal(r.body.id, 'listed-1');
  const [a, b] = r.body.requests;
  assert.equal(r.body.requests.length, 2);
  assert.deepEqual(
    { ...a, at_ms: 0 },
    {
      at_ms: 0,
      method: 'POST',
      path: `/v1/apps/${APP}/conversations`,
      step: null,
      status: 200,
      idempotency_key: 'k-listed-1',
      last_event_id: null,
      starting_after: null,
      retry_after_gap_ms: null,
    },
  );
  assert.deepEqual(
    [b.method, b.path, b.status, b.last_event_id, b.starting_after],
    ['GET', `/v1/apps/${APP}/responses/resp_nope/events`, 404, '3', '3'],
  );
  assert.ok(b.at_ms >= a.at_ms && a.at_ms > Date.now() - 60_000);
});

test('D-125: an unknown test run is 404 naming test_id', async () => {
  const r = await run('never-seen');
  assert.equal(r.status, 404);
  assert.equal(r.body.error.param, 'test_id');
});

test('D-126: script=<name> gives the n-th request of a test id step n, and the last step past the end', async () => {
  const h = { 'parley-test-id': 'scripted-1', 'parley-scenario': 'script=retry-storm' };
  for (let i = 0; i < 4; i++) await list(h);
  const r = await run('scripted-1');
  assert.deepEqual(
    r.body.requests.map((q: { step: number }) => q.step),
    [1, 2, 3, 3],
  );
});

test('D-126: a script needs a test id and a name scenarios.json has; a bad test id is refused; nothing is counted', async () => {
  const cases: Array<[Record<string, string>, string, string]> = [
    [{ 'parley-scenario': 'script=retry-storm' }, 'Parley-Test-Id', 'missing_parameter'],
    [{ 'parley-test-id': 'bad-1', 'parley-scenario': 'script=no-such' }, 'Parley-Scenario', 'invalid_value'],
    [{ 'parley-test-id': 'bad-1', 'parley-scenario': 'script=retry-storm;ttft=5' }, 'Parley-Scenario', 'invalid_value'],
    [{ 'parley-test-id': 'x'.repeat(129) }, 'Parley-Test-Id', 'invalid_value'],
  ];
  for (const [headers, param, code] of cases) {
    const r = await list(headers);
    assert.equal(r.status, 400, JSON.stringify(headers));
    assert.deepEqual([r.body.error.param, r.body.error.code], [param, code], JSON.stringify(headers));
  }
  assert.equal((await run('bad-1')).status, 404, 'a refused script counted nothing');
});

test("D-127: a key's script applies to every request made with it, its id the test id; set again it starts anew; removed, it stops", async () => {
  const made = await admin('POST', '/keys', { type: 'secret', name: 'client under test' });
  assert.equal(made.status, 200);
  const set = await admin('PUT', `/keys/${made.body.id}/scenario`, { script: ['', 'status=500'] });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  assert.deepEqual(set.body, { object: 'key_scenario', key_id: made.body.id, script: ['', 'status=500'] });
  // What each step does is the scenario stage's to play; here, which step each request gets.
  for (let i = 0; i < 3; i++) await list({}, made.body.key);
  // A request with a test id of its own is in its own run, not the key's.
  await list({ 'parley-test-id': 'own-1' }, made.body.key);
  const steps = async () => (await run(made.body.id)).body.requests.map((q: { step: number }) => q.step);
  assert.deepEqual(await steps(), [1, 2, 2]);
  assert.equal((await admin('PUT', `/keys/${made.body.id}/scenario`, { script: ['status=503'] })).status, 200);
  await list({}, made.body.key);
  assert.deepEqual(await steps(), [1], 'a script set again begins its run anew');
  const cleared = await admin('DELETE', `/keys/${made.body.id}/scenario`);
  assert.deepEqual(cleared.body, { object: 'key_scenario', key_id: made.body.id, script: null });
  await list({}, made.body.key);
  assert.deepEqual(await steps(), [1], 'removed: its requests are in no run; the run stays readable');
  const audit = await admin('GET', '/audit?action=key.scenario_set');
  assert.deepEqual(audit.body.data[0].changes.scenario, [['', 'status=500'], ['status=503']]);
  assert.equal((await admin('GET', '/audit?action=key.scenario_cleared')).body.data[0].target.id, made.body.id);
});

test("D-127, D-65: another team's key, an empty script or a step too long is refused, and nothing changes", async () => {
  assert.equal((await admin('PUT', '/keys/key_other_secret/scenario', { script: ['status=503'] })).status, 404);
  assert.equal((await admin('DELETE', '/keys/key_other_secret/scenario')).status, 404);
  for (const body of [{ script: [] }, { script: ['x'.repeat(1001)] }, { script: ['ok'], extra: 1 }, {}]) {
    const r = await admin('PUT', '/keys/key_demo_secret/scenario', body);
    assert.equal(r.status, 400, JSON.stringify(body));
  }
  assert.equal((await list({})).status, 200);
  assert.equal((await run('key_demo_secret')).status, 404, 'the demo key has no script: its requests are in no run');
});

test('D-125: the request after an answer that carried Retry-After shows the gap since that answer', async () => {
  const limited = 'app_limited';
  const h = { 'parley-test-id': 'gap-1' };
  const statuses: number[] = [];
  // D-23: the plan allows five a minute; the sixth and seventh are 429 with Retry-After.
  for (let i = 0; i < 7; i++) statuses.push((await server.call('POST', `/apps/${limited}/conversations`, {}, { headers: h })).status);
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429]);
  const r = await server.call('GET', `/apps/${limited}/test-runs/gap-1`);
  const reqs = r.body.requests as Array<{ at_ms: number; status: number; retry_after_gap_ms: number | null }>;
  assert.deepEqual(
    reqs.map((q) => q.status),
    statuses,
  );
  assert.deepEqual(
    reqs.slice(0, 6).map((q) => q.retry_after_gap_ms),
    [null, null, null, null, null, null],
  );
  const gap = reqs[6]!.retry_after_gap_ms!;
  assert.ok(Number.isInteger(gap) && gap >= 0 && gap <= reqs[6]!.at_ms - reqs[5]!.at_ms, `gap ${gap}`);
  assert.equal((await run('gap-1')).status, 404, "another app's test run of the same id is its own");
});

test('D-125: a widget request carrying Parley-Test-Id is listed in the same test run as the REST API reads it', async () => {
  const v = await visitor(server, APP);
  const h = { 'parley-test-id': 'widget-1' };
  assert.equal((await widgetCall(server, 'POST', `/apps/${APP}/conversations`, { auth: v.token, body: {}, headers: h })).status, 200);
  // Refused by the widget's gate (no credential): listed with the gate's status.
  assert.equal((await widgetCall(server, 'GET', `/apps/${APP}/config`, { auth: null, headers: h })).status, 401);
  const r = await run('widget-1');
  assert.deepEqual(
    r.body.requests.map((q: { method: string; path: string; status: number }) => [q.method, q.path, q.status]),
    [
      ['POST', `/widget/v1/apps/${APP}/conversations`, 200],
      ['GET', `/widget/v1/apps/${APP}/config`, 401],
    ],
  );
});

test("D-126: scenarios.json is checked at start-up with the script's schema; a fault names the file and the script", async () => {
  assert.deepEqual((await loadScriptBook(FIXTURES_DIR))['retry-storm'], ['status=429;retry-after=1', 'status=503', '']);
  const dir = await tempDir('parley-scripts-');
  assert.deepEqual(await loadScriptBook(dir), {}, 'no file: no named scripts');
  const file = path.join(dir, 'scenarios.json');
  for (const [text, fault] of [
    ['{"empty": []}', /scenarios\.json: empty: /],
    ['{"bad name!": [""]}', /scenarios\.json: bad name!: /],
    ['{"x": [1]}', /scenarios\.json: x\.0: /],
    ['[', /scenarios\.json: is not valid JSON/],
  ] as const) {
    await fs.writeFile(file, text);
    await assert.rejects(loadScriptBook(dir), fault, text);
  }
  await assert.rejects(
    startTestServer({ fixturesDir: await withScripts('{"x": []}') }),
    /scenarios\.json: x: /,
    'the server does not start',
  );
});

/** A copy of the fixtures whose scenarios.json is `text`. */
async function withScripts(text: string): Promise<string> {
  const dir = await tempDir('parley-fixtures-');
  for (const name of await fs.readdir(FIXTURES_DIR)) await fs.symlink(path.join(FIXTURES_DIR, name), path.join(dir, name));
  await fs.rm(path.join(dir, 'scenarios.json'));
  await fs.writeFile(path.join(dir, 'scenarios.json'), text);
  return dir;
}
