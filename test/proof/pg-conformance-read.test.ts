// The cases that read everything the docs promise (webhooks D-80…D-87, the admin's session D-67, stop
// means stop D-33 and D-19) on Parley over PostgreSQL: where a rule lives in the store (an endpoint
// deleted, a 410's disablement, the delivery log, a session ended, a cancel, a completion left) the
// store is what the case judges. Each broken implementation of read-mutants.ts, in front of Parley on
// PostgreSQL, is caught by its case for its reason, as conformance-mutants.test.ts proves on files.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runConformance } from '../../conformance/run.ts';
import { parseTarget } from '../../conformance/target.ts';
import { startTestServer, TARGET_JSON } from '../support/helpers.ts';
import { startMutantProxy } from '../support/mutant-proxy.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { READ_MUTANTS } from '../support/read-mutants.ts';

usePostgres();

/** The cases this proof is about: the ones the broken implementations of read-mutants.ts name. */
const READING = [...new Set(READ_MUTANTS.map((m) => m.caughtBy))];

test('Parley on PostgreSQL passes every reading case', { timeout: 120_000 }, async (t) => {
  const server = await startTestServer({ databaseUrl: await freshDatabase() });
  t.after(() => server.close());
  const r = await runConformance({
    target: parseTarget(TARGET_JSON, { baseUrl: server.baseUrl }),
    profile: 'reference',
    only: READING.join(','),
    timeoutMs: 10_000,
    handleSignals: false,
  });
  assert.deepEqual(r.results.map((c) => c.id).sort(), [...READING].sort());
  assert.deepEqual(
    r.results.filter((c) => c.status !== 'passed').map((c) => `${c.id}: ${c.status} ${c.failure?.message ?? c.reason ?? ''}`),
    [],
  );
});

describe('on PostgreSQL, each broken implementation of a reading case is caught by it, for its reason', { concurrency: 3 }, () => {
  for (const m of READ_MUTANTS) {
    test(`${m.id} → ${m.caughtBy}`, { timeout: 120_000 }, async () => {
      // D-85: a first retry well within the run's settle timeout, as conformance-mutants.test.ts has it.
      const server = await startTestServer({ databaseUrl: await freshDatabase(), webhookRetrySchedule: [0.5, 1, 2] });
      const proxy = await startMutantProxy(server.baseUrl, m.hooks(), '/v1', {
        passThrough: (req) => req.path.startsWith(`/apps/${TARGET_JSON.apps.slow}/`),
      });
      try {
        const r = await runConformance({
          target: parseTarget(TARGET_JSON, { baseUrl: proxy.baseUrl }),
          profile: 'reference',
          only: m.caughtBy,
          timeoutMs: 10_000,
          settleTimeoutMs: 10_000,
          handleSignals: false,
          maxRetryWaitMs: 0,
        });
        const result = r.results.find((c) => c.id === m.caughtBy);
        assert.equal(result?.status, 'failed', `${m.caughtBy} ${result?.status} against ${m.id}`);
        assert.match(result!.failure!.message, m.because);
      } finally {
        await proxy.close();
        await server.close();
      }
    });
  }
});
