// The conformance suite judged against the reference server: it passes in both profiles, its command
// keeps its exit-code and output contract, its reporters render, and the conformance pages are current.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { CASES, render, runConformance, selectCases, type RunResults } from '../conformance/run.ts';
import { parseTarget, type Target } from '../conformance/target.ts';
import { generateDocs, PAGES, type Page } from '../conformance/docs.ts';
import { describeResponse } from '../conformance/evidence.ts';
import type { Exchange } from '../conformance/http.ts';
import { lookalike } from '../conformance/cases/common.ts';
import { startTestServer, type TestServer, TARGET_JSON as targetJson } from './support/helpers.ts';
import { startMutantProxy } from './support/mutant-proxy.ts';

const _run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');

let s: TestServer;
let target: Target;
before(async () => {
  s = await startTestServer();
  target = parseTarget(targetJson, { baseUrl: s.baseUrl });
});
after(() => s.close());

describe('the reference server conforms', () => {
  test('everything the run created is deleted at the end', async () => {
    const fresh = await startTestServer();
    try {
      await runConformance({ target: parseTarget(targetJson, { baseUrl: fresh.baseUrl }), profile: 'spec', only: 'S4.1-*,S4.2-*' });
      const list = await fresh.call('GET', `/apps/${target.appId}/conversations?limit=100`);
      assert.deepEqual(list.body.data, []);
      const metrics = await fresh.call('GET', `/apps/${target.appId}/metrics`);
      assert.ok(metrics.body.total_conversations > 20, 'the run did create conversations');
    } finally {
      await fresh.close();
    }
  });

  test('cases whose target key is missing are skipped with the key, never passed', async () => {
    const bare = parseTarget({ base_url: s.baseUrl, api_key: target.apiKey, app_id: target.appId });
    const r = await runConformance({ target: bare, only: 'S4.8-*,S5-publishable-key-refused' });
    const byId = new Map(r.results.map((c) => [c.id, c]));
    assert.equal(byId.get('S4.8-config-shape')?.status, 'passed');
    assert.equal(byId.get('S4.8-config-generative-ui')?.status, 'skipped');
    assert.deepEqual(byId.get('S4.8-config-generative-ui')?.missing, ['apps.generative_ui']);
    assert.equal(byId.get('S5-publishable-key-refused')?.reason, 'needs target key publishable_key');
  });

  test("without other_team_api_key the other team's conversation case is skipped with that key; with it, the conversation is deleted with that key", async () => {
    const { other_team_api_key: otherKey, ...withoutKey } = targetJson;
    const skipped = await runConformance({ target: parseTarget(withoutKey, { baseUrl: s.baseUrl }), only: 'S5-other-team-conversation' });
    assert.deepEqual([skipped.results[0]?.status, skipped.results[0]?.missing], ['skipped', ['other_team_api_key']]);
    const fresh = await startTestServer();
    try {
      const r = await runConformance({ target: parseTarget(targetJson, { baseUrl: fresh.baseUrl }), only: 'S5-other-team-conversation' });
      assert.equal(r.summary.passed, 1);
      assert.deepEqual(r.cleanup.failed, []);
      const left = await fresh.call('GET', `/apps/${targetJson.apps.other_team}/conversations?limit=100`, undefined, { key: otherKey });
      assert.deepEqual(left.body.data, [], "the other team's conversation is still listed after the run");
    } finally {
      await fresh.close();
    }
  });
});

