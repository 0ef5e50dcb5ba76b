// What a run returns and every reporter renders. Its own module so that the runner and the reporters
// both depend on it and never on each other.
import type { Capability, CapabilityClaim } from './capabilities.ts';
import type { Level, Profile } from './context.ts';

/**
 * `flaky`: the case failed (or errored) and passed when it ran again (--retry-failed), or passed in
 * some runs of --repeat and failed in others. Counted apart from passed and failed.
 */
export type Outcome = 'passed' | 'failed' | 'flaky' | 'skipped' | 'errored';

/** One request and its response, as the JSON report carries it (the key replaced by `$API_KEY`). */
export interface EvidenceExchange {
  request: { method: string; url: string; headers: Record<string, string>; body?: unknown };
  response: {
    /** 0 when no response came (the error is in `error`). */
    status: number;
    headers: Record<string, string>;
    /** Parsed when it is JSON, else the text; absent for a stream (see `events`). */
    body?: unknown;
    /** The SSE events of a stream, in order (`data` parsed when it is JSON). */
    events?: Array<{ event: string; data: unknown; id?: string }>;
    /** For a stream: whether it ended by itself, or why the suite stopped reading. */
    ended?: boolean;
    timedOut?: 'idle' | 'total';
    error?: string;
    ms: number;
  };
  /** The request as a curl command (`curl -N` for a stream). */
  curl: string;
}

export interface FailureDetail {
  message: string;
  /** The request that showed the failure, as a curl command with the key replaced by `$API_KEY`. */
  curl?: string;
  /** What came back to that request, shortened for reading. */
  response?: string;
  /** Every request of the case and its response, in order (not only the one that showed the failure). */
  exchanges?: EvidenceExchange[];
  /** A shell script that replays the case's requests, ids taken from earlier answers (for multi-step cases). */
  reproduction?: string;
}

export interface CaseResult {
  id: string;
  section: string;
  level: Level;
  description: string;
  /** The extension it exercises (capabilities.ts), when it exercises one. */
  capability?: Capability;
  status: Outcome;
  /** Why it was skipped, or (errored) which precondition blocked it. */
  reason?: string;
  /**
   * Skipped because the target declares its capabilities and leaves this case's out: not scored, and not
   * a skip that --fail-on-skip fails the run for (the team said so on purpose).
   */
  undeclared?: boolean;
  /** Target keys it needs that the target lacks. */
  missing?: string[];
  failure?: FailureDetail;
  /** The clauses it checks, for a case of no registry (check-receiver's, D-175); the registry says the suite's. */
  clauses?: string[];
  /** What the other side answered, in a line, whatever the outcome (check-receiver's cases, D-175). */
  answered?: string;
  /** Errored: the precondition that failed (its failure is in `RunResults.preconditions`). */
  blockedBy?: string;
  /** Listed in the --expected-failures file as failing, with this reason. */
  expectedFailure?: string;
  /** Listed in the --expected-failures file as `[flaky]`, with this reason. */
  expectedFlaky?: string;
  /** Its baseline entry no longer says what happens (it fails the run): why. */
  stale?: string;
  /** With --repeat: how many of the runs failed or were skipped, of how many. */
  failedRuns?: number;
  skippedRuns?: number;
  passedRuns?: number;
  runs?: number;
  /**
   * Every try of the case (--retry-failed runs a failed one again; --repeat runs all of them again),
   * and how many of them did not pass; absent when it ran once.
   */
  tries?: number;
  failedTries?: number;
  ms: number;
}

/** A precondition that failed: shown once, with the cases it blocked. */
export interface PreconditionResult {
  name: string;
  /** The case that ran it (and failed with its evidence). */
  shownBy: string;
  message: string;
  /** The cases reported as errored because of it. */
  blocked: string[];
}

export type Summary = Record<Outcome, number>;

export interface RunResults {
  /**
   * What the run judged: an implementation of the interface (absent), or a webhook receiver
   * (`parley webhooks check-receiver`, D-175), whose report has no clause matrix, score or clean-up.
   */
  subject?: 'receiver' | 'client';
  suite: { name: string; version: string };
  /** The interface version the cases judge. */
  interfaceVersion: string;
  runId: string;
  /** With the interface version it judges: `spec-1.0.0`, `reference-1.0.0`. */
  profile: string;
  baseUrl: string;
  appId: string;
  startedAt: string;
  ms: number;
  results: CaseResult[];
  summary: Summary;
  preconditions: PreconditionResult[];
  /** What the preflight found allowed but suspicious (a 404 for apps.other_team, …). */
  warnings: string[];
  /**
   * With --expected-failures: how many listed cases failed as listed, how many listed `[flaky]` ended
   * flaky or passed, the entries that no longer hold (they fail the run) and the ids of cases not run.
   */
  baseline?: { file: string; expected: number; flaky: number; stale: string[]; unknown: string[] };
  /** Requests sent, and how many answers were 429s retried after their Retry-After. */
  requests: { sent: number; retried429: number };
  /** What the run created and deleted at the end. */
  cleanup: { deleted: number; failed: string[] };
  /** Why the run was stopped before its end (`SIGINT`, …). */
  interrupted?: string;
  /** Which of Parley's extensions the target claims, and whether it declared them or the suite inferred them. */
  capabilities: Record<Capability, CapabilityClaim>;
  /** The pass rate of the interface's cases, of each claimed capability's, and of all that count (D-105, extended). */
  score: Score;
}

export type { Profile };

/** The cases a group scores: its outcomes, how many count, and the pass rate (null with none). */
export interface GroupScore extends Summary {
  /** The cases that count: every case of the group the run selected, unless the target does not claim it. */
  total: number;
  /** passed ÷ total, in [0, 1]; null when no case counts. */
  passRate: number | null;
}

export interface CapabilityScore extends GroupScore, CapabilityClaim {
  name: Capability;
  /** Cases of the selection that exercise it (run or, when not claimed, skipped). */
  cases: number;
}

/**
 * The score of a run: the interface's own cases and each claimed capability's, and over all of them a
 * pass rate. A case of a capability the target does not claim is skipped and counts nowhere; any other
 * skip counts as not passed, as a skip never passes (a missing target key, an agent that never called a
 * tool). Flaky, failed and errored cases do not pass, whatever a baseline says of them.
 */
export interface Score {
  interface: GroupScore;
  capabilities: CapabilityScore[];
  overall: GroupScore;
}
