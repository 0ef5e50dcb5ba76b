// The scenario grammar (src/core/scenario.ts, D-120) and its gate (D-122): every directive read into its
// field, nothing unknown or malformed ignored, and scenarios refused where they are off.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isScenarioError, parseScenario } from '../src/core/scenario.ts';
import { scenariosOn } from '../src/pipeline/scenario.ts';
import { publishedDocuments } from '../src/api/routes.ts';
import { banner } from '../src/main.ts';
import { APP, startTestServer, type TestServer } from './support/helpers.ts';
import { PK, visitor, widgetCall } from './support/widget.ts';

describe('D-120 the Parley-Scenario grammar', () => {
  it('reads each directive into its typed field', () => {
    assert.deepEqual(parseScenario('status=429; retry-after=3'), { status: { code: 429, retryAfterS: 3 } });
    assert.deepEqual(parseScenario('ttft=200;tps=20;chunk=3;jitter=5;seed=7'), {
      ttftMs: 200,
      pacing: { tps: 20, chunk: 3, jitterMs: 5, seed: 7 },
    });
    assert.deepEqual(parseScenario('drop-after=5;stall-after=2:300;duplicate=3;malformed-after=4'), {
      dropAfter: 5,
      stall: { after: 2, ms: 300 },
      duplicate: 3,
      malformedAfter: 4,
    });
    assert.deepEqual(parseScenario('reset-after=1'), { resetAfter: 1 });
    assert.deepEqual(parseScenario('fail-after=3'), { failAfter: 3 });
    assert.deepEqual(parseScenario('cursor-expired'), { cursorExpired: true });
    assert.deepEqual(parseScenario(' ; '), {});
  });

  it('refuses, naming the directive: an unknown one, a bad value, one given twice, a status with others', () => {
    const cases: Array<[string, string]> = [
      ['explode=1', 'explode'],
      ['drop-after=0', 'drop-after'],
      ['drop-after=x', 'drop-after'],
      ['ttft', 'ttft'],
      ['stall-after=3', 'stall-after'],
      ['status=418', 'status'],
      ['cursor-expired=1', 'cursor-expired'],
      ['tps=5;tps=6', 'tps'],
      ['retry-after=2', 'retry-after'],
      ['status=503;drop-after=2', 'status'],
      ['seed=99999999999', 'seed'],
    ];
    for (const [text, directive] of cases) {
      const s = parseScenario(text);
      assert.ok(isScenarioError(s), text);
      assert.equal(s.directive, directive, text);
      assert.match(s.message, new RegExp(`"?${directive}"?`), text);
    }
  });

  it('D-122 is on by default only on loopback without a public URL; the setting decides anywhere', () => {
    assert.equal(scenariosOn({ scenarios: null, host: '127.0.0.1', publicUrl: null }), true);
    assert.equal(scenariosOn({ scenarios: null, host: 'localhost', publicUrl: null }), true);
    assert.equal(scenariosOn({ scenarios: null, host: '0.0.0.0', publicUrl: null }), false);
    assert.equal(scenariosOn({ scenarios: null, host: '127.0.0.1', publicUrl: 'https://parley.example.com' }), false);
    assert.equal(scenariosOn({ scenarios: true, host: '0.0.0.0', publicUrl: null }), true);
    assert.equal(scenariosOn({ scenarios: false, host: '127.0.0.1', publicUrl: null }), false);
  });
});

describe('D-122 scenarios off', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ scenarios: false });
  });
  after(() => server.close());

  it('a request carrying Parley-Scenario or Parley-Test-Id is 400 scenarios_disabled, never served', async () => {
    const both: Array<Record<string, string>> = [{ 'parley-scenario': 'status=429' }, { 'parley-test-id': 't1' }];
    for (const headers of both) {
      const r = await server.call('GET', `/apps/${APP}/config`, undefined, { headers });
      assert.equal(r.status, 400);
      assert.equal(r.body.error.code, 'scenarios_disabled');
      assert.equal(r.body.error.param, 'parley-test-id' in headers ? 'Parley-Test-Id' : 'Parley-Scenario');
    }
    const plain = await server.call('GET', `/apps/${APP}/config`);
    assert.equal(plain.status, 200);
  });
});

describe('D-120 a scenario on a server that plays them', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('an unknown directive or a bad value is 400 invalid_value naming the directive', async () => {
    const r = await server.call('GET', `/apps/${APP}/config`, undefined, { headers: { 'parley-scenario': 'explode=1' } });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'invalid_value');
    assert.equal(r.body.error.param, 'Parley-Scenario');
    assert.match(r.body.error.message, /"explode"/);
  });

  it('D-123 a directive on a route it cannot shape is 400, never ignored', async () => {
    for (const s of ['drop-after=2', 'ttft=10', 'cursor-expired']) {
      const r = await server.call('GET', `/apps/${APP}/config`, undefined, { headers: { 'parley-scenario': s } });
      assert.equal(r.status, 400, s);
      assert.equal(r.body.error.code, 'invalid_value', s);
    }
  });

  it('D-120 the widget API takes the scenario as a query parameter, and its preflight allows both headers', async () => {
    const pre = await widgetCall(server, 'OPTIONS', `/apps/${APP}/config`, { headers: { 'access-control-request-method': 'GET' } });
    assert.equal(pre.status, 204);
    assert.match(pre.headers.get('access-control-allow-headers')!, /parley-scenario, parley-test-id/);
    const v = await visitor(server, APP);
    const scripted = await widgetCall(server, 'GET', `/apps/${APP}/config?scenario=${encodeURIComponent('status=503')}`, { auth: v.token });
    assert.equal(scripted.status, 503);
    assert.equal(scripted.body.error.code, 'store_unavailable');
    assert.ok(scripted.headers.get('access-control-allow-origin'));
    const bad = await widgetCall(server, 'GET', `/apps/${APP}/config?scenario=nope`, { auth: PK });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'scenario');
  });

  it('D-120 the OpenAPI document names both headers on every operation; the playground has a scenario field', async () => {
    const doc = publishedDocuments().data as any;
    for (const [template, item] of Object.entries<any>(doc.paths)) {
      if (template === '/openapi.json') continue;
      for (const m of ['get', 'post', 'patch', 'delete']) {
        if (!item[m]) continue;
        const refs = (item[m].parameters ?? []).map((p: any) => p.$ref);
        assert.ok(refs.includes('#/components/parameters/ParleyScenario'), `${m} ${template}`);
        assert.ok(refs.includes('#/components/parameters/ParleyTestId'), `${m} ${template}`);
      }
    }
    assert.equal(doc.components.parameters.ParleyScenario.name, 'Parley-Scenario');
    const page = await (await fetch(server.playgroundUrl!)).text();
    assert.match(page, /<input id="scenario"/);
  });

  it('D-122 the banner says whether scenarios are on', () => {
    const base = { baseUrl: 'http://127.0.0.1:1/v1', fixturesDir: '/nonexistent', playgroundUrl: null, dataDir: 'd', databaseUrl: null };
    assert.match(banner({ ...base, scenarios: true }), /scenarios: +on/);
    assert.match(banner({ ...base, scenarios: false }), /scenarios: +off/);
  });
});
