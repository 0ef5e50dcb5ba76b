// Long proof: the whole conformance suite, in both profiles, against the reference server.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runConformance, selectCases, type RunResults } from '../../conformance/run.ts';
import { parseTarget, type Target } from '../../conformance/target.ts';
import { startTestServer, type TestServer, TARGET_JSON as targetJson } from '../support/helpers.ts';

let s: TestServer;
let target: Target;
before(async () => {
  s = await startTestServer();
  target = parseTarget(targetJson, { baseUrl: s.baseUrl });
});
after(() => s.close());

function failures(r: RunResults): string {
  return r.results
    .filter((c) => c.status === 'failed' || c.status === 'errored')
    .map((c) => `${c.id}: ${c.failure?.message}\n${c.failure?.curl}\n${c.failure?.response}`)
    .join('\n\n');
}

describe('the reference server conforms', () => {
  for (const profile of ['spec', 'reference'] as const) {
    test(`profile ${profile}: every case passes, none is skipped with a full target`, { timeout: 120_000 }, async (t) => {
      const r = await runConformance({ target, profile, timeoutMs: 10_000 });
      t.diagnostic(`profile ${profile}: ${r.summary.passed} passed, ${r.summary.failed} failed, ${r.summary.skipped} skipped`);
      assert.equal(r.summary.failed + r.summary.errored, 0, failures(r));
      const skipped = r.results.filter((c) => c.status === 'skipped');
      assert.deepEqual(
        skipped.map((c) => `${c.id}: ${c.reason}`),
        [],
      );
      assert.equal(r.results.length, selectCases({ profile }).length);
      assert.deepEqual(r.cleanup.failed, []);
    });
  }
});
