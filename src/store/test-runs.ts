// Test runs (docs/scenarios.md, D-125): per app and test id, the count of its requests (the script's step
// counter) and the requests seen. Two backends behind this interface: one process's memory
// (file/test-runs.ts) and PostgreSQL's rows (pg/test-runs.ts), so that instances behind a balancer
// follow one script and answer one test run; src/store/backend.ts opens one or the other.
import type { TestRunRequestT } from '../contract/scenarios.ts';

/** D-125: a test run is forgotten this long after its last request (D-36's hour), and swept. */
export const TEST_RUN_TTL_MS = 60 * 60_000;
/** D-125: the most requests a run lists (the earliest go first); its counter goes on. */
export const TEST_RUN_MAX_REQUESTS = 1_000;

/** A request's turn in its run, as `advance` counted it. */
export interface RunTurn {
  /** Its number in the run (1: the first). */
  n: number;
  /** The run's start (ms): a run begun anew after its expiry or a new script is another run. */
  run: number;
  /** When an answer of the run last carried `Retry-After` (ms); null when none did. */
  retryAfterAt: number | null;
}

export interface TestRuns {
  /**
   * Counts a request of (`appId`, `testId`) at `at` (ms), atomically across instances: of concurrent
   * requests each gets its own number. A run past its hour begins anew; so does one whose `script`
   * differs from the one it follows (a key's script set again, another script named; null: any).
   */
  advance(appId: string, testId: string, at: number, script: string | null): Promise<RunTurn>;
  /**
   * Lists an answered request in its run (a run begun anew since `turn` keeps it out).
   * `retryAfterAt`: when its answer, which carried `Retry-After`, was made (ms); null when it carried none.
   */
  record(appId: string, testId: string, turn: RunTurn, request: TestRunRequestT, retryAfterAt: number | null): Promise<void>;
  /** The run's requests in their order; undefined when there is none (or it expired) at `now`. */
  read(appId: string, testId: string, now: number): Promise<TestRunRequestT[] | undefined>;
  /** Forgets the runs past their hour at `now` (each backend also does so by itself). */
  sweep(now: number): Promise<void>;
  close(): Promise<void>;
}
