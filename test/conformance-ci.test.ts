// The conformance suite as a product for another team's CI: the preflight, the outcomes (errored
// grouped under its precondition), baselines, the evidence of a failure (and a script that replays it),
// hosted servers (Retry-After, --rate-limit), versions, the HTML report, and modules without a circle.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { applyBaseline, parseBaseline } from '../conformance/baseline.ts';
import { claimsOf } from '../conformance/capabilities.ts';
import { scoreOf } from '../conformance/score.ts';
import { exchangeCurl, reproduction, toCurl, toEvidence } from '../conformance/evidence.ts';
import { renderHtml } from '../conformance/html.ts';
import { junitElement } from '../conformance/reporters.ts';
import { HttpClient, type Exchange } from '../conformance/http.ts';
import { isCounted, Pacer, parseRate, retryAfterMs } from '../conformance/pace.ts';
import { CaseContext, type RunState } from '../conformance/context.ts';
import {
  CASES,
  cleanUp,
  exitCode,
  mergeResult,
  summaryLine,
  PreflightError,
  render,
  resolveProfile,
  runConformance,
  type CaseResult,
  type RunResults,
} from '../conformance/run.ts';
import { parseTarget, type Target } from '../conformance/target.ts';
import { OTHER_TEAM_KEY, startTestServer, tempDir, type TestServer, TARGET_JSON as targetJson } from './support/helpers.ts';
import { startMutantProxy, type MutantHooks } from './support/mutant-proxy.ts';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');

let s: TestServer;
let target: Target;
before(async () => {
  s = await startTestServer();
  target = parseTarget(targetJson, { baseUrl: s.baseUrl });
});
after(() => s.close());

/** A run of `only` through a proxy with `hooks` in front of a fresh server; the server's list of app_demo after it. */
async function throughProxy(
  hooks: MutantHooks,
  opts: Omit<Parameters<typeof runConformance>[0], 'target'>,
): Promise<{ run: RunResults; left: unknown[] }> {
  const fresh = await startTestServer();
  const proxy = await startMutantProxy(fresh.baseUrl, hooks);
  try {
    const run = await runConformance({ target: parseTarget(targetJson, { baseUrl: proxy.baseUrl }), handleSignals: false, ...opts });
    const left = (await fresh.call('GET', `/apps/${targetJson.app_id}/conversations?limit=100`)).body.data;
    return { run, left };
  } finally {
    await proxy.close();
    await fresh.close();
  }
}

describe('the target file', () => {
  test('an unknown key is a usage error that names the key it may be a typo of', () => {
    assert.throws(
      () => parseTarget({ ...targetJson, apps: { ...targetJson.apps, generativ_ui: 'app_genui' } }, {}, 't.json'),
      /^UsageError: t\.json: unknown key apps\.generativ_ui \(did you mean apps\.generative_ui\?\) in a version 4 target/,
    );
    assert.throws(() => parseTarget({ ...targetJson, api_kye: 'x' }), /unknown key api_kye \(did you mean api_key\?\)/);
  });

  test('a target of a newer format version: its unknown keys are named and ignored', async () => {
    const t = parseTarget(
      { ...targetJson, version: 6, apps: { ...targetJson.apps, voice: 'app_voice' }, region: 'eu' },
      { baseUrl: s.baseUrl },
    );
    assert.deepEqual(t.ignoredKeys, ['region', 'apps.voice']);
    const warnings: string[] = [];
    const r = await runConformance({ target: t, only: 'S4.8-config-shape', onWarning: (w) => warnings.push(w) });
    assert.equal(r.summary.passed, 1);
    assert.match(r.warnings[0]!, /newer format .*version 5\); ignored: region, apps\.voice$/);
    assert.deepEqual(warnings, r.warnings);
  });

  test('versions: 1 to 3 read as before; a key of a later version than the target says is a usage error, nested keys too', () => {
    const { widget: _w, version: _v, admin: _a, capabilities: _k, ...v1 } = targetJson;
    const { inactive_conversation: _c, slow: _s, small_storage: _q, ...v1Apps } = targetJson.apps;
    const one = parseTarget({ ...v1, apps: v1Apps });
    assert.deepEqual(
      [one.appId, one.widget, one.admin, one.apps.inactive_conversation],
      [targetJson.app_id, undefined, undefined, undefined],
    );
    const widget = { ...targetJson.widget, short_token_app: undefined };
    assert.equal(parseTarget({ ...v1, apps: v1Apps, version: 2, widget }).widget?.origin, targetJson.widget.origin);
    const admin = { email: 'ops@example.com', password: 'secret' };
    assert.equal(parseTarget({ ...v1, apps: v1Apps, version: 3, widget, admin }).admin?.email, 'ops@example.com');
    const refused = (json: unknown, re: RegExp) => assert.throws(() => parseTarget(json, {}, 't.json'), re);
    refused(
      { ...v1, apps: v1Apps, version: 2, admin },
      /^UsageError: t\.json: admin is a key of format version 3, and the target says version 2: add "version": 3/,
    );
    refused(
      { ...v1, apps: { ...v1Apps, inactive_conversation: 'conv_1' }, version: 3 },
      /^UsageError: t\.json: apps\.inactive_conversation is a key of format version 4, and the target says version 3: add "version": 4/,
    );
    refused({ ...v1, apps: v1Apps, version: 3, widget: targetJson.widget }, /widget\.short_token_app is a key of format version 4/);
    const four = parseTarget(targetJson);
    assert.deepEqual(
      [four.apps.inactive_conversation, four.apps.slow, four.apps.small_storage, four.widget?.shortTokenApp],
      [targetJson.apps.inactive_conversation, 'app_slow', 'app_small', 'app_brief'],
    );
  });

  test("admin (version 3): the control plane at base_url's origin and /admin/v1 unless base_url says otherwise; what is wrong is a usage error", () => {
    const at = (admin: unknown, overrides = {}) => parseTarget({ ...targetJson, admin }, overrides, 't.json').admin;
    assert.deepEqual(at({ email: 'ops@example.com', password: 'pw' }), {
      baseUrl: 'http://127.0.0.1:8787/admin/v1',
      email: 'ops@example.com',
      password: 'pw',
    });
    assert.equal(
      at({ email: 'ops@example.com', password: 'pw' }, { baseUrl: 'http://127.0.0.1:9000/v1' })?.baseUrl,
      'http://127.0.0.1:9000/admin/v1',
    );
    assert.equal(at({ base_url: '/control/v1/', email: 'a@b', password: 'pw' })?.baseUrl, 'http://127.0.0.1:8787/control/v1');
    assert.equal(at({ base_url: 'https://admin.example/v1', email: 'a@b', password: 'pw' })?.baseUrl, 'https://admin.example/v1');
    // Without admin, a target cannot declare webhooks (test/conformance-capabilities.test.ts).
    assert.equal(parseTarget({ ...targetJson, capabilities: ['widget'], admin: null }, {}, 't.json').admin, undefined);
    const refused = (admin: unknown, re: RegExp) => assert.throws(() => at(admin), re);
    refused({ email: 'ops@example.com' }, /^UsageError: t\.json: admin\.password: /);
    refused({ password: 'pw' }, /^UsageError: t\.json: admin\.email: /);
    refused({ email: 'ops', password: 'pw' }, /admin\.email is not an email address: ops$/);
    refused(
      { email: 'a@b', password: 'pw', base_url: '/v1' },
      /admin\.base_url is base_url itself: the control plane has its own path space/,
    );
    refused({ email: 'a@b', password: 'pw', base_url: 'ftp://x/admin' }, /admin\.base_url must be http\(s\)/);
    refused({ email: 'a@b', password: 'pw', passwrd: 'x' }, /unknown key admin\.passwrd \(did you mean admin\.password\?\)/);
  });

  test('a missing api_key says how to give one; PARLEY_API_KEY fills it in, never replaces it', () => {
    const { api_key: _, ...noKey } = targetJson;
    assert.throws(() => parseTarget(noKey), /api_key is missing: pass --api-key KEY or set PARLEY_API_KEY/);
    assert.equal(parseTarget(noKey, { fallbackApiKey: 'sk_live_env' }).apiKey, 'sk_live_env');
    assert.equal(parseTarget(targetJson, { fallbackApiKey: 'sk_live_env' }).apiKey, targetJson.api_key);
    assert.equal(parseTarget(targetJson, { apiKey: 'sk_live_flag', fallbackApiKey: 'sk_live_env' }).apiKey, 'sk_live_flag');
  });

  test('base_url must end in /v1; other_team_api_key is read', () => {
    assert.throws(
      () => parseTarget({ ...targetJson, base_url: 'http://127.0.0.1:1/v2' }),
      /base_url http:\/\/127\.0\.0\.1:1\/v2 does not end in \/v1 \(§9\)/,
    );
    assert.equal(parseTarget({ ...targetJson, other_team_api_key: OTHER_TEAM_KEY }).otherTeamApiKey, OTHER_TEAM_KEY);
  });
});

