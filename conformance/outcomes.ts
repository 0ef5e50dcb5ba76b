// How the tries of a case make one outcome (--retry-failed, --repeat), how a run is counted, and
// the exit code it gives (D-105).
import { failsTheRun } from './baseline.ts';
import type { CaseResult, RunResults, Summary } from './results.ts';

export function summarize(results: readonly CaseResult[]): Summary {
  const summary: Summary = { passed: 0, failed: 0, flaky: 0, skipped: 0, errored: 0 };
  for (const r of results) summary[r.status]++;
  return summary;
}

/**
 * 0: nothing failed; 1: a case failed, errored or was flaky where the baseline does not say so, a
 * baseline entry is stale, the run was interrupted, or (with --fail-on-skip) a case was skipped, other
 * than for a capability the target declares it lacks (D-105, extended).
 */
export function exitCode(run: RunResults, opts: { failOnSkip?: boolean } = {}): 0 | 1 {
  if (run.results.some(failsTheRun) || run.interrupted || (run.baseline?.stale.length ?? 0) > 0) return 1;
  if (opts.failOnSkip && run.results.some((r) => r.status === 'skipped' && !r.undeclared)) return 1;
  return 0;
}

const didNotPass = (r: CaseResult) => r.status === 'failed' || r.status === 'errored';

/**
 * A case that failed (or errored) and was run again (--retry-failed): flaky once a try passed, with
 * the failure of the first try as its evidence; else the last try, each try counted.
 */
export function afterRetry(first: CaseResult, again: CaseResult, triesSoFar: number): CaseResult {
  const tries = { tries: triesSoFar + 1, failedTries: triesSoFar + (didNotPass(again) ? 1 : 0), ms: first.ms + again.ms };
  if (again.status === 'passed')
    return {
      ...again,
      ...tries,
      status: 'flaky',
      ...(first.failure ? { failure: first.failure } : {}),
      reason: `failed ${tries.failedTries} of ${tries.tries} tries: ${first.failure?.message.split('\n')[0] ?? first.reason ?? ''}`,
    };
  return { ...again, ...tries };
}

const RANK = { failed: 4, errored: 3, skipped: 2, flaky: 1, passed: 0 } as const;

/**
 * With --repeat: a case passes only if it passed every time. Passed in some runs and failed, errored
 * or flaky in others, it is flaky (skips aside); else the worst outcome of its runs: failed, then
 * errored, then skipped (a skip in any run keeps it from passing).
 */
export function mergeResult(prev: CaseResult | undefined, next: CaseResult): CaseResult {
  if (!prev) return next;
  const count = (r: CaseResult, field: 'failedRuns' | 'skippedRuns' | 'passedRuns', is: boolean) => r[field] ?? (is ? 1 : 0);
  const failedRuns = count(prev, 'failedRuns', prev.status === 'failed') + (next.status === 'failed' ? 1 : 0);
  const skippedRuns = count(prev, 'skippedRuns', prev.status === 'skipped') + (next.status === 'skipped' ? 1 : 0);
  const passedRuns = count(prev, 'passedRuns', prev.status === 'passed') + (next.status === 'passed' ? 1 : 0);
  const runs = (prev.runs ?? 1) + 1;
  const counts = { failedRuns, skippedRuns, passedRuns, runs, ms: prev.ms + next.ms };
  const flakySome = prev.status === 'flaky' || next.status === 'flaky';
  const badSome = flakySome || didNotPass(prev) || didNotPass(next) || failedRuns > 0;
  if (flakySome || (passedRuns > 0 && badSome)) {
    const evidence = [prev, next].find((r) => r.status !== 'passed' && r.failure) ?? [prev, next].find((r) => r.status !== 'passed')!;
    return { ...evidence, ...counts, status: 'flaky', reason: `passed ${passedRuns} of ${runs} runs` };
  }
  return RANK[next.status] > RANK[prev.status] ? { ...next, ...counts } : { ...prev, ...counts };
}
