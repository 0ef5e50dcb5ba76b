// Capabilities (D-105, extended): the target declares which of Parley's extensions it implements, the
// cases of the others are skipped and not scored, and the run states its score by capability, in every
// reporter and in a JSON summary and an SVG badge beside the report. The webhook cases' own checks
// (D-80's signature, the receiver's reach, D-109 extended) are here too.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CAPABILITIES, CAPABILITY_DEFS, claimsOf, exercisedBy } from '../conformance/capabilities.ts';
import { percent, scoreOf } from '../conformance/score.ts';
import { conformanceAction, receiverUrl } from '../conformance/command.ts';
import { CASES, exitCode, render, runConformance, selectCases, type RunResults } from '../conformance/run.ts';
import { parseTarget, type Target } from '../conformance/target.ts';
import { CaseContext, CaseSkip, type RunState } from '../conformance/context.ts';
import { HttpClient } from '../conformance/http.ts';
import { checkSignature, isLoopbackUrl, signingSecret, startReceiver } from '../conformance/receiver.ts';
import { startTestServer, tempDir, type TestServer, TARGET_JSON as targetJson } from './support/helpers.ts';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const { capabilities: _, ...undeclared } = targetJson as Record<string, unknown>;
/** The fixtures' target as a version 3 file: no capabilities, no version 4 keys. */
const v3 = (() => {
  const { inactive_conversation: _a, slow: _b, small_storage: _c, ...apps } = targetJson.apps as Record<string, string>;
  const { short_token_app: _d, ...widget } = targetJson.widget as Record<string, string>;
  // Without admin too: a version 3 target that names no admin (inferring webhooks is checked below).
  return { ...undeclared, version: 3, apps, widget, admin: undefined };
})();

describe('the target declares its capabilities', () => {
  test("Parley's own target declares all five, webhooks (the S5.5-webhook-* cases) and scenarios included", () => {
    const t = parseTarget(targetJson);
    assert.deepEqual(t.capabilities, ['resumable', 'idempotency', 'widget', 'webhooks', 'scenarios']);
    assert.deepEqual(
      Object.entries(t.claims).map(([c, v]) => `${c}: ${v.claimed} (${v.how})`),
      [
        'resumable: true (declared)',
        'idempotency: true (declared)',
        'widget: true (declared)',
        'webhooks: true (declared)',
        'scenarios: true (declared)',
      ],
    );
  });

  test('without capabilities, they are inferred as before: resumable and idempotency always, the widget with its key', () => {
    const full = parseTarget(v3);
    assert.equal(full.capabilities, undefined);
    assert.deepEqual(
      Object.entries(full.claims).map(([c, v]) => `${c}: ${v.claimed} (${v.how})`),
      [
        'resumable: true (inferred)',
        'idempotency: true (inferred)',
        'widget: true (inferred)',
        'webhooks: false (inferred)',
        'scenarios: false (inferred)',
      ],
    );
    const { widget: _w, ...bare } = v3;
    const v1 = parseTarget({ ...bare, version: 1, admin: undefined });
    assert.equal(v1.claims.widget.claimed, false);
    const withAdmin = parseTarget({ ...v3, admin: { email: 'ops@example.com', password: 'pw' } });
    assert.equal(withAdmin.claims.webhooks.claimed, true);
  });

  test('capabilities is a key of format version 4: a version 3 target with it is a usage error, as for any later key', () => {
    assert.throws(
      () => parseTarget({ ...v3, capabilities: ['resumable'] }, {}, 't.json'),
      /^UsageError: t\.json: capabilities is a key of format version 4, and the target says version 3: add "version": 4/,
    );
  });

  test('a name that is no capability is a usage error in one line: a typo gets a hint, an interface feature is refused as such', () => {
    const bad = (names: unknown[]) => () => parseTarget({ ...targetJson, capabilities: names }, {}, 't.json');
    assert.throws(bad(['resumeable']), /^UsageError: t\.json: capabilities: unknown capability "resumeable" \(did you mean resumable\?\)/);
    assert.throws(bad(['widgets']), /did you mean widget\?/);
    assert.throws(
      bad(['resumable', 'streaming']),
      /^UsageError: t\.json: capabilities: "streaming" is part of the interface, not a capability: every implementation owes it; capabilities name Parley's extensions only \(resumable, idempotency, widget, webhooks, scenarios\)$/,
    );
    assert.throws(bad([42]), /^UsageError: t\.json: capabilities\.0: /);
    assert.throws(() => parseTarget({ ...targetJson, capabilities: 'widget' }, {}, 't.json'), /^UsageError: t\.json: capabilities: /);
  });

  test('a declared capability whose target key is missing is a usage error naming the key', () => {
    const { widget: _w, ...noWidget } = targetJson as Record<string, unknown>;
    const err = (json: unknown) => {
      try {
        parseTarget(json, {}, 't.json');
      } catch (e) {
        return (e as Error).message;
      }
      assert.fail('no usage error');
    };
    const widget = err(noWidget);
    assert.match(widget, /^t\.json: capabilities declares widget, but the target has no widget key, which its cases need: add widget/);
    assert.doesNotMatch(widget, /\n/);
    assert.match(err({ ...targetJson, publishable_key: null }), /declares widget, but the target has no publishable_key key/);
    assert.match(
      err({ ...targetJson, admin: undefined, capabilities: ['webhooks'] }),
      /declares webhooks, but the target has no admin key/,
    );
    // Leaving the capability out is the other way out.
    assert.equal(parseTarget({ ...noWidget, capabilities: ['resumable'] }).claims.widget.claimed, false);
  });

  test('a target of a newer format: a capability this suite does not know is named and ignored', () => {
    const t = parseTarget({ ...targetJson, version: 6, capabilities: ['resumable', 'voice'] });
    assert.deepEqual(t.capabilities, ['resumable']);
    assert.deepEqual(t.ignoredKeys, ['capabilities: voice']);
  });
});