describe('run options', () => {
  test('--bail stops at the first failure and reports the rest as skipped', async () => {
    const wrong = parseTarget({ ...targetJson, app_id: targetJson.apps.stream_default }, { baseUrl: s.baseUrl });
    const r = await runConformance({ target: wrong, only: 'S4.8-*', bail: true });
    assert.deepEqual(
      r.results.map((c) => [c.id, c.status]),
      [
        ['S4.8-config-shape', 'failed'],
        ['S4.8-config-generative-ui', 'skipped'],
        ['S4.8-config-stream-default', 'skipped'],
      ],
    );
    assert.equal(r.results[1]!.reason, 'not run: --bail after a failure');
  });

  test('an --only pattern that matches no case of the profile is a usage error, not an empty green run', async () => {
    await assert.rejects(
      runConformance({ target, only: 'S4.8-*,S4.8-config-shap' }),
      /--only 'S4\.8-config-shap' matches no case of profile spec$/,
    );
    await assert.rejects(
      runConformance({ target, only: 'S4.2-list-before-desc' }),
      /matches no case of profile spec \(it matches REFERENCE cases: --profile reference\)/,
    );
    const r = await runConformance({ target, only: 'S4.2-list-before-desc', profile: 'reference' });
    assert.equal(r.summary.passed, 1);
  });

  test('an interrupted run fails the case under way, skips the rest, and still deletes what it created', async () => {
    const fresh = await startTestServer();
    const stop = new AbortController();
    // The second creation never gets an answer: the run is stopped while it waits.
    let creations = 0;
    const proxy = await startMutantProxy(fresh.baseUrl, {
      takeover(req) {
        if (req.method !== 'POST' || !/\/conversations$/.test(req.path) || ++creations < 2) return false;
        stop.abort('SIGINT');
        return true;
      },
    });
    try {
      const r = await runConformance({
        target: parseTarget(targetJson, { baseUrl: proxy.baseUrl }),
        only: 'S4.1-*',
        signal: stop.signal,
        handleSignals: false,
      });
      assert.deepEqual(
        r.results.map((c) => [c.id, c.status]),
        [
          ['S4.1-create-shape', 'passed'],
          ['S4.1-create-empty-body', 'failed'],
          ['S4.1-create-distinct-ids', 'skipped'],
          ['S4.1-create-malformed-json', 'skipped'],
          ['S4.1-create-text-round-trip', 'skipped'],
        ],
      );
      assert.equal(r.results[1]!.failure?.message, 'the run was interrupted (SIGINT) before this case finished');
      assert.equal(r.results[3]!.reason, 'not run: the run was interrupted');
      assert.equal(r.interrupted, 'SIGINT');
      assert.equal(r.cleanup.deleted, 1);
      assert.deepEqual((await fresh.call('GET', `/apps/${target.appId}/conversations`)).body.data, []);
    } finally {
      await proxy.close();
      await fresh.close();
    }
  });

  test('SIGINT stops a run the same way (between two cases: the next one fails as interrupted)', async () => {
    let signalled = false;
    const r = await runConformance({
      target,
      only: 'S4.8-*',
      onResult: () => {
        if (!signalled) process.emit('SIGINT', 'SIGINT');
        signalled = true;
      },
    });
    assert.deepEqual(
      r.results.map((c) => c.status),
      ['passed', 'failed', 'skipped'],
    );
    assert.equal(r.interrupted, 'SIGINT');
    assert.equal(process.listenerCount('SIGINT'), 0, 'the run leaves no SIGINT listener behind');
  });

  test('--repeat runs every case N times, each run with its own state and cleanup', async () => {
    const seen = new Set<string>();
    const r = await runConformance({ target, only: 'S4.1-create-shape', repeat: 3, onResult: (c) => seen.add(c.id) });
    assert.equal(r.results[0]!.status, 'passed');
    assert.equal(r.results[0]!.runs, 3);
    assert.deepEqual([...seen], ['S4.1-create-shape']);
    assert.equal(r.cleanup.deleted, 3, 'each run created its baseline conversation and deleted it');
  });
});

describe('the registry', () => {
  test('ids are unique, stable in form, filed under their section; REFERENCE cases cite a D-n', () => {
    assert.equal(new Set(CASES.map((c) => c.id)).size, CASES.length);
    for (const c of CASES) {
      assert.match(c.id, /^S\d+(\.\d+)?-[a-z0-9-]+$/);
      assert.ok(c.id.startsWith(`S${c.section}-`), c.id);
      if (c.level === 'REFERENCE') assert.match(c.description, /D-\d+/, `${c.id} cites no decision`);
    }
  });

  test('profile spec selects only MUST cases; --only and --skip take globs', () => {
    assert.ok(selectCases({ profile: 'spec' }).every((c) => c.level === 'MUST'));
    assert.ok(selectCases({ profile: 'reference' }).some((c) => c.level === 'REFERENCE'));
    assert.deepEqual(
      selectCases({ profile: 'reference', only: 'S4.5-*', skip: ['S4.5-deleted-*'] }).map((c) => c.id),
      ['S4.5-delete-shape', 'S4.5-delete-unknown-404'],
    );
  });

  test('covers every section of the interface with a case', () => {
    const sections = new Set(CASES.map((c) => c.section));
    for (const s of ['4.1', '4.2', '4.3', '4.4', '4.5', '4.6', '4.7', '4.8', '4.9', '5', '6', '7', '8', '9'])
      assert.ok(sections.has(s), `no case for §${s}`);
  });
});

describe('pieces', () => {
  test('an unknown id shaped like a real one: same length and kinds of characters, another value', () => {
    for (const id of [
      'conv_0a1b2c3d4e5f60718293a4b5',
      'conv_5d1fd443e38bda0340396ffb',
      '3f2b8c1e-9d4a-4e7b-8c6d-1a2b3c4d5e6f',
      'c_AbC12xY',
    ]) {
      const other = lookalike(id, 1);
      assert.notEqual(other, id);
      assert.equal(
        other.replace(/[0-9]/g, '0').replace(/[a-z]/g, 'a').replace(/[A-Z]/g, 'A'),
        id.replace(/[0-9]/g, '0').replace(/[a-z]/g, 'a').replace(/[A-Z]/g, 'A'),
      );
      // Only characters its random tail uses: a hex id stays hex.
      const tail = /[0-9A-Za-z]*$/.exec(id)![0];
      assert.ok(
        [...other.slice(id.length - tail.length)].every((ch) => tail.includes(ch)),
        other,
      );
    }
    assert.equal(lookalike('conv_0a1b2c3d4e5f60718293a4b5', 1).slice(0, 5 + 16), 'conv_0a1b2c3d4e5f6071');
  });

  test("a stream's evidence shows its end too, where a missing or late event shows", () => {
    const text = `${Array.from({ length: 200 }, (_, i) => `event: response.output_text.delta\ndata: {"delta":"${i}"}\n\n`).join('')}event: response.completed\ndata: {}\n\n`;
    const ex = {
      status: 200,
      headers: new Headers({ 'content-type': 'text/event-stream' }),
      text,
      sse: { events: [], comments: [], parseErrors: [], ended: true },
    } as unknown as Exchange;
    const shown = describeResponse(ex);
    assert.match(shown, /^HTTP 200\ncontent-type: text\/event-stream\n\nevent: response\.output_text\.delta\ndata: \{"delta":"0"\}/);
    assert.match(shown, /characters left out\) …[\s\S]*event: response\.completed\ndata: \{\}\n\n$/);
    assert.ok(shown.length < 1700, `${shown.length} characters`);
  });
});

