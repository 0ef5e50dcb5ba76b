// The test runs on PostgreSQL (D-125), shared by every instance: one row per run (`test_runs`) whose
// counter an upsert advances, its row lock making the requests of one test id take turns across
// instances, each numbered after the one before (two instances behind a balancer follow one script);
// and one row per request seen (`test_run_requests`), of the run as it started. The memory twin of
// one process is file/test-runs.ts.
import type { Sql } from 'postgres';
import type { TestRunRequestT } from '../../contract/scenarios.ts';
import { type RunTurn, TEST_RUN_MAX_REQUESTS, TEST_RUN_TTL_MS, type TestRuns } from '../test-runs.ts';

/** How often runs past their hour are deleted. */
const SWEEP_MS = 600_000;

export const TEST_RUNS_MIGRATION = {
  version: 14,
  name: 'test runs',
  sql: `
    -- D-125: a run's step counter and what it follows, one row per app and test id; started_at names
    -- the run (a run begun anew after its hour or on another script is another run).
    CREATE TABLE test_runs (
      app_id text NOT NULL,
      test_id text NOT NULL,
      started_at bigint NOT NULL,
      count bigint NOT NULL,
      touched_at bigint NOT NULL,
      script text,
      retry_after_at bigint,
      PRIMARY KEY (app_id, test_id)
    );
    CREATE INDEX test_runs_touched ON test_runs (touched_at);
    -- The requests seen, as the API lists them (JSON text), in their order within their run.
    CREATE TABLE test_run_requests (
      app_id text NOT NULL,
      test_id text NOT NULL,
      started_at bigint NOT NULL,
      n bigint NOT NULL,
      body text NOT NULL,
      PRIMARY KEY (app_id, test_id, started_at, n)
    );
  `,
};

export class PgTestRuns implements TestRuns {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly now: () => number = Date.now,
  ) {}

  /** Deletes what expired, now and every ten minutes. */
  async open(): Promise<this> {
    await this.sweep(this.now());
    this.timer = setInterval(() => void this.sweep(this.now()).catch(() => {}), SWEEP_MS);
    this.timer.unref();
    return this;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
  }

  async advance(appId: string, testId: string, at: number, script: string | null): Promise<RunTurn> {
    // One statement: a run past its hour, or following another script, begins anew in the same upsert.
    const expired = this.sql`r.touched_at <= ${at - TEST_RUN_TTL_MS}::bigint`;
    const other = script === null ? this.sql`false` : this.sql`(r.script IS NOT NULL AND r.script <> ${script})`;
    const anew = this.sql`(${expired} OR ${other})`;
    const [row] = await this.sql<{ count: string; started_at: string; retry_after_at: string | null }[]>`
      INSERT INTO test_runs AS r (app_id, test_id, started_at, count, touched_at, script)
      VALUES (${appId}, ${testId}, ${at}, 1, ${at}, ${script})
      ON CONFLICT (app_id, test_id) DO UPDATE SET
        started_at = CASE WHEN ${anew} THEN ${at}::bigint ELSE r.started_at END,
        count = CASE WHEN ${anew} THEN 1 ELSE r.count + 1 END,
        retry_after_at = CASE WHEN ${anew} THEN NULL ELSE r.retry_after_at END,
        script = COALESCE(${script}::text, CASE WHEN ${expired} THEN NULL ELSE r.script END),
        touched_at = ${at}
      RETURNING count, started_at, retry_after_at`;
    return {
      n: Number(row!.count),
      run: Number(row!.started_at),
      retryAfterAt: row!.retry_after_at === null ? null : Number(row!.retry_after_at),
    };
  }

  async record(appId: string, testId: string, turn: RunTurn, request: TestRunRequestT, retryAfterAt: number | null): Promise<void> {
    await this.sql.begin(async (sql) => {
      // Only into its run as it is: one begun anew since keeps it out.
      await sql`INSERT INTO test_run_requests (app_id, test_id, started_at, n, body)
                SELECT ${appId}, ${testId}, ${turn.run}::bigint, ${turn.n}::bigint, ${JSON.stringify(request)}
                WHERE EXISTS (SELECT 1 FROM test_runs WHERE app_id = ${appId} AND test_id = ${testId} AND started_at = ${turn.run})
                ON CONFLICT DO NOTHING`;
      // Its run's list keeps the latest requests only.
      if (turn.n > TEST_RUN_MAX_REQUESTS)
        await sql`DELETE FROM test_run_requests WHERE app_id = ${appId} AND test_id = ${testId} AND started_at = ${turn.run}
                  AND n <= ${turn.n - TEST_RUN_MAX_REQUESTS}`;
      if (retryAfterAt !== null)
        await sql`UPDATE test_runs SET retry_after_at = GREATEST(COALESCE(retry_after_at, 0), ${retryAfterAt}::bigint)
                  WHERE app_id = ${appId} AND test_id = ${testId} AND started_at = ${turn.run}`;
    });
  }

  async read(appId: string, testId: string, now: number): Promise<TestRunRequestT[] | undefined> {
    const [run] = await this.sql<{ started_at: string }[]>`
      SELECT started_at FROM test_runs WHERE app_id = ${appId} AND test_id = ${testId} AND touched_at > ${now - TEST_RUN_TTL_MS}`;
    if (!run) return undefined;
    const rows = await this.sql<{ body: string }[]>`
      SELECT body FROM test_run_requests WHERE app_id = ${appId} AND test_id = ${testId} AND started_at = ${run.started_at}
      ORDER BY n DESC LIMIT ${TEST_RUN_MAX_REQUESTS}`;
    return rows.reverse().map((r) => JSON.parse(r.body) as TestRunRequestT);
  }

  /** Runs past their hour go, and the requests of runs that are gone or begun anew. */
  async sweep(now: number): Promise<void> {
    await this.sql`DELETE FROM test_runs WHERE touched_at <= ${now - TEST_RUN_TTL_MS}`;
    await this.sql`DELETE FROM test_run_requests q WHERE NOT EXISTS (
      SELECT 1 FROM test_runs r WHERE r.app_id = q.app_id AND r.test_id = q.test_id AND r.started_at = q.started_at)`;
  }
}