describe('each case knows its capability', () => {
  test('every REFERENCE case that cites a decision defining an extension, or needs its target key, names that capability', () => {
    const wrong: string[] = [];
    for (const c of selectCases({ profile: 'reference' })) {
      for (const cap of CAPABILITIES) {
        const def = CAPABILITY_DEFS[cap];
        const cites = c.clauses.filter((k) => def.decisions.includes(k));
        const needs = (c.needs ?? []).filter((k) => def.keys.includes(k) && k !== 'publishable_key');
        if (c.level === 'REFERENCE' && (cites.length > 0 || needs.length > 0) && c.capability !== cap)
          wrong.push(`${c.id} cites ${[...cites, ...needs].join(', ')} but names capability ${c.capability ?? 'none'}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  test('only REFERENCE cases have a capability (profile spec never asks for an extension), and the suite checks every capability', () => {
    assert.deepEqual(
      CASES.filter((c) => c.capability && c.level !== 'REFERENCE').map((c) => c.id),
      [],
    );
    const count = (cap: string) => CASES.filter((c) => c.capability === cap).length;
    assert.ok(count('resumable') >= 8, `resumable: ${count('resumable')} cases`);
    assert.ok(count('widget') >= 8, `widget: ${count('widget')} cases`);
    assert.ok(count('idempotency') >= 4, `idempotency: ${count('idempotency')} cases`);
    assert.ok(count('webhooks') >= 5, `webhooks: ${count('webhooks')} cases`);
  });

  test('a request shows the extension it exercises: a resume, a widget call, an Idempotency-Key', () => {
    const bases = { api: 'http://h/v1', widget: 'http://h/widget/v1', admin: 'http://h/admin/v1' };
    const at = (url: string, headers: Record<string, string> = {}) => exercisedBy({ url, headers }, bases);
    assert.equal(at('http://h/v1/apps/a/responses/resp_1/events?starting_after=2'), 'resumable');
    assert.equal(at('http://h/v1/apps/a/conversations/c'), undefined);
    assert.equal(at('http://h/v1/apps/a/conversations', { 'Idempotency-Key': 'k' }), 'idempotency');
    assert.equal(at('http://h/widget/v1/apps/a/visitors'), 'widget');
    assert.equal(at('http://h/admin/v1/webhooks/endpoints'), 'webhooks');
    assert.equal(at('http://h/admin/v1/apps'), undefined);
  });

  test('run against the reference: the cases that send an extension its requests name it, the others none', async () => {
    const target = parseTarget(targetJson, { baseUrl: s.baseUrl });
    const seen = new Map<string, Set<string>>();
    const r = await runConformance({
      target,
      profile: 'reference',
      only: 'S4.6-response-lookup,S4.6-resume-bad-cursor,S4.6-messages-wait-in-line,S5.4-widget-script,S5.4-widget-credentials',
      handleSignals: false,
      onCaseExchanges: (id, exchanges) => {
        const caps = seen.get(id) ?? new Set();
        for (const ex of exchanges) {
          const cap = exercisedBy(ex.request, { api: target.baseUrl, widget: target.widget?.baseUrl });
          if (cap) caps.add(cap);
        }
        seen.set(id, caps);
      },
    });
    assert.equal(r.summary.passed, 5, JSON.stringify(r.results.filter((c) => c.status !== 'passed')));
    for (const c of r.results) assert.deepEqual([...(seen.get(c.id) ?? [])], c.capability ? [c.capability] : [], c.id);
    assert.deepEqual(Object.fromEntries(r.results.map((c) => [c.id, c.capability ?? '-'])), {
      'S4.6-response-lookup': 'resumable',
      'S4.6-messages-wait-in-line': '-',
      'S4.6-resume-bad-cursor': 'resumable',
      'S5.4-widget-credentials': 'widget',
      'S5.4-widget-script': 'widget',
    });
  });
});

describe('a run scores what the target claims', () => {
  let run: RunResults;
  let target: Target;
  const only = 'S4.6-response-lookup,S4.6-messages-wait-in-line,S4.8-config-shape,S5.4-widget-script';
  before(async () => {
    target = parseTarget({ ...targetJson, capabilities: ['widget'] }, { baseUrl: s.baseUrl });
    run = await runConformance({ target, profile: 'reference', only, handleSignals: false });
  });

  test('a case of an undeclared capability is skipped with the reason, counted nowhere, and no --fail-on-skip failure', () => {
    const lookup = run.results.find((c) => c.id === 'S4.6-response-lookup')!;
    assert.equal(lookup.status, 'skipped');
    assert.equal(lookup.reason, 'the target does not declare capability resumable (its capabilities: widget)');
    assert.equal(lookup.undeclared, true);
    assert.deepEqual(run.summary, { passed: 3, failed: 0, flaky: 0, skipped: 1, errored: 0 });
    assert.equal(exitCode(run, { failOnSkip: true }), 0);
    assert.equal(run.score.overall.total, 3);
    assert.equal(run.score.overall.passRate, 1);
    const caps = Object.fromEntries(run.score.capabilities.map((c) => [c.name, c]));
    assert.deepEqual([caps.resumable!.claimed, caps.resumable!.cases, caps.resumable!.total], [false, 1, 0]);
    assert.deepEqual([caps.widget!.claimed, caps.widget!.passed, caps.widget!.total], [true, 1, 1]);
    assert.deepEqual([run.score.interface.passed, run.score.interface.total], [2, 2]);
  });

  test('a widget the target does not declare is not looked at by the preflight, however wrong its key', async () => {
    const wrong = { ...targetJson, capabilities: ['resumable'], widget: { ...targetJson.widget, base_url: '/widgets/v1' } };
    const r = await runConformance({
      target: parseTarget(wrong, { baseUrl: s.baseUrl }),
      profile: 'reference',
      only: 'S5.4-widget-script,S4.8-config-shape',
      handleSignals: false,
    });
    assert.deepEqual(
      r.results.map((c) => `${c.id}: ${c.status}`),
      ['S4.8-config-shape: passed', 'S5.4-widget-script: skipped'],
    );
    assert.deepEqual(r.warnings, []);
  });

  test('without capabilities, a target runs as before: a widget case skips for its key, and --fail-on-skip fails on it', async () => {
    const { widget: _w, ...bare } = v3;
    const old = await runConformance({
      target: parseTarget(bare, { baseUrl: s.baseUrl }),
      profile: 'reference',
      only,
      handleSignals: false,
    });
    const script = old.results.find((c) => c.id === 'S5.4-widget-script')!;
    assert.equal(script.reason, 'needs target key widget');
    assert.equal(script.undeclared, undefined);
    assert.equal(old.results.find((c) => c.id === 'S4.6-response-lookup')!.status, 'passed');
    assert.equal(exitCode(old, { failOnSkip: true }), 1);
    // The widget is not claimed (no key to infer it from): its case is not counted against the score.
    assert.deepEqual([old.score.overall.passed, old.score.overall.total], [3, 3]);
  });

  test('a skip for another reason counts as not passed: the pass rate is of every case in scope', () => {
    const claims = claimsOf(undefined, { widget: true, admin: false });
    const base = { section: '9', level: 'MUST' as const, description: 'd', ms: 0 };
    const runs = [
      { ...base, id: 'a', status: 'passed' as const },
      { ...base, id: 'b', status: 'skipped' as const, reason: 'needs target key apps.slow' },
      { ...base, id: 'c', status: 'flaky' as const },
    ];
    const score = scoreOf(runs, claims);
    assert.deepEqual([score.overall.passed, score.overall.total, percent(score.overall.passRate)], [1, 3, '33.3%']);
    assert.equal(percent(0.99999), '99.9%');
    assert.equal(percent(1), '100%');
    assert.equal(percent(null), 'n/a');
  });

  test('every reporter states the score by capability, in the same words (capabilityWords, score.ts)', () => {
    assert.match(
      render(run, 'pretty'),
      /\nscore: 3 of 3 counted cases passed \(100%\)[^\n]*\n {2}interface +always +2 of 2 passed \(100%\)\n/,
    );
    assert.match(render(run, 'pretty'), /\n {2}resumable +not declared +1 case skipped, not counted\n/);
    assert.match(render(run, 'pretty'), /\n {2}idempotency +not declared +0 cases skipped, not counted\n/);
    assert.match(render(run, 'pretty'), /\n {2}widget +declared +1 of 1 passed \(100%\)/);
    const json = JSON.parse(render(run, 'json')) as RunResults;
    assert.equal(json.score.overall.passRate, 1);
    assert.equal(json.capabilities.resumable.claimed, false);
    assert.equal(json.results.find((c) => c.id === 'S4.6-response-lookup')!.capability, 'resumable');
    const junit = render(run, 'junit');
    assert.match(junit, /<property name="pass_rate" value="3 of 3 passed \(100%\)"\/>/);
    assert.match(junit, /<property name="capability\.resumable" value="not declared: 1 case skipped, not counted"\/>/);
    assert.match(junit, /<property name="capability\.widget" value="declared: 1 of 1 passed \(100%\)"\/>/);
    assert.match(junit, /<skipped message="the target does not declare capability resumable \(its capabilities: widget\)"\/>/);
    const tap = render(run, 'tap');
    assert.match(tap, /# SKIP the target does not declare capability resumable/);
    assert.match(tap, /\n# score: 3 of 3 counted cases passed \(100%\)/);
    assert.match(tap, /\n# resumable +not declared +1 case skipped, not counted/);
    const html = render(run, 'html');
    assert.match(html, /<h2 id="score">Score: 100%<\/h2>/);
    assert.match(html, /<tr><td>resumable<\/td><td>not declared<\/td><td colspan="6">1 case skipped, not counted<\/td><\/tr>/);
  });
});

describe('the command writes a JSON summary and an SVG badge beside the report', () => {
  test('--out conformance.xml: conformance.summary.json and conformance.badge.svg, self-contained', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'target.json');
    await fs.writeFile(file, JSON.stringify({ ...targetJson, base_url: s.baseUrl }));
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(`err: ${l}`) };
    const out = path.join(dir, 'conformance.xml');
    const code = await conformanceAction(
      {
        target: file,
        profile: 'reference',
        only: ['S4.8-config-shape,S5.4-widget-script'],
        reporter: 'junit',
        out,
        timeout: 10_000,
        settleTimeout: 10_000,
        windowWait: 60_000,
        repeat: 1,
        retryFailed: 0,
      },
      io,
    );
    assert.equal(code, 0, lines.join('\n'));
    assert.match(await fs.readFile(out, 'utf8'), /^<\?xml/);
    const summary = JSON.parse(await fs.readFile(path.join(dir, 'conformance.summary.json'), 'utf8'));
    assert.equal(summary.profile, 'reference-1.0.0');
    assert.equal(summary.passRate, 1);
    assert.equal(summary.passRateText, '100%');
    assert.deepEqual(summary.summary, { passed: 2, failed: 0, flaky: 0, skipped: 0, errored: 0 });
    assert.deepEqual(Object.fromEntries(Object.entries(summary.capabilities).map(([k, v]) => [k, (v as { claimed: boolean }).claimed])), {
      resumable: true,
      idempotency: true,
      widget: true,
      webhooks: true,
      scenarios: true,
    });
    assert.equal(summary.capabilities.widget.passed, 1);
    const svg = await fs.readFile(path.join(dir, 'conformance.badge.svg'), 'utf8');
    assert.match(
      svg,
      /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="\d+" height="20" role="img" aria-label="conformance: 100% reference-1\.0\.0">/,
    );
    assert.match(svg, /<rect x="\d+" width="\d+" height="20" fill="#4c1"\/>/);
    assert.match(svg, /<title>parley-conformance [^<]+: 2 of 2 counted cases passed \(100%\)<\/title>/);
    // Self-contained: nothing fetched, nothing run; the only URL is the SVG namespace.
    assert.deepEqual(svg.match(/https?:\/\/[^"\s]+/g), ['http://www.w3.org/2000/svg']);
    assert.doesNotMatch(svg, /<script|<image|<foreignObject|href=|@import/i);
  });

  test('a declared capability without its key: exit 2, one line on stderr naming the key, nothing on stdout', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'target.json');
    await fs.writeFile(
      file,
      JSON.stringify({ ...targetJson, admin: undefined, base_url: s.baseUrl, capabilities: ['resumable', 'webhooks'] }),
    );
    const out: string[] = [];
    const err: string[] = [];
    const code = await conformanceAction(
      {
        target: file,
        profile: 'spec',
        reporter: 'pretty',
        timeout: 10_000,
        settleTimeout: 10_000,
        windowWait: 60_000,
        repeat: 1,
        retryFailed: 0,
      },
      { out: (l) => out.push(l), err: (l) => err.push(l) },
    );
    assert.equal(code, 2);
    assert.deepEqual(out, []);
    assert.equal(err.length, 1);
    assert.match(err[0]!, /^conformance: .*target\.json: capabilities declares webhooks, but the target has no admin key/);
  });

  test("--list names each case's capability, and says which an undeclared one would skip", async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'target.json');
    await fs.writeFile(file, JSON.stringify({ ...targetJson, capabilities: ['widget'] }));
    const out: string[] = [];
    const code = await conformanceAction(
      {
        target: file,
        profile: 'reference',
        only: ['S4.6-response-lookup,S5.4-widget-script'],
        list: true,
        reporter: 'pretty',
        timeout: 1,
        settleTimeout: 1,
        windowWait: 60_000,
        repeat: 1,
        retryFailed: 0,
      },
      { out: (l) => out.push(l), err: () => {} },
    );
    assert.equal(code, 0);
    assert.match(out.join('\n'), /S4\.6-response-lookup {2}REFERENCE {2}.*\[capability resumable: not declared, would be skipped\]/);
    assert.match(out.join('\n'), /S5\.4-widget-script {2}REFERENCE {2}.*\[capability widget\] {2}\[needs widget\]/);
  });
});

describe('the webhook cases (capability webhooks, D-80, D-109 extended)', () => {
  test("the receiver's wait ends at its timer even when the wall clock has not reached the deadline", { timeout: 10_000 }, async (t) => {
    const receiver = await startReceiver('hooks');
    try {
      // Node may run a timer a millisecond before Date.now() reaches it; a frozen clock makes that certain.
      const now = Date.now();
      t.mock.method(Date, 'now', () => now);
      assert.equal(await receiver.waitFor(() => false, 20), undefined);
      const aborted = new AbortController();
      aborted.abort();
      assert.equal(await receiver.waitFor(() => false, 60_000, aborted.signal), undefined);
    } finally {
      await receiver.close();
    }
  });

  test("the suite's own D-80 check verifies docs/webhooks.md's test vector, and nothing else", () => {
    const key = 'sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3';
    assert.equal(signingSecret(key), 'whsec_4iizSz75DhkFrCp5nX6dFb/dmAG7dfkIoXOhVGk9a+E=');
    const body =
      '{"id":"evt_0123456789abcdef01234567","object":"event","type":"conversation.created","created_at":1764215400,"app_id":"app_demo","data":{"id":"conv_0123456789abcdef01234567","object":"conversation","created_at":1764215400,"external_user_id":null,"title":"Hello","generated_title":{},"metadata":{}}}';
    const headers = {
      'webhook-id': 'evt_0123456789abcdef01234567',
      'webhook-timestamp': '1764215400',
      'webhook-signature': 'v1,mhjuTTrSPG6A9IEfAbbpgJ2C+i79/+03tQGprFa+hLc=',
    };
    assert.equal(checkSignature(key, headers, body), undefined);
    // One of several, as a team with rolled keys sends them.
    assert.equal(
      checkSignature(key, { ...headers, 'webhook-signature': `v1,${'A'.repeat(43)}= ${headers['webhook-signature']}` }, body),
      undefined,
    );
    assert.match(checkSignature(key, headers, body.replace('Hello', 'Hellp'))!, /none of the 1 v1 signature\(s\) verifies/);
    assert.match(checkSignature(key, { ...headers, 'webhook-timestamp': '1764215401' }, body)!, /none of the 1/);
    assert.match(checkSignature(`${key}x`, headers, body)!, /none of the 1/);
    assert.match(checkSignature(key, { ...headers, 'webhook-signature': 'v2,abc' }, body)!, /no v1 signature/);
    // Compared as text: the right HMAC in the URL-safe alphabet, or without its padding, is refused, saying why.
    for (const loose of ['v1,mhjuTTrSPG6A9IEfAbbpgJ2C-i79_-03tQGprFa-hLc=', 'v1,mhjuTTrSPG6A9IEfAbbpgJ2C+i79/+03tQGprFa+hLc'])
      assert.match(
        checkSignature(key, { ...headers, 'webhook-signature': loose }, body)!,
        /carries the right HMAC but is not written as "v1," \+ its standard base64 with padding/,
      );
  });

  test('a target off loopback without --receiver-url: every webhook case skips with the reason, before any request', async () => {
    const t = parseTarget({ ...targetJson, base_url: 'http://parley.example.invalid/v1' });
    // The session case reads the admin surface alone: it needs no receiver.
    for (const c of CASES.filter((x) => x.capability === 'webhooks' && x.id !== 'S5.5-admin-session')) {
      const http = new HttpClient({ baseUrl: t.baseUrl, apiKey: t.apiKey, timeoutMs: 1000, totalMs: 1000 });
      const state: RunState = {
        target: t,
        profile: 'reference',
        runId: 'r',
        http,
        memo: new Map(),
        timeoutMs: 1000,
        settleTimeoutMs: 1000,
        windowWaitMs: 1000,
        created: [],
        webhooks: { endpoints: [] },
      };
      const ctx = new CaseContext(state, c);
      await assert.rejects(c.run(ctx), (err: Error) => {
        assert.ok(err instanceof CaseSkip, `${c.id}: ${err.message}`);
        assert.match(err.message, /an implementation at parley\.example\.invalid cannot reach: pass --receiver-url/);
        return true;
      });
      assert.equal(http.stats.sent, 0);
      assert.equal(state.webhooks.receiver, undefined);
    }
  });

  test('--receiver-url: http with a port, nothing else', () => {
    assert.equal(receiverUrl('http://10.0.0.5:9900/hooks/'), 'http://10.0.0.5:9900/hooks');
    for (const [bad, re] of [
      ['https://hooks.example:443/x', /must be http:/],
      ['http://10.0.0.5/hooks', /must name its port/],
      ['http://10.0.0.5:9900/x?a=1', /no query/],
      ['not a url', /must be a URL/],
    ] as const)
      assert.throws(() => receiverUrl(bad), re, bad);
  });

  test('isLoopbackUrl: 127/8, ::1 and localhost only', () => {
    for (const u of [
      'http://127.0.0.1:1/v1',
      'http://127.1.2.3/v1',
      'http://[::1]:8/v1',
      'http://localhost:8787/v1',
      'http://a.localhost/v1',
    ])
      assert.equal(isLoopbackUrl(u), true, u);
    for (const u of [
      'http://10.0.0.1/v1',
      'http://parley.example/v1',
      'http://128.0.0.1/v1',
      'http://[::2]/v1',
      'http://localhost.example/v1',
    ])
      assert.equal(isLoopbackUrl(u), false, u);
  });
});
