// Long proof of D-176: the suite runs again and again against one server. The §8 cases and the cases that
// read the webhooks, the admin's session and a cancel five times back to back, then the whole reference
// profile twice, on one Parley: each run meets the rate-limited app's window the run before left full
// and waits it out (the wait said), and app_small's storage quota is as free as the first run found it
// (the run before deleted what it made, and a deleted conversation's kept responses count for nothing,
// D-73). Every run is green.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runConformance, type RunResults } from '../../conformance/run.ts';
import { parseTarget } from '../../conformance/target.ts';
import { startTestServer, TARGET_JSON as targetJson } from '../support/helpers.ts';

function notGreen(r: RunResults): string {
  return r.results
    .filter((c) => c.status !== 'passed')
    .map((c) => `${c.id} ${c.status}: ${c.reason ?? c.failure?.message}`)
    .join('\n');
}

test('D-176: the §8 cases and the reading cases five times back to back, then the reference profile twice, against one server: all green', {
  timeout: 1_200_000,
}, async (t) => {
  const s = await startTestServer();
  t.after(() => s.close());
  const target = parseTarget(targetJson, { baseUrl: s.baseUrl });
  const waits: string[] = [];
  // With the §8 cases, the ones that read the webhooks, the admin's session and a cancel (read-mutants.ts).
  const again = ['S8-*', 'S5.5-*', 'S4.6-cancel-running', 'S4.7-completion-left-stops'];
  const runs: Array<{ only?: string[] }> = [...Array.from({ length: 5 }, () => ({ only: again })), {}, {}];
  for (const [i, opts] of runs.entries()) {
    const r = await runConformance({
      target,
      profile: 'reference',
      timeoutMs: 10_000,
      handleSignals: false,
      ...opts,
      onWait: (id, ms) => void waits.push(`run ${i + 1}: ${id} ${ms} ms`),
    });
    t.diagnostic(
      `run ${i + 1} (${opts.only ? opts.only.join(',') : 'whole profile'}): ${r.summary.passed} passed, ${r.results.length} cases`,
    );
    assert.equal(r.summary.passed, r.results.length, `run ${i + 1}:\n${notGreen(r)}`);
    assert.deepEqual(r.cleanup.failed, [], `run ${i + 1} deleted what it made`);
  }
  // The runs after the first met the window the run before had filled, and waited it out.
  assert.ok(waits.length >= 4, waits.join(' | '));
});
