// The test runs of one process (D-125), in memory like D-52's minute windows: the data directory's
// process is the only one serving, a run lasts an hour, and a restart begins every run anew (a test
// starts its runs after the server is up). PostgreSQL's twin, shared by instances, is pg/test-runs.ts.
import type { TestRunRequestT } from '../../contract/scenarios.ts';
import { type RunTurn, TEST_RUN_MAX_REQUESTS, TEST_RUN_TTL_MS, type TestRuns } from '../test-runs.ts';

/** The most runs held at once: past it the one least recently used goes, so memory stays bounded. */
const MAX_RUNS = 10_000;
/** How often runs past their hour are let go. */
const SWEEP_MS = 60_000;

interface Run {
  started: number;
  count: number;
  touched: number;
  script: string | null;
  retryAfterAt: number | null;
  requests: Array<{ n: number; request: TestRunRequestT }>;
}

export class MemoryTestRuns implements TestRuns {
  /** By `app_id`, NUL, test id; in order of last use (re-inserted on each request). */
  private readonly runs = new Map<string, Run>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly now: () => number = Date.now) {
    this.timer = setInterval(() => void this.sweep(this.now()), SWEEP_MS);
    this.timer.unref();
  }

  /** Synchronous inside: each request is counted before anything awaits, so each gets its own number. */
  async advance(appId: string, testId: string, at: number, script: string | null): Promise<RunTurn> {
    const k = `${appId}\0${testId}`;
    let run = this.runs.get(k);
    const expired = run !== undefined && run.touched <= at - TEST_RUN_TTL_MS;
    const otherScript = run !== undefined && script !== null && run.script !== null && run.script !== script;
    if (!run || expired || otherScript) run = { started: at, count: 0, touched: at, script: null, retryAfterAt: null, requests: [] };
    run.count++;
    run.touched = at;
    run.script = script ?? run.script;
    this.runs.delete(k);
    this.runs.set(k, run);
    for (const oldest of this.runs.keys()) {
      if (this.runs.size <= MAX_RUNS) break;
      this.runs.delete(oldest);
    }
    return { n: run.count, run: run.started, retryAfterAt: run.retryAfterAt };
  }

  async record(appId: string, testId: string, turn: RunTurn, request: TestRunRequestT, retryAfterAt: number | null): Promise<void> {
    const run = this.runs.get(`${appId}\0${testId}`);
    if (!run || run.started !== turn.run) return;
    if (retryAfterAt !== null) run.retryAfterAt = Math.max(run.retryAfterAt ?? 0, retryAfterAt);
    // In the run's order: a request answered before an earlier one goes before it.
    let at = run.requests.length;
    while (at > 0 && run.requests[at - 1]!.n > turn.n) at--;
    run.requests.splice(at, 0, { n: turn.n, request });
    if (run.requests.length > TEST_RUN_MAX_REQUESTS) run.requests.shift();
  }

  async read(appId: string, testId: string, now: number): Promise<TestRunRequestT[] | undefined> {
    const run = this.runs.get(`${appId}\0${testId}`);
    if (!run || run.touched <= now - TEST_RUN_TTL_MS) return undefined;
    return run.requests.map((r) => r.request);
  }

  async sweep(now: number): Promise<void> {
    for (const [k, run] of this.runs) if (run.touched <= now - TEST_RUN_TTL_MS) this.runs.delete(k);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
  }
}
