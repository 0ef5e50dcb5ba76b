// The conformance suite's widget part (docs/target.md, version 2): the target's `widget` read and
// checked, the REFERENCE cases of §5.4 against the reference server (and skipped without the keys
// they need), and everything they create deleted at the end.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PreflightError, runConformance, selectCases } from '../../conformance/run.ts';
import { parseTarget } from '../../conformance/target.ts';
import { startTestServer, type TestServer, TARGET_JSON as targetJson } from '../support/helpers.ts';
import { startMutantProxy } from '../support/mutant-proxy.ts';
import { MUTANTS } from '../support/mutants.ts';

const WIDGET_CASES = selectCases({ profile: 'reference', only: 'S5.4-*' }).map((c) => c.id);

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

/**
 * The fixtures' target with another `widget`, declaring no capabilities: the widget is then inferred from
 * its key, as before capabilities (a target that declares widget must have the key, D-105 extended).
 */
const withWidget = (widget: unknown, rest: Record<string, unknown> = {}) => ({ ...targetJson, capabilities: undefined, ...rest, widget });

describe("the target's widget (format version 2)", () => {
  test('a relative widget.base_url follows base_url and --base-url; an absolute one stays', () => {
    assert.equal(parseTarget(targetJson).widget?.baseUrl, 'http://127.0.0.1:8787/widget/v1');
    assert.equal(parseTarget(targetJson, { baseUrl: 'http://127.0.0.1:9000/v1/' }).widget?.baseUrl, 'http://127.0.0.1:9000/widget/v1');
    const absolute = withWidget({ ...targetJson.widget, base_url: 'https://widget.example/w/v1/' });
    assert.equal(parseTarget(absolute, { baseUrl: 'http://127.0.0.1:9000/v1' }).widget?.baseUrl, 'https://widget.example/w/v1');
    assert.deepEqual(parseTarget(targetJson).widget, {
      baseUrl: 'http://127.0.0.1:8787/widget/v1',
      origin: 'https://shop.example',
      identitySecret: targetJson.widget.identity_secret,
      shortTokenApp: targetJson.widget.short_token_app,
    });
    assert.equal(parseTarget(withWidget(null)).widget, undefined);
  });

  test('what is wrong in widget is a usage error that says what', () => {
    const bad = (widget: unknown, re: RegExp, rest?: Record<string, unknown>) =>
      assert.throws(() => parseTarget(withWidget(widget, rest), {}, 't.json'), re);
    bad(
      { ...targetJson.widget, orign: 'https://shop.example' },
      /^UsageError: t\.json: unknown key widget\.orign \(did you mean widget\.origin\?\) in a version 4 target/,
    );
    bad({ base_url: '/widget/v1' }, /t\.json: widget\.origin: /);
    bad(
      { ...targetJson.widget, origin: 'https://shop.example/' },
      /widget\.origin must be an origin such as https:\/\/shop\.example \(scheme, host and port; no path, no trailing slash\): https:\/\/shop\.example\/$/,
    );
    bad({ ...targetJson.widget, origin: 'null' }, /widget\.origin must be an origin/);
    bad(
      { ...targetJson.widget, base_url: '/v1' },
      /widget\.base_url is base_url itself: the widget API has its own path space \(D-45\), e\.g\. http:\/\/127\.0\.0\.1:8787\/widget\/v1/,
    );
    bad({ ...targetJson.widget, base_url: 'ftp://x/widget/v1' }, /widget\.base_url must be http\(s\)/);
    // A version 1 target with widget would stop an older suite: it must say version 2.
    const { inactive_conversation: _c, slow: _s, small_storage: _q, ...v1Apps } = targetJson.apps;
    const v2Widget = { ...targetJson.widget, short_token_app: undefined };
    bad(v2Widget, /^UsageError: t\.json: widget is a key of format version 2, and the target says version 1: add "version": 2/, {
      version: undefined,
      apps: v1Apps,
      admin: undefined,
    });
    assert.equal(
      parseTarget({ ...targetJson, version: undefined, capabilities: undefined, apps: v1Apps, widget: undefined, admin: undefined }).widget,
      undefined,
    );
  });
});

