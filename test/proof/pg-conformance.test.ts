// The conformance suite, in both profiles, against Parley on PostgreSQL as a process (src/main.ts with
// --database-url, test/support/fleet.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runConformance, selectCases, type RunResults } from '../../conformance/run.ts';
import { parseTarget } from '../../conformance/target.ts';
import { TARGET } from '../support/helpers.ts';
import { startFleet, type Fleet } from '../support/fleet.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

function failures(r: RunResults): string {
  return r.results
    .filter((c) => c.status === 'failed' || c.status === 'errored')
    .map((c) => `${c.id}: ${c.failure?.message}\n${c.failure?.curl}\n${c.failure?.response}`)
    .join('\n\n');
}

async function conforms(baseUrl: string, profile: 'spec' | 'reference'): Promise<RunResults> {
  const r = await runConformance({ target: parseTarget(TARGET, { baseUrl }), profile, timeoutMs: 10_000 });
  assert.equal(r.summary.failed + r.summary.errored, 0, failures(r));
  assert.deepEqual(r.results.filter((c) => c.status === 'skipped').map((c) => `${c.id}: ${c.reason}`), []);
  assert.equal(r.results.length, selectCases({ profile }).length);
  assert.deepEqual(r.cleanup.failed, []);
  return r;
}

describe('one Parley on PostgreSQL conforms', () => {
  let fleet: Fleet;
  before(async () => {
    fleet = await startFleet(1, { databaseUrl: await freshDatabase() });
  });
  after(() => fleet?.close());
  for (const profile of ['spec', 'reference'] as const) {
    test(`profile ${profile}: every case passes, none skipped`, { timeout: 240_000 }, async (t) => {
      const r = await conforms(fleet.instances[0]!.base, profile);
      t.diagnostic(`${profile}: ${r.summary.passed} passed`);
    });
  }
});