describe('preflight: one clear line before any case', () => {
  const refused = (json: unknown) =>
    runConformance({ target: parseTarget(json, { baseUrl: s.baseUrl }), only: 'S4.8-*', handleSignals: false });

  test('a wrong key, an unknown main app, an app of the target that cannot be used: PreflightError, no case run', async () => {
    await assert.rejects(
      refused({ ...targetJson, api_key: 'sk_live_wrong' }),
      (e: Error) =>
        e instanceof PreflightError &&
        /^the key was refused: GET .*\/apps\/app_demo\/config answered 401 invalid_api_key; check api_key \(or --api-key, PARLEY_API_KEY\)$/.test(
          e.message,
        ),
    );
    await assert.rejects(
      refused({ ...targetJson, app_id: 'app_typo' }),
      /the main app does not answer: .* answered 404 not_found; check app_id/,
    );
    await assert.rejects(
      refused({ ...targetJson, app_id: targetJson.apps.inactive }),
      /app_id app_inactive must be an active app with an agent: .* answered 403 app_inactive/,
    );
    await assert.rejects(
      refused({ ...targetJson, apps: { ...targetJson.apps, generative_ui: 'app_typo' } }),
      /apps\.generative_ui \(app_typo\) cannot be used: its config answered 404 not_found/,
    );
    await assert.rejects(refused({ ...targetJson, other_team_api_key: 'sk_live_wrong' }), /other_team_api_key was refused/);
    await assert.rejects(
      refused({ ...targetJson, other_team_api_key: targetJson.api_key }),
      /other_team_api_key must be a key of the team that owns apps\.other_team: .* answered 403 access_denied/,
    );
    // The right one passes.
    assert.equal((await refused({ ...targetJson, other_team_api_key: OTHER_TEAM_KEY })).summary.passed, 3);
  });

  test('what the interface allows but looks wrong is a warning, and the run goes on', async () => {
    const r = await runConformance({
      // Without other_team_api_key: with it, a wrong apps.other_team is a refusal (the key's own app must answer).
      target: parseTarget(
        {
          ...targetJson,
          other_team_api_key: undefined,
          apps: { ...targetJson.apps, other_team: 'app_typo', stream_default: targetJson.app_id },
        },
        { baseUrl: s.baseUrl },
      ),
      only: 'S4.8-config-shape',
    });
    assert.equal(r.summary.passed, 1);
    assert.equal(r.warnings.length, 2, r.warnings.join('\n'));
    assert.match(r.warnings[0]!, /^apps\.stream_default \(app_demo\): its config says stream false/);
    assert.match(r.warnings[1]!, /^apps\.other_team \(app_typo\) answered 404 to api_key: the interface allows it/);
  });
});

