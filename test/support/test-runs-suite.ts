// The behaviours every test-run backend keeps (src/store/test-runs.ts, docs/scenarios.md, D-125, D-126):
// one suite, run by test/test-runs-contract.test.ts (one process's memory, the file store's) and
// test/proof/pg-test-runs-contract.test.ts (PostgreSQL, where two instances share the counter).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestRunRequestT } from '../../src/contract/scenarios.ts';
import { TEST_RUN_MAX_REQUESTS, TEST_RUN_TTL_MS, type TestRuns } from '../../src/store/test-runs.ts';

export interface TestRunsHarness {
  /** Fresh, empty runs; `twin` a second view of the same runs where the backend is shared (another instance), else the same. */
  fresh(): Promise<{ runs: TestRuns; twin: TestRuns; close(): Promise<void> }>;
}

const T0 = 1_800_000_000_000;

/** A request of a run as the service lists it. */
export const seen = (at: number, step: number | null, status: number, gap: number | null = null): TestRunRequestT => ({
  at_ms: at,
  method: 'POST',
  path: '/v1/apps/app_demo/conversations',
  step,
  status,
  idempotency_key: null,
  last_event_id: null,
  starting_after: null,
  retry_after_gap_ms: gap,
});

export function testRunsSuite(name: string, h: TestRunsHarness): void {
  const withRuns = (title: string, fn: (r: { runs: TestRuns; twin: TestRuns }) => Promise<void>) =>
    test(`${name}: ${title}`, async () => {
      const f = await h.fresh();
      try {
        await fn(f);
      } finally {
        await f.close();
      }
    });

  withRuns('D-125: concurrent requests of one test id, on either instance, each get their own number', async ({ runs, twin }) => {
    const turns = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? twin : runs).advance('app_demo', 't1', T0 + i, 'script:a')),
    );
    assert.deepEqual(
      turns.map((t) => t.n).sort((a, b) => a - b),
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    assert.equal(new Set(turns.map((t) => t.run)).size, 1, 'one run');
    // Another app's, or another test id's, run counts apart.
    assert.equal((await runs.advance('app_other', 't1', T0, 'script:a')).n, 1);
    assert.equal((await twin.advance('app_demo', 't2', T0, null)).n, 1);
  });

  withRuns('D-125: the requests are listed in their order, with when an answer last carried Retry-After', async ({ runs, twin }) => {
    const a = await runs.advance('app_demo', 't', T0, null);
    assert.equal(a.retryAfterAt, null);
    const b = await twin.advance('app_demo', 't', T0 + 10, null);
    // Answered out of order: the list keeps the order they came in.
    await twin.record('app_demo', 't', b, seen(T0 + 10, null, 200), null);
    await runs.record('app_demo', 't', a, seen(T0, null, 429), T0 + 5);
    const c = await runs.advance('app_demo', 't', T0 + 1_005, null);
    assert.equal(c.n, 3);
    assert.equal(c.retryAfterAt, T0 + 5, "the 429's answer, seen by the other instance's next request");
    await runs.record('app_demo', 't', c, seen(T0 + 1_005, null, 200, 1_000), null);
    assert.deepEqual(await twin.read('app_demo', 't', T0 + 2_000), [
      seen(T0, null, 429),
      seen(T0 + 10, null, 200),
      seen(T0 + 1_005, null, 200, 1_000),
    ]);
    assert.equal(await runs.read('app_demo', 'unknown', T0), undefined);
    assert.equal(await runs.read('app_other', 't', T0), undefined, "another app's run of the same test id is its own");
  });

  withRuns('D-125: a run lasts an hour from its last request; then it is gone, and begins anew', async ({ runs, twin }) => {
    const a = await runs.advance('app_demo', 't', T0, null);
    await runs.record('app_demo', 't', a, seen(T0, null, 503), T0);
    assert.ok(await twin.read('app_demo', 't', T0 + TEST_RUN_TTL_MS - 1));
    assert.equal(await twin.read('app_demo', 't', T0 + TEST_RUN_TTL_MS), undefined);
    const b = await twin.advance('app_demo', 't', T0 + TEST_RUN_TTL_MS, null);
    assert.deepEqual([b.n, b.retryAfterAt], [1, null], 'a new run: counted from 1, no earlier Retry-After');
    // The old run's request, answered late, is not listed in the new one.
    await runs.record('app_demo', 't', a, seen(T0, null, 500), null);
    assert.deepEqual(await runs.read('app_demo', 't', T0 + TEST_RUN_TTL_MS), []);
    await runs.sweep(T0 + 2 * TEST_RUN_TTL_MS);
    assert.equal(await twin.read('app_demo', 't', T0 + TEST_RUN_TTL_MS), undefined, 'swept');
  });

  withRuns('D-126: a run follows one script: naming another begins it anew; a request naming none counts in it', async ({ runs, twin }) => {
    await runs.advance('app_demo', 't', T0, 'script:a');
    assert.equal((await twin.advance('app_demo', 't', T0 + 1, null)).n, 2);
    assert.equal((await twin.advance('app_demo', 't', T0 + 2, 'script:a')).n, 3);
    const b = await runs.advance('app_demo', 't', T0 + 3, 'key@2');
    assert.equal(b.n, 1);
    assert.equal((await twin.advance('app_demo', 't', T0 + 4, 'key@2')).n, 2);
  });

  withRuns(`D-125: a run lists its latest ${TEST_RUN_MAX_REQUESTS} requests; its counter goes on`, async ({ runs }) => {
    for (let i = 0; i < TEST_RUN_MAX_REQUESTS + 2; i++) {
      const t = await runs.advance('app_demo', 't', T0 + i, null);
      await runs.record('app_demo', 't', t, seen(T0 + i, null, 200), null);
    }
    const listed = (await runs.read('app_demo', 't', T0 + 5_000))!;
    assert.equal(listed.length, TEST_RUN_MAX_REQUESTS);
    assert.equal(listed[0]!.at_ms, T0 + 2);
    assert.equal(listed.at(-1)!.at_ms, T0 + TEST_RUN_MAX_REQUESTS + 1);
  });
}
