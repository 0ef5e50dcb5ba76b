// Long proof: the whole conformance suite, in both profiles, against the reference server. Each
// profile has a server of its own: the rate-limit case uses up apps.rate_limited's minute, which a
// second run on the same server would wait out (D-109).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CASES, exercisedBy, runConformance, selectCases, type RunResults } from '../../conformance/run.ts';
import { parseTarget } from '../../conformance/target.ts';
import { startTestServer, TARGET_JSON as targetJson } from '../support/helpers.ts';

function failures(r: RunResults): string {
  return r.results
    .filter((c) => c.status === 'failed' || c.status === 'errored')
    .map((c) => `${c.id}: ${c.failure?.message}\n${c.failure?.curl}\n${c.failure?.response}`)
    .join('\n\n');
}

describe('the reference server conforms', () => {
  for (const profile of ['spec', 'reference'] as const) {
    test(`profile ${profile}: every case passes, none is skipped with a full target`, { timeout: 120_000 }, async (t) => {
      const s = await startTestServer();
      t.after(() => s.close());
      const target = parseTarget(targetJson, { baseUrl: s.baseUrl });
      // D-105, extended: a case whose requests reach an extension names it as its capability.
      const unnamed = new Set<string>();
      const r = await runConformance({
        target,
        profile,
        timeoutMs: 10_000,
        onCaseExchanges: (id, exchanges) => {
          const def = CASES.find((c) => c.id === id);
          const named = def?.capability;
          for (const ex of exchanges) {
            const cap = exercisedBy(ex.request, { api: target.baseUrl, widget: target.widget?.baseUrl, admin: target.admin?.baseUrl });
            if (cap && cap !== named && !def?.uses?.includes(cap))
              unnamed.add(`${id} reaches ${cap} (${ex.request.method} ${ex.request.url}) and names ${named ?? 'none'}`);
          }
        },
      });
      t.diagnostic(`profile ${profile}: ${r.summary.passed} passed, ${r.summary.failed} failed, ${r.summary.skipped} skipped`);
      assert.equal(r.summary.failed + r.summary.errored, 0, failures(r));
      const skipped = r.results.filter((c) => c.status === 'skipped');
      assert.deepEqual(
        skipped.map((c) => `${c.id}: ${c.reason}`),
        [],
      );
      assert.equal(r.results.length, selectCases({ profile }).length);
      assert.deepEqual(r.cleanup.failed, []);
      assert.deepEqual([...unnamed], []);
      // Parley's target claims resumable, idempotency and widget: every counted case passes.
      assert.deepEqual([r.score.overall.passRate, r.score.overall.total], [1, r.results.length]);
    });
  }
});