describe('outcomes', () => {
  test('a failed precondition: the case that ran it fails with its evidence; the cases it blocked are errored, grouped under it', async () => {
    const hooks: MutantHooks = {
      request: (req) =>
        req.method === 'POST' && req.path.endsWith('/conversations')
          ? {
              status: 500,
              headers: { 'content-type': 'application/json' },
              body: '',
              json: { error: { message: 'boom', type: 'internal_error' } },
            }
          : undefined,
    };
    const { run } = await throughProxy(hooks, { only: 'S4.3-*', profile: 'reference' });
    assert.deepEqual(
      run.results.map((r) => [r.id, r.status]),
      [
        ['S4.3-get-shape', 'failed'],
        ['S4.3-get-new-has-no-items', 'errored'],
        ['S4.3-get-unknown-404', 'errored'],
      ],
    );
    assert.match(
      run.results[0]!.failure!.message,
      /^precondition "baseline: create conversation" did not pass: create conversation: expected HTTP 200, got 500/,
    );
    assert.equal(run.results[1]!.blockedBy, 'baseline: create conversation');
    assert.deepEqual(run.preconditions, [
      {
        name: 'baseline: create conversation',
        shownBy: 'S4.3-get-shape',
        message: run.results[0]!.failure!.message,
        blocked: ['S4.3-get-new-has-no-items', 'S4.3-get-unknown-404'],
      },
    ]);
    assert.deepEqual(run.summary, { passed: 0, failed: 1, flaky: 0, skipped: 0, errored: 2 });
    const pretty = render(run, 'pretty');
    assert.equal(
      pretty.split('did not pass: create conversation').length - 1,
      2,
      'shown once in the failure, once in the precondition block',
    );
    assert.match(pretty, /blocked 2: S4\.3-get-new-has-no-items, S4\.3-get-unknown-404/);
    assert.match(
      render(run, 'junit'),
      /<error message="blocked: precondition &quot;baseline: create conversation&quot; failed \(shown by S4\.3-get-shape\)" type="precondition"\/>/,
    );
    assert.equal(exitCode(run), 1);
  });
});