describe('reporters', () => {
  let result: RunResults;
  before(async () => {
    // A broken target (wrong app id for config) gives a mix of passes and failures to render.
    result = await runConformance({ target, only: 'S4.8-*,S4.5-delete-shape' });
    result.results[0] = {
      ...result.results[0]!,
      status: 'failed',
      failure: { message: 'expected <1> & "2"', curl: "curl -X GET 'x'", response: 'HTTP 500' },
    };
    result.results[1] = { ...result.results[1]!, status: 'skipped', reason: 'needs target key apps.x' };
  });

  test('json round-trips the results', () => {
    assert.deepEqual(
      JSON.parse(render(result, 'json')).results.map((r: { id: string }) => r.id),
      result.results.map((r) => r.id),
    );
  });

  test('junit escapes XML and marks failures and skips', () => {
    const xml = render(result, 'junit');
    assert.match(xml, /^<\?xml/);
    assert.match(xml, /<failure message="expected &lt;1&gt; &amp; &quot;2&quot;"/);
    assert.match(xml, /<skipped message="needs target key apps.x"\/>/);
    assert.equal((xml.match(/<testcase /g) ?? []).length, result.results.length);
  });

  test('tap has a plan, not ok with YAML diagnostics, and SKIP directives', () => {
    const tap = render(result, 'tap');
    assert.match(tap, /^TAP version 14\n1\.\.\d+\n/);
    assert.match(tap, /\nnot ok 1 - S4\.5-delete-shape - .*\n {2}---\n {4}message: \|-\n {6}expected <1>/);
    assert.match(tap, /\nok 2 - \S+ - .* # SKIP needs target key apps\.x/);
  });

  test('pretty shows each failure with what was sent, what came back and the clauses it checks', () => {
    const text = render(result, 'pretty');
    assert.match(
      text,
      /✗ S4\.5-delete-shape \[MUST, §4\.5 Delete conversation\]\n {4}expected <1> & "2"\n {4}sent:\n {6}curl -X GET 'x'\n {4}got:\n {6}HTTP 500\n {4}clauses: §4\.5\.success, §2\.7\.id, §2\.7\.object, §2\.7\.deleted \(docs\/conformance-reference\.md, clause matrix\)/,
    );
  });
});

test('the conformance guide and reference are generated from the registry and up to date (npm run conformance:docs)', async () => {
  for (const file of Object.keys(PAGES) as Page[]) {
    const committed = await fs.readFile(path.join(ROOT, file), 'utf8');
    assert.equal(committed, generateDocs(file, committed), `${file} is stale: run npm run conformance:docs`);
  }
  // test/proof/conformance-cli.test.ts runs the same check as a command (`npm run conformance:docs -- --check`).
});

test('a conformance page keeps its prose and refuses a page that lost a generated block or holds one of the other page', () => {
  const page = '# Title\n\nHand-written.\n\n<!-- generated:capabilities -->\nold\n<!-- /generated:capabilities -->\n';
  assert.throws(() => generateDocs('docs/conformance.md', page), /generated block target appears 0 times/);
  const blocks = (file: Page) => PAGES[file].map((b) => `<!-- generated:${b} -->\n<!-- /generated:${b} -->`).join('\n\nprose between\n\n');
  assert.throws(
    () => generateDocs('docs/conformance.md', `${blocks('docs/conformance.md')}\n${blocks('docs/conformance-reference.md')}\n`),
    /docs\/conformance\.md: the generated block mutants belongs to another page/,
  );
  const guide = generateDocs('docs/conformance.md', `# Title\n\n${blocks('docs/conformance.md')}\n`, '{"version": 2}');
  assert.match(
    guide,
    /^# Title\n\n<!-- generated:target -->\n```json\n\{"version": 2\}\n```\n<!-- \/generated:target -->\n\nprose between\n/,
  );
  const reference = generateDocs('docs/conformance-reference.md', `# Title\n\n${blocks('docs/conformance-reference.md')}\n`);
  assert.match(reference, /<!-- generated:cases -->\n\d+ cases: /);
});