describe('the widget cases (REFERENCE, §5.4)', () => {
  test('against the reference server: all pass, and what they created is deleted through the REST API', async () => {
    const fresh = await startTestServer();
    try {
      const r = await runConformance({
        target: parseTarget(targetJson, { baseUrl: fresh.baseUrl }),
        profile: 'reference',
        only: 'S5.4-*',
        handleSignals: false,
      });
      assert.deepEqual(
        r.results.map((c) => `${c.id}: ${c.status}${c.failure ? ` ${c.failure.message}` : ''}`),
        WIDGET_CASES.map((id) => `${id}: passed`),
      );
      assert.deepEqual(r.warnings, []);
      assert.deepEqual(r.cleanup.failed, []);
      assert.ok(r.cleanup.deleted >= 4, `only ${r.cleanup.deleted} conversations deleted`);
      const left = await fresh.call('GET', `/apps/${targetJson.app_id}/conversations?limit=100`);
      assert.deepEqual(left.body.data, [], 'a conversation of the widget cases is left');
    } finally {
      await fresh.close();
    }
  });

  test("a failure's evidence shows the widget's URLs whole, and its replay takes each visitor token from its session", async () => {
    const fresh = await startTestServer();
    const proxy = await startMutantProxy(fresh.baseUrl, MUTANTS.find((m) => m.id === 'widget-token-signature-unchecked')!.hooks());
    try {
      const r = await runConformance({
        target: parseTarget(targetJson, { baseUrl: proxy.baseUrl }),
        profile: 'reference',
        only: 'S5.4-widget-forged-token',
        handleSignals: false,
      });
      const failure = r.results[0]!.failure!;
      assert.match(
        failure.message,
        /^widget GET \/apps\/app_demo\/config with a visitor token changed after signing \(another visitor\): expected HTTP 401, got 200$/,
      );
      const origin = proxy.baseUrl.replace(/\/v1$/, '');
      assert.ok(
        failure.curl!.includes(`'${origin}/widget/v1/apps/app_demo/config'`) && failure.curl!.includes("-H 'origin: https://shop.example'"),
        failure.curl,
      );
      const script = failure.reproduction!;
      assert.ok(script.includes(`# 1. POST ${origin}/widget/v1/apps/app_demo/visitors: HTTP 200 in the run`), script);
      assert.match(script, /-H "authorization: Bearer \$PUBLISHABLE_KEY"/);
      assert.match(script, /ID_1_\d=\$\(printf '%s' "\$R1" \| json_get 'token'\)/);
      assert.match(script, /-H "authorization: Bearer \$\{ID_1_\d\}"/);
      assert.deepEqual(r.cleanup.failed, []);
    } finally {
      await proxy.close();
      await fresh.close();
    }
  });

  test('skipped with the key they need: widget, and widget.identity_secret for signed identities', async () => {
    const without = await runConformance({
      target: parseTarget({ ...targetJson, capabilities: undefined, widget: undefined }, { baseUrl: s.baseUrl }),
      profile: 'reference',
      only: 'S5.4-*',
      handleSignals: false,
    });
    assert.deepEqual(
      without.results.map((c) => [c.status, c.missing]),
      WIDGET_CASES.map((id) => [
        'skipped',
        id === 'S5.4-widget-identity'
          ? ['widget', 'widget.identity_secret']
          : id === 'S5.4-widget-token-lifetime'
            ? ['widget', 'widget.short_token_app']
            : ['widget'],
      ]),
    );
    const { identity_secret: _, ...noSecret } = targetJson.widget;
    const r = await runConformance({
      target: parseTarget(withWidget(noSecret), { baseUrl: s.baseUrl }),
      profile: 'reference',
      only: 'S5.4-widget-identity',
      handleSignals: false,
    });
    assert.deepEqual(
      r.results.map((c) => [c.status, c.missing]),
      [['skipped', ['widget.identity_secret']]],
    );
  });
});

describe('the preflight of widget', () => {
  const run = (json: unknown, only = 'S5.4-widget-credentials', profile: 'spec' | 'reference' = 'reference') =>
    runConformance({ target: parseTarget(json, { baseUrl: s.baseUrl }), profile, only, handleSignals: false });

  test('an origin the app does not allow, a base that is not the widget API, a publishable key it refuses: PreflightError, no case run', async () => {
    await assert.rejects(
      run(withWidget({ ...targetJson.widget, origin: 'https://other.example' })),
      (e: Error) =>
        e instanceof PreflightError &&
        /^widget\.origin https:\/\/other\.example is not an origin the main app's widget allows: OPTIONS http:\/\/127\.0\.0\.1:\d+\/widget\/v1\/apps\/app_demo\/visitors from https:\/\/other\.example answered 403 access_denied \(origin_not_allowed\)$/.test(
          e.message,
        ),
    );
    await assert.rejects(
      run(withWidget({ ...targetJson.widget, base_url: '/widgets/v1' })),
      /^PreflightError: the widget API does not answer: OPTIONS \S+\/widgets\/v1\/apps\/app_demo\/visitors from https:\/\/shop\.example answered 404 not_found; check widget\.base_url/,
    );
    await assert.rejects(
      run(withWidget(targetJson.widget, { app_id: 'app_slow' })),
      /app_id app_slow has no widget: .* answered 403 access_denied \(widget_disabled\)/,
    );
    await assert.rejects(
      run(withWidget(targetJson.widget, { publishable_key: 'pk_live_wrong' })),
      /^PreflightError: publishable_key cannot open a visitor session on the main app's widget: POST \S+\/widget\/v1\/apps\/app_demo\/visitors answered 401 invalid_api_key/,
    );
  });

  test('only a run that selects a widget case checks widget; without publishable_key it warns, and the cases are skipped', async () => {
    // Profile spec has no widget case: a wrong widget does not stop it.
    const spec = await run(withWidget({ ...targetJson.widget, base_url: '/widgets/v1' }), 'S4.8-config-shape', 'spec');
    assert.equal(spec.summary.passed, 1);
    const r = await run(withWidget(targetJson.widget, { publishable_key: undefined }));
    assert.deepEqual(r.warnings, ['the target has widget but no publishable_key: the widget cases need both, and are skipped']);
    assert.deepEqual(r.results[0]?.missing, ['publishable_key']);
  });
});
