// A script of a test id played end to end (docs/scenarios.md, D-125…D-128): run on the file store
// (test/scripts.test.ts, one server) and on PostgreSQL (test/proof/pg-scripts.test.ts, two Parley
// instances on one database, the requests of one test id alternating between them).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { APP, type TestServer } from './helpers.ts';
import { adminClient, bearer } from './admin-client.ts';
import { demoAdminToken } from './webhook-receiver.ts';
import { SHOP, widgetCall } from './widget.ts';

export interface ScriptsHarness {
  /** The servers a client reaches (one, or two instances of one database), and their close. */
  start(): Promise<{ servers: TestServer[]; close(): Promise<void> }>;
}

interface Listed {
  at_ms: number;
  step: number | null;
  status: number;
  retry_after_gap_ms: number | null;
}

export function scriptsSuite(name: string, h: ScriptsHarness): void {
  test(`${name}: D-126: a script of three steps answers 429, 503, then 200, and its test run lists the three requests with the gaps between them`, async () => {
    const { servers, close } = await h.start();
    try {
      const on = (i: number) => servers[i % servers.length]!;
      const headers = { 'parley-test-id': 'storm-1', 'parley-scenario': 'script=retry-storm' };
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await on(i).call('POST', `/apps/${APP}/conversations`, {}, { headers }));
      assert.deepEqual(
        answers.map((a) => a.status),
        [429, 503, 200],
      );
      assert.equal(answers[0]!.headers.get('retry-after'), '1');
      assert.equal(answers[1]!.headers.get('retry-after'), '1', 'a 503 as a database outage answers it');
      const run = await on(1).call('GET', `/apps/${APP}/test-runs/storm-1`);
      assert.equal(run.status, 200, JSON.stringify(run.body));
      const reqs = run.body.requests as Listed[];
      assert.deepEqual(
        reqs.map((r) => [r.step, r.status]),
        [
          [1, 429],
          [2, 503],
          [3, 200],
        ],
      );
      assert.equal(reqs[0]!.retry_after_gap_ms, null);
      // Each gap runs from the earlier answer (made after its request came) to this request's arrival.
      for (const i of [1, 2]) {
        const gap = reqs[i]!.retry_after_gap_ms;
        assert.ok(gap !== null && gap >= 0 && gap <= reqs[i]!.at_ms - reqs[i - 1]!.at_ms, `gap ${gap} of request ${i + 1}`);
      }
    } finally {
      await close();
    }
  });

  test(`${name}: D-127: a key's script reaches a client that sends no scenario header, on every instance`, async () => {
    const { servers, close } = await h.start();
    try {
      const origin = new URL(servers[0]!.baseUrl).origin;
      const admin = adminClient(origin);
      const auth = bearer(await demoAdminToken(origin));
      const made = await admin.call('POST', '/keys', { type: 'secret', name: 'client under test' }, auth);
      assert.equal((await admin.call('PUT', `/keys/${made.body.id}/scenario`, { script: ['status=503', ''] }, auth)).status, 200);
      const statuses = [];
      for (let i = 0; i < 3; i++)
        statuses.push((await servers[i % servers.length]!.call('POST', `/apps/${APP}/conversations`, {}, { key: made.body.key })).status);
      assert.deepEqual(statuses, [503, 200, 200]);
      const run = await servers.at(-1)!.call('GET', `/apps/${APP}/test-runs/${made.body.id}`);
      assert.deepEqual(
        run.body.requests.map((r: Listed) => [r.step, r.status]),
        [
          [1, 503],
          [2, 200],
          [2, 200],
        ],
      );
    } finally {
      await close();
    }
  });

  test(`${name}: D-127: on /widget/v1 a publishable key's script reaches the requests made with the key or its visitor token, before the gate, whose limits never count a scripted status (D-121)`, async () => {
    const { servers, close } = await h.start();
    try {
      const on = (i: number) => servers[i % servers.length]!;
      const origin = new URL(servers[0]!.baseUrl).origin;
      const admin = adminClient(origin);
      const auth = bearer(await demoAdminToken(origin));
      const made = await admin.call('POST', '/keys', { type: 'publishable', name: 'widget under test' }, auth);
      // app_limited's widget allows 4 requests a minute from a visitor, 8 from an address.
      const script = ['', ...Array(8).fill('status=503'), ''];
      assert.equal((await admin.call('PUT', `/keys/${made.body.id}/scenario`, { script }, auth)).status, 200);
      const path = '/apps/app_limited';
      const session = await widgetCall(on(0), 'POST', `${path}/visitors`, { auth: made.body.key, body: {}, origin: SHOP });
      assert.equal(session.status, 200, JSON.stringify(session.body));
      const statuses = [];
      for (let i = 1; i <= 9; i++)
        statuses.push((await widgetCall(on(i), 'POST', `${path}/conversations`, { auth: session.body.token, body: {} })).status);
      assert.deepEqual(statuses, [...Array(8).fill(503), 200], 'the scripted 503s left the limits as they were');
      // A request with a scenario of its own (here the query's), or a credential the gate refuses, is not the key's.
      const own = await widgetCall(on(0), 'GET', `${path}/config?scenario=status%3D429`, { auth: session.body.token });
      assert.equal(own.status, 429);
      assert.equal((await widgetCall(on(1), 'GET', `${path}/config`, { auth: 'not-a-token' })).status, 401);
      const run = await on(0).call('GET', `/apps/app_limited/test-runs/${made.body.id}`);
      assert.equal(run.status, 200, JSON.stringify(run.body));
      assert.deepEqual(
        run.body.requests.map((r: Listed & { path: string }) => [r.step, r.status, r.path.replace('/widget/v1/apps/app_limited/', '')]),
        [[1, 200, 'visitors'], ...Array.from({ length: 8 }, (_, i) => [i + 2, 503, 'conversations']), [10, 200, 'conversations']],
      );
    } finally {
      await close();
    }
  });
}
