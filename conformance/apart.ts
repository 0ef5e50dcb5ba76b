// The report of a run that judges something other than an implementation (a webhook receiver, D-175; a
// client, D-130): the suite's RunResults, so that its reporters render it, with no clause, precondition
// or clean-up of its own.
import type { Claims } from './capabilities.ts';
import { summarize } from './outcomes.ts';
import type { CaseResult, RunResults } from './results.ts';
import { scoreOf } from './score.ts';

export type RunHeader = Pick<RunResults, 'subject' | 'suite' | 'interfaceVersion' | 'profile' | 'runId' | 'baseUrl' | 'appId'>;

export function runApart(header: RunHeader, results: CaseResult[], started: number, sent: number, capabilities: Claims): RunResults {
  return {
    ...header,
    startedAt: new Date(started).toISOString(),
    ms: Date.now() - started,
    results,
    summary: summarize(results),
    preconditions: [],
    warnings: [],
    requests: { sent, retried429: 0 },
    cleanup: { deleted: 0, failed: [] },
    capabilities,
    score: scoreOf(results, capabilities),
  };
}