describe('flaky cases', () => {
  test('--retry-failed: a case that failed runs again with preconditions of its own; one that then passes is flaky, counted apart', async () => {
    // The first creation fails: the case that ran the shared precondition fails, the others are blocked by it.
    let creations = 0;
    const hooks = (): MutantHooks => ({
      request: (req) =>
        req.method === 'POST' && req.path.endsWith('/conversations') && ++creations === 1
          ? {
              status: 500,
              headers: { 'content-type': 'application/json' },
              body: '',
              json: { error: { message: 'boom', type: 'internal_error' } },
            }
          : undefined,
    });
    const once = await throughProxy(hooks(), { only: 'S4.3-*', profile: 'reference' });
    assert.deepEqual(once.run.summary, { passed: 0, failed: 1, flaky: 0, skipped: 0, errored: 2 });
    creations = 0;
    const { run } = await throughProxy(hooks(), { only: 'S4.3-*', profile: 'reference', retryFailed: 1 });
    assert.deepEqual(
      run.results.map((r) => [r.id, r.status, r.tries, r.failedTries]),
      [
        ['S4.3-get-shape', 'flaky', 2, 1],
        ['S4.3-get-new-has-no-items', 'flaky', 2, 1],
        ['S4.3-get-unknown-404', 'flaky', 2, 1],
      ],
    );
    assert.deepEqual(run.summary, { passed: 0, failed: 0, flaky: 3, skipped: 0, errored: 0 });
    // The first try's failure is the evidence; the precondition no longer counts them as blocked.
    assert.match(run.results[0]!.failure!.message, /^precondition "baseline: create conversation" did not pass: .*got 500/);
    assert.match(run.results[0]!.reason!, /^failed 1 of 2 tries: precondition/);
    assert.deepEqual(run.preconditions[0]?.blocked, []);
    assert.equal(exitCode(run), 1, 'a flaky case the baseline does not list fails the run');
    assert.match(render(run, 'pretty'), /\n {2}~ S4\.3-get-shape .*\(flaky: failed 1 of 2 tries: /);
    assert.match(render(run, 'pretty'), /\nFlaky \(3\): passed on a retry or in some runs only\n/);
  });

  test('a rate-limit case is never run again: its retry would meet the limit it used up', async () => {
    const limited = CASES.filter((c) => c.needs?.includes('apps.rate_limited'));
    assert.ok(limited.length > 0);
    for (const c of limited) assert.match(c.noRetry ?? '', /limit/, c.id);
    const hooks: MutantHooks = {
      response: (res) => {
        if (res.status === 429) Object.assign(res, { status: 403, json: { error: { message: 'no', type: 'access_denied' } }, body: '' });
      },
    };
    const { run } = await throughProxy(hooks, { only: 'S8-rate-limit-429', retryFailed: 2 });
    assert.deepEqual([run.results[0]!.status, run.results[0]!.tries], ['failed', undefined]);
  });

  test('--repeat: passed in some runs and failed in others is flaky; a skip in any run keeps a case from passing', () => {
    const r = (status: CaseResult['status']): CaseResult => ({
      id: 'S9-x',
      section: '9',
      level: 'MUST',
      description: 'x',
      status,
      ms: 1,
      ...(status === 'failed' ? { failure: { message: 'broke' } } : status === 'skipped' ? { reason: 'why' } : {}),
    });
    const merge = (...runs: Array<CaseResult['status']>) =>
      runs.map(r).reduce<CaseResult | undefined>((prev, next) => mergeResult(prev, next), undefined)!;
    assert.deepEqual([merge('passed', 'passed').status, merge('passed', 'passed').runs], ['passed', 2]);
    const mixed = merge('passed', 'failed', 'passed');
    assert.deepEqual([mixed.status, mixed.reason, mixed.failure?.message], ['flaky', 'passed 2 of 3 runs', 'broke']);
    assert.equal(merge('failed', 'passed').status, 'flaky');
    assert.equal(merge('errored', 'passed').status, 'flaky');
    assert.equal(merge('flaky', 'passed').status, 'flaky');
    assert.deepEqual([merge('failed', 'failed').status, merge('failed', 'failed').failedRuns], ['failed', 2]);
    assert.deepEqual([merge('passed', 'skipped').status, merge('passed', 'skipped').reason], ['skipped', 'why']);
    assert.equal(merge('skipped', 'passed', 'passed').status, 'skipped');
    assert.equal(merge('passed', 'skipped', 'failed').status, 'flaky');
    assert.equal(merge('skipped', 'failed').status, 'failed');
  });
});

describe('reports of every outcome', () => {
  const base = { section: '4.8', level: 'MUST' as const, description: 'd', ms: 1 };
  const failure = { message: 'it <broke>', curl: "curl 'x'", response: 'HTTP 500' };
  const results: CaseResult[] = [
    { ...base, id: 'S4.8-a', status: 'passed' },
    { ...base, id: 'S4.8-b', status: 'failed', failure },
    { ...base, id: 'S4.8-c', status: 'failed', failure, expectedFailure: 'known (TICKET-1)' },
    { ...base, id: 'S4.8-d', status: 'errored', reason: 'blocked: precondition "p" failed (shown by S4.8-b)', blockedBy: 'p' },
    { ...base, id: 'S4.8-e', status: 'flaky', failure, reason: 'failed 1 of 2 tries: it <broke>', tries: 2, failedTries: 1 },
    { ...base, id: 'S4.8-f', status: 'skipped', reason: 'needs target key apps.x' },
    { ...base, id: 'S4.8-g', status: 'passed', expectedFailure: 'was broken', stale: 'listed as failing, but it passed: delete its line' },
    { ...base, id: 'S4.8-h', status: 'flaky', failure, reason: 'passed 1 of 2 runs', expectedFlaky: 'slow model' },
  ];
  const claims = claimsOf(undefined, { widget: false, admin: false });
  const run = {
    suite: { name: 'parley-conformance', version: '0' },
    interfaceVersion: '1.0.0',
    runId: 'r',
    profile: 'spec-1.0.0',
    baseUrl: 'http://x/v1',
    appId: 'a',
    startedAt: '',
    ms: 8,
    results,
    summary: { passed: 2, failed: 2, flaky: 2, skipped: 1, errored: 1 },
    preconditions: [],
    warnings: [],
    baseline: { file: 'b.txt', expected: 1, flaky: 1, stale: ['S4.8-g'], unknown: [] },
    requests: { sent: 0, retried429: 0 },
    cleanup: { deleted: 0, failed: [] },
    capabilities: claims,
    score: scoreOf(results, claims),
  } as RunResults;

  test('junit: each outcome its element, as docs/conformance.md writes the mapping once', () => {
    const xml = render(run, 'junit');
    const of = (id: string) =>
      new RegExp(`name="${id}: d" time="0\\.001"(/>|>\\n {6}([^]*?)\\n {4}</testcase>)`).exec(xml)?.[2] ?? '(none)';
    assert.equal(of('S4.8-a'), '(none)');
    assert.match(of('S4.8-b'), /^<failure message="it &lt;broke&gt;" type="MUST">it &lt;broke&gt;\n\nsent:\ncurl 'x'/);
    assert.equal(of('S4.8-c'), '<skipped message="expected failure: known (TICKET-1)"/>');
    assert.equal(of('S4.8-d'), '<error message="blocked: precondition &quot;p&quot; failed (shown by S4.8-b)" type="precondition"/>');
    assert.match(
      of('S4.8-e'),
      /^<flakyFailure message="flaky: failed 1 of 2 tries: it &lt;broke&gt;" type="MUST"><stackTrace>it &lt;broke&gt;/,
    );
    assert.equal(of('S4.8-f'), '<skipped message="needs target key apps.x"/>');
    assert.equal(
      of('S4.8-g'),
      '<failure message="stale baseline entry: listed as failing, but it passed: delete its line" type="stale-baseline"></failure>',
    );
    assert.match(of('S4.8-h'), /^<flakyFailure message="flaky: passed 1 of 2 runs \(listed flaky: slow model\)"/);
    // Counts follow the elements: a stale entry is a failure, an expected failure a skip, flaky neither.
    assert.match(xml, /<testsuites name="conformance" tests="8" failures="2" errors="1" skipped="2" /);
  });

  test('a case listed flaky that failed its only try: excused as an expected failure is, in junit and tap (D-105)', () => {
    const listed: CaseResult = { ...base, id: 'S4.8-i', status: 'failed', failure, expectedFlaky: 'slow model' };
    assert.deepEqual(junitElement(listed), { kind: 'skipped', xml: '<skipped message="listed flaky, failed this run: slow model"/>' });
    const tap = render({ ...run, results: [listed] }, 'tap');
    assert.match(tap, /\nnot ok 1 - S4\.8-i - d # TODO listed flaky, failed this run: slow model\n/);
    // Not listed, the same failure is a <failure>.
    assert.equal(junitElement({ ...listed, expectedFlaky: undefined }).kind, 'failure');
  });

  test('tap: an expected failure is a TODO, a flaky case ok with why, a stale entry not ok', () => {
    const tap = render(run, 'tap');
    assert.match(tap, /\nnot ok 3 - S4\.8-c - d # TODO expected failure: known \(TICKET-1\)\n/);
    assert.match(tap, /\nok 5 - S4\.8-e - d\n {2}---\n {4}flaky: \|-\n {6}failed 1 of 2 tries/);
    assert.match(tap, /\nnot ok 7 - S4\.8-g - d\n {2}---\n {4}message: \|-\n {6}listed as failing, but it passed/);
  });

  test('html: failures first, linked from the summary, then the flaky ones, the cases and the clause matrix', () => {
    const html = renderHtml(run);
    const at = (re: RegExp) => html.search(re);
    assert.ok(at(/<h2 id="failures">Failures \(2\)<\/h2>/) > at(/<h2>Summary<\/h2>/));
    assert.ok(at(/<h2 id="flaky">Flaky \(2\)/) > at(/<h2 id="failures">/));
    assert.ok(at(/<h2 id="cases">/) > at(/<h2 id="flaky">/));
    assert.ok(at(/<h2 id="clause-matrix">/) > at(/<h2 id="cases">/));
    assert.match(html, /<a href="#failures"><span class="b failed">failed<\/span> 2<\/a>/);
    assert.match(html, /<a href="#flaky"><span class="b flaky">flaky<\/span> 2<\/a>/);
    assert.match(html, /<b>stale<\/b> \(they fail the run\): <a href="#case-S4\.8-g">/);
  });

  test('pretty and the summary line count flaky cases apart', () => {
    assert.equal(
      summaryLine(run.summary, run.baseline),
      'conformance: 2 passed, 2 failed, 2 flaky, 1 skipped, 1 errored (baseline: 1 expected failure, 1 listed flaky, 1 stale)',
    );
    const text = render(run, 'pretty');
    assert.match(text, /\n {4}S4\.8-g: listed as failing, but it passed: delete its line/);
    assert.match(text, /\n~ S4\.8-h \[MUST, §4\.8 Get app config\]\n {4}flaky: passed 1 of 2 runs; the failure it had:\n {4}it <broke>/);
  });
});

describe('baseline', () => {
  const result = (id: string, status: CaseResult['status']): CaseResult => ({
    id,
    section: '4.8',
    level: 'MUST',
    description: id,
    status,
    ms: 0,
    ...(status === 'failed' || status === 'flaky' ? { failure: { message: `${id} broke\nsecond line` } } : {}),
  });

  test('the file: one case a line with its reason, [flaky] for a flaky one; comments; a line without a reason or an unknown id is a usage error', () => {
    const b = parseBaseline(
      '# ours\n\nS4.8-config-shape   colors come in v2 (#123)\nS4.8-config-generative-ui [flaky] flag flips under load\nS4.8-config-stream-default flaky wording stays a reason\n',
      'b.txt',
    );
    assert.deepEqual(
      [...b],
      [
        ['S4.8-config-shape', { state: 'fails', reason: 'colors come in v2 (#123)' }],
        ['S4.8-config-generative-ui', { state: 'flaky', reason: 'flag flips under load' }],
        ['S4.8-config-stream-default', { state: 'fails', reason: 'flaky wording stays a reason' }],
      ],
    );
    assert.throws(() => parseBaseline('S4.8-config-shape\n', 'b.txt'), /^UsageError: b\.txt:1: "S4\.8-config-shape" has no reason/);
    assert.throws(() => parseBaseline('S4.8-config-shape [flaky]\n', 'b.txt'), /b\.txt:1: "S4\.8-config-shape \[flaky\]" has no reason/);
    assert.throws(() => parseBaseline('\nS4.8-config-shap typo\n', 'b.txt'), /b\.txt:2: S4\.8-config-shap is no case of this suite/);
  });

  test('a listed case that fails does not fail the run; one that passes does (stale)', () => {
    const baseline = parseBaseline('S4.8-config-shape known\nS4.8-config-stream-default fixed since\n', 'b.txt');
    const results = [result('S4.8-config-shape', 'failed'), result('S4.8-config-generative-ui', 'passed')];
    const run = { results, summary: { passed: 1, failed: 1, flaky: 0, skipped: 0, errored: 0 } } as unknown as RunResults;
    run.baseline = applyBaseline(results, baseline, 'b.txt');
    assert.deepEqual(run.baseline, { file: 'b.txt', expected: 1, flaky: 0, stale: [], unknown: ['S4.8-config-stream-default'] });
    assert.equal(exitCode(run), 0);
    results.push(result('S4.8-config-stream-default', 'passed'));
    run.baseline = applyBaseline(results, baseline, 'b.txt');
    assert.deepEqual(run.baseline.stale, ['S4.8-config-stream-default']);
    assert.equal(exitCode(run), 1);
  });

  test('every state of an entry against every outcome: what holds, what is stale, what fails the run', () => {
    const outcomes: CaseResult['status'][] = ['passed', 'failed', 'flaky', 'errored', 'skipped'];
    const verdicts = (line: string, tries: Partial<CaseResult> = {}) =>
      outcomes.map((status) => {
        const results = [{ ...result('S4.8-config-shape', status), ...tries }];
        const run = { results, summary: {} } as unknown as RunResults;
        run.baseline = line ? applyBaseline(results, parseBaseline(line, 'b.txt'), 'b.txt') : undefined;
        return `${status}: ${results[0]!.stale ? 'stale' : 'holds'}, exit ${exitCode(run)}`;
      });
    // Not listed: a failure, an error and a flaky case fail the run.
    assert.deepEqual(verdicts(''), [
      'passed: holds, exit 0',
      'failed: holds, exit 1',
      'flaky: holds, exit 1',
      'errored: holds, exit 1',
      'skipped: holds, exit 0',
    ]);
    // Listed as failing: it may fail or error; passing, even on a retry only, makes the entry stale.
    assert.deepEqual(verdicts('S4.8-config-shape known'), [
      'passed: stale, exit 1',
      'failed: holds, exit 0',
      'flaky: stale, exit 1',
      'errored: holds, exit 0',
      'skipped: holds, exit 0',
    ]);
    // Listed flaky: passing and flaking are both fine, and so is failing the only try it had; failing
    // every one of several tries (--retry-failed, --repeat) makes the entry stale (D-105).
    assert.deepEqual(verdicts('S4.8-config-shape [flaky] sometimes'), [
      'passed: holds, exit 0',
      'failed: holds, exit 0',
      'flaky: holds, exit 0',
      'errored: holds, exit 0',
      'skipped: holds, exit 0',
    ]);
    assert.deepEqual(verdicts('S4.8-config-shape [flaky] sometimes', { tries: 2, failedTries: 2 }), [
      'passed: holds, exit 0',
      'failed: stale, exit 1',
      'flaky: holds, exit 0',
      'errored: stale, exit 1',
      'skipped: holds, exit 0',
    ]);
    assert.deepEqual(verdicts('S4.8-config-shape [flaky] sometimes', { runs: 3, failedRuns: 3 }).slice(1, 2), ['failed: stale, exit 1']);
  });
});

describe('evidence', () => {
  const req = (body: unknown, key = 'x'): Exchange['request'] => ({
    method: 'POST',
    url: 'http://h/v1/apps/a/conversations/c/messages',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

  test('the key is replaced only in the Authorization header: a short key such as x never garbles a body', () => {
    const curl = toCurl(req({ message: { content: 'x marks the spot' }, stream: true }), [['x', 'API_KEY']], { stream: true });
    assert.equal(
      curl,
      `curl -sS -N -X POST 'http://h/v1/apps/a/conversations/c/messages' -H "authorization: Bearer $API_KEY" -H 'content-type: application/json' --data-binary '{"message":{"content":"x marks the spot"},"stream":true}'`,
    );
    // A header that is not the key stays as it is, even when it contains it.
    assert.match(
      toCurl({ ...req({}), headers: { authorization: 'Bearer other', 'x-note': 'x' } }, [['x', 'API_KEY']]),
      /-H 'authorization: Bearer other' -H 'x-note: x'/,
    );
  });

  test('the JSON evidence: status, headers, a JSON body parsed, a stream as its list of events; curl -N for a stream', () => {
    const ex = {
      request: req({ message: { content: 'hi' }, stream: true }, 'sk_live_k'),
      status: 200,
      headers: new Headers({ 'content-type': 'text/event-stream' }),
      text: '…',
      json: undefined,
      sse: {
        events: [
          { event: 'response.created', data: '{"id":"r1"}', json: { id: 'r1' } },
          { event: 'ping', data: 'not json', json: undefined },
        ],
        comments: [],
        parseErrors: [],
        ended: false,
        timedOut: 'idle',
      },
      ms: 5,
    } as Exchange;
    const e = toEvidence(ex, [['sk_live_k', 'API_KEY']]);
    assert.deepEqual(e.request, {
      method: 'POST',
      url: ex.request.url,
      headers: { authorization: 'Bearer $API_KEY', 'content-type': 'application/json' },
      body: { message: { content: 'hi' }, stream: true },
    });
    assert.deepEqual(e.response, {
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      events: [
        { event: 'response.created', data: { id: 'r1' } },
        { event: 'ping', data: 'not json' },
      ],
      ended: false,
      timedOut: 'idle',
      ms: 5,
    });
    assert.match(e.curl, /^curl -sS -N -X POST/);
    assert.match(exchangeCurl({ ...ex, sse: undefined, request: req({ stream: false }) }, []), /^curl -sS -X POST/);
  });

  test('a multi-step failure: every exchange in the report, and a script that replays them with the ids it creates', async () => {
    // The new title is never read back: S4.4-update-title fails on its third request.
    const hooks: MutantHooks = {
      response: (res, r) => void (r.method === 'GET' && res.json?.title === 'Renamed by conformance' && (res.json.title = 'Old')),
    };
    const fresh = await startTestServer();
    const proxy = await startMutantProxy(fresh.baseUrl, hooks);
    try {
      const run = await runConformance({
        target: parseTarget({ ...targetJson, api_key: targetJson.api_key }, { baseUrl: proxy.baseUrl }),
        only: 'S4.4-update-title',
        handleSignals: false,
      });
      const f = run.results[0]!.failure!;
      assert.equal(run.results[0]!.status, 'failed');
      assert.deepEqual(
        f.exchanges!.map((e) => `${e.request.method} ${e.response.status}`),
        ['POST 200', 'PATCH 200', 'GET 200'],
      );
      assert.equal((f.exchanges![2]!.response.body as { title: string }).title, 'Old');
      const json = JSON.parse(render(run, 'json'));
      assert.equal(json.results[0].failure.exchanges.length, 3);
      assert.ok(!render(run, 'json').includes(targetJson.api_key), 'the key is in the JSON report');
      // The run deleted its conversation: the script creates its own and uses that id.
      const script = path.join(await tempDir(), 'repro.sh');
      await fs.writeFile(script, f.reproduction!);
      const { stdout } = await exec('sh', [script], { env: { ...process.env, API_KEY: targetJson.api_key } });
      const bodies = stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.equal(bodies.length, 3, stdout);
      assert.equal(bodies[1].id, bodies[0].id);
      assert.deepEqual([bodies[1].title, bodies[2].title, bodies[2].id], ['Renamed by conformance', 'Old', bodies[0].id]);
    } finally {
      await proxy.close();
      await fresh.close();
    }
  });

  test('a reproduction quotes for the shell: $ and quotes in a body stay literal', () => {
    const ex = (body: string, json: unknown): Exchange => ({
      request: { method: 'POST', url: 'http://h/v1/apps/a/conversations', headers: { authorization: 'Bearer k' }, body },
      status: 200,
      headers: new Headers(),
      text: '',
      json,
      ms: 1,
    });
    const script = reproduction(
      [ex('{"title":"$HOME \\"q\\" `x`"}', { id: 'conv_123456' }), ex('{"after":"conv_123456"}', {})],
      [['k', 'API_KEY']],
      'http://h/v1',
      't',
    );
    assert.match(script, /--data-binary "\{\\"title\\":\\"\\\$HOME \\\\\\"q\\\\\\" \\`x\\`\\"\}"/);
    assert.match(script, /ID_1_1=\$\(printf '%s' "\$R1" \| json_get 'id'\)/);
    assert.match(script, /--data-binary "\{\\"after\\":\\"\$\{ID_1_1\}\\"\}"/);
  });
});

describe('hosted servers', () => {
  test('--rate-limit spaces every request; counted requests stay under 3,000 a minute by default', async () => {
    let now = 0;
    const waits: number[] = [];
    const clock = {
      now: () => now,
      sleep: async (ms: number) => {
        waits.push(ms);
        now += Math.max(0, ms);
      },
    };
    const paced = new Pacer({ perSecond: 5, ...clock });
    for (let i = 0; i < 3; i++) await paced.before('GET', '/apps/a/config');
    assert.deepEqual(waits, [0, 200, 200]);
    waits.length = 0;
    now = 0;
    const counted = new Pacer({ countedPerMinute: 2, ...clock });
    await counted.before('POST', '/apps/a/completions');
    await counted.before('GET', '/apps/a/config');
    await counted.before('POST', '/apps/a/conversations/c');
    await counted.before('POST', '/apps/a/completions');
    assert.deepEqual(waits, [0, 0, 0, 60_000], 'the third counted request waits for the first to leave the minute');
    assert.ok(
      isCounted('POST', '/apps/a/conversations/c?x=1') &&
        isCounted('POST', '/apps/a/completions') &&
        isCounted('POST', '/apps/a/conversations'),
    );
    assert.ok(
      !isCounted('GET', '/apps/a/completions') &&
        !isCounted('PATCH', '/apps/a/conversations/c') &&
        !isCounted('POST', '/apps/a/conversations/c/messages'),
    );
    assert.deepEqual([parseRate('5/s'), parseRate('120/min'), parseRate('2')], [5, 2, 2]);
    assert.match(String(parseRate('fast')), /--rate-limit must be a positive rate/);
    assert.deepEqual(
      [retryAfterMs('2'), retryAfterMs(new Date(10_000).toUTCString(), 4_000), retryAfterMs(null), retryAfterMs('soon')],
      [2000, 6000, undefined, undefined],
    );
  });

  test('a 429 is sent again after its Retry-After (never on the rate-limited app), cleanup included: the run passes and deletes everything', async () => {
    const refusedOnce = new Set<string>();
    const hooks: MutantHooks = {
      request(req) {
        const key = `${req.method} ${req.path}`;
        if (req.method === 'GET' || refusedOnce.has(key)) return;
        refusedOnce.add(key);
        return {
          status: 429,
          headers: { 'content-type': 'application/json', 'retry-after': '0' },
          body: '',
          json: { error: { message: 'slow down', type: 'rate_limit_exceeded', param: null, code: null } },
        };
      },
    };
    const { run, left } = await throughProxy(hooks, { only: 'S4.1-*,S4.4-update-title' });
    assert.deepEqual(
      run.summary,
      { passed: 6, failed: 0, flaky: 0, skipped: 0, errored: 0 },
      JSON.stringify(run.results.filter((r) => r.status !== 'passed')),
    );
    assert.ok(run.requests.retried429 >= 5, `${run.requests.retried429} retried`);
    assert.ok(
      [...refusedOnce].some((k) => k.startsWith('DELETE')),
      'the cleanup met a 429',
    );
    assert.deepEqual(left, []);
    assert.deepEqual(run.cleanup.failed, []);

    let calls = 0;
    const always429 = await startMutantProxy(s.baseUrl, {
      request: (r) => {
        calls++;
        return { status: 429, headers: { 'retry-after': r.path.endsWith('/metrics') ? '120' : '0' }, body: '{}' };
      },
    });
    try {
      const client = new HttpClient({
        baseUrl: always429.baseUrl,
        apiKey: 'k',
        timeoutMs: 5000,
        totalMs: 5000,
        retry429: { max: 3, maxWaitMs: 60_000, unless: (p) => p.startsWith('/apps/app_limited/') },
      });
      assert.equal((await client.send({ method: 'GET', path: '/apps/app_limited/config' })).status, 429);
      assert.equal(calls, 1, 'the rate-limited app is not retried');
      assert.equal((await client.send({ method: 'GET', path: '/apps/app_demo/config' })).status, 429);
      assert.equal(calls, 5, 'bounded: three retries');
      calls = 0;
      await client.send({ method: 'GET', path: '/apps/app_demo/metrics' });
      assert.equal(calls, 1, 'a Retry-After beyond the bound is not waited for');
    } finally {
      await always429.close();
    }
  });

  test("D-176: the rate-limit case's set-up waits out an earlier run's window up to --window-wait, whatever --settle-timeout, saying so; past it, errored, not failed, naming the flag", async () => {
    const limited = `/apps/${targetJson.apps.rate_limited}/conversations`;
    let messages = 0;
    const refusing = (times: number, retryAfter: string, reset?: string): MutantHooks => {
      let left = times;
      return {
        request: (req) => {
          if (req.method === 'POST' && req.path.startsWith(`${limited}/`)) messages++;
          return req.method === 'POST' && req.path === limited && left-- > 0
            ? {
                status: 429,
                headers: {
                  'content-type': 'application/json',
                  'retry-after': retryAfter,
                  ...(reset ? { 'x-ratelimit-reset-requests': reset } : {}),
                },
                body: '',
                json: { error: { message: 'used up', type: 'rate_limit_exceeded', param: null, code: null } },
              }
            : undefined;
        },
      };
    };
    const waits: string[] = [];
    // A settle timeout shorter than the Retry-After does not bound the wait: --window-wait does.
    const waited = await throughProxy(refusing(1, '2'), {
      only: 'S8-rate-limit-429',
      settleTimeoutMs: 500,
      onWait: (id, ms, why) => void waits.push(`${id} ${ms} ${why}`),
    });
    assert.equal(waited.run.results[0]!.status, 'passed', waited.run.results[0]!.failure?.message);
    assert.ok(messages >= 6, `the case sent ${messages} messages after its set-up's 429: it did not check the limit`);
    assert.deepEqual(waits, [`S8-rate-limit-429 2000 the rate-limited app's window (429, Retry-After "2")`]);
    // A sliding window frees its first request at the Retry-After and is empty at its reset, which is waited for.
    waits.length = 0;
    const emptied = await throughProxy(refusing(1, '1', '2.5s'), {
      only: 'S8-rate-limit-429',
      onWait: (id, ms, why) => void waits.push(`${id} ${ms} ${why}`),
    });
    assert.equal(emptied.run.results[0]!.status, 'passed', emptied.run.results[0]!.failure?.message);
    assert.deepEqual(waits, [`S8-rate-limit-429 2500 the rate-limited app's window (429, Retry-After "1")`]);
    const refused = await throughProxy(refusing(99, '120'), { only: 'S8-rate-limit-429', windowWaitMs: 1_000 });
    const r = refused.run.results[0]!;
    assert.equal(r.status, 'errored');
    assert.match(
      r.reason!,
      /^set-up: .*refused with 429 \(Retry-After "120"\), a window an earlier run left full that does not free within --window-wait \(1000 ms\); nothing was judged: run again once it is free, or with --window-wait 121000$/,
    );
    assert.ok(r.failure?.curl, 'the evidence of the refused create is kept');
  });

  test('a deletion that times out is tried again: what the run created is deleted even from a slow server', async () => {
    const hung = new Set<string>();
    const hooks: MutantHooks = {
      takeover(req) {
        if (req.method !== 'DELETE' || hung.has(req.path)) return false;
        hung.add(req.path);
        return true; // never answered
      },
    };
    // Long enough for a loaded machine to answer the retry; the hung first try costs that much wall time, no CPU.
    const { run, left } = await throughProxy(hooks, { only: 'S4.3-get-shape', timeoutMs: 2000 });
    assert.equal(run.results[0]!.status, 'passed');
    assert.ok(hung.size >= 1);
    assert.deepEqual([run.cleanup.deleted, run.cleanup.failed, left], [1, [], []]);
  });

  test("a conversation created with another team's key is deleted with that key", async () => {
    const http = new HttpClient({ baseUrl: s.baseUrl, apiKey: target.apiKey, timeoutMs: 5000, totalMs: 5000 });
    const state: RunState = {
      target,
      profile: 'spec',
      runId: 'r',
      http,
      memo: new Map(),
      timeoutMs: 5000,
      settleTimeoutMs: 5000,
      windowWaitMs: 5000,
      webhooks: { endpoints: [] },
      created: [],
    };
    const ctx = new CaseContext(state, { id: 'S9-x', section: '9', level: 'MUST', description: 'x', clauses: [], run: async () => {} });
    const other = targetJson.apps.other_team;
    await ctx.send({ method: 'POST', path: `/apps/${other}/conversations`, body: {}, key: OTHER_TEAM_KEY });
    await ctx.send({ method: 'POST', path: `/apps/${target.appId}/conversations`, body: {} });
    assert.deepEqual(
      state.created.map((c) => [c[0], c[2]]),
      [
        [other, OTHER_TEAM_KEY],
        [target.appId, undefined],
      ],
    );
    const out = { deleted: 0, failed: [] as string[] };
    await cleanUp(http, state, out);
    assert.deepEqual(out, { deleted: 2, failed: [] });
  });
});

describe('versions and reports', () => {
  test('every report names the suite version, the interface version and the profile with the version it judges', async () => {
    const run = await runConformance({ target, only: 'S4.8-config-shape', profile: 'spec-1.0.0' });
    const pkg = JSON.parse(await fs.readFile(path.join(ROOT, 'package.json'), 'utf8'));
    assert.deepEqual([run.suite.version, run.interfaceVersion, run.profile], [pkg.version, '1.0.0', 'spec-1.0.0']);
    assert.match(render(run, 'pretty'), new RegExp(`parley-conformance ${pkg.version}, interface 1\\.0\\.0, profile spec-1\\.0\\.0`));
    assert.match(render(run, 'junit'), /<property name="interface_version" value="1\.0\.0"\/>/);
    assert.match(render(run, 'tap'), /\n# parley-conformance \S+, interface 1\.0\.0, profile spec-1\.0\.0\n/);
    assert.match(render(run, 'html'), /judging interface 1\.0\.0, profile <b>spec-1\.0\.0<\/b>/);
    assert.deepEqual([resolveProfile('spec'), resolveProfile('reference-1.0.0')], ['spec', 'reference']);
    assert.throws(() => resolveProfile('spec-2.0.0'), /unknown profile "spec-2\.0\.0": this suite judges interface 1\.0\.0/);
  });

  test('html: self-contained (no script, nothing fetched), with the summary, the clause matrix and each failure', async () => {
    const run = await runConformance({
      target: parseTarget({ ...targetJson, app_id: targetJson.apps.stream_default }, { baseUrl: s.baseUrl }),
      only: 'S4.8-config-shape,S4.8-config-generative-ui',
    });
    const rows = [
      {
        id: 'C-4.8-1',
        section: '4.8',
        text: 'config <answers> 200',
        check: 'exact' as const,
        cases: [{ id: 'S4.8-config-shape', level: 'MUST' as const, status: 'failed' as const }],
      },
    ];
    const html = renderHtml(run, rows);
    assert.match(html, /^<!doctype html>/);
    assert.doesNotMatch(html, /<script|<link|src=|href="http|@import|url\(/i);
    assert.match(html, /<td><code>C-4\.8-1<\/code><\/td><td>§4\.8<\/td><td>config &lt;answers&gt; 200<\/td>/);
    assert.match(html, /<a href="#case-S4\.8-config-shape"><span class="b failed">S4\.8-config-shape failed<\/span><\/a>/);
    assert.match(html, /<section class="failure" id="case-S4\.8-config-shape">/);
    assert.match(html, /passed<\/span> 1 <a href="#failures"><span class="b failed">failed<\/span> 1<\/a> /);
    assert.match(renderHtml(run, []), /has no clause matrix/);
    // A case the matrix did not see run ("not run"): the run's own outcome is shown.
    const byId = renderHtml(run, [
      { ...rows[0]!, cases: [{ id: 'S4.8-config-generative-ui', level: 'MUST', status: 'not run' }] },
    ] as unknown as Parameters<typeof renderHtml>[1]);
    assert.match(byId, /<span class="b passed">S4\.8-config-generative-ui passed<\/span>/);
  });

  test('the suite imports no circle of modules (reporters and runner included)', async () => {
    const dir = path.join(ROOT, 'conformance');
    const files = [
      ...(await fs.readdir(dir)).map((f) => path.join(dir, f)),
      ...(await fs.readdir(path.join(dir, 'cases'))).map((f) => path.join(dir, 'cases', f)),
    ].filter((f) => f.endsWith('.ts'));
    const graph = new Map<string, string[]>();
    for (const f of files) {
      const text = await fs.readFile(f, 'utf8');
      graph.set(
        f,
        [...text.matchAll(/^(?:import|export)\s[^;]*?from '(\.[^']+)'/gm)]
          .map((m) => path.resolve(path.dirname(f), m[1]!))
          .filter((t) => graph.has(t) || files.includes(t)),
      );
    }
    const state = new Map<string, 'open' | 'done'>();
    const visit = (f: string, trail: string[]): void => {
      if (state.get(f) === 'done') return;
      assert.notEqual(state.get(f), 'open', `import circle: ${[...trail, f].map((p) => path.relative(ROOT, p)).join(' → ')}`);
      state.set(f, 'open');
      for (const t of graph.get(f) ?? []) visit(t, [...trail, f]);
      state.set(f, 'done');
    };
    for (const f of files) visit(f, []);
  });
});
