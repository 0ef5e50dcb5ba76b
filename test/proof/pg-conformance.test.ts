// The conformance suite, in both profiles, against Parley on PostgreSQL as a process (src/main.ts with
// --database-url): one instance, and two instances on one database behind a round-robin proxy
// (test/support/fleet.ts), where consecutive requests of one case land on different instances.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runConformance, selectCases, type RunResults } from '../../conformance/run.ts';
import { parseTarget } from '../../conformance/target.ts';
import { TARGET } from '../support/helpers.ts';
import { startFleet, startProxy, type Fleet, type ReverseProxy } from '../support/fleet.ts';
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
  assert.deepEqual(
    r.results.filter((c) => c.status === 'skipped').map((c) => `${c.id}: ${c.reason}`),
    [],
  );
  assert.equal(r.results.length, selectCases({ profile }).length);
  assert.deepEqual(r.cleanup.failed, []);
  return r;
}

// Each profile on a database of its own: the rate-limit case uses up apps.rate_limited's minute, which
// a second run on the same database would wait out (D-109).
describe('one Parley on PostgreSQL conforms', () => {
  for (const profile of ['spec', 'reference'] as const) {
    test(`profile ${profile}: every case passes, none skipped`, { timeout: 240_000 }, async (t) => {
      const fleet: Fleet = await startFleet(1, { databaseUrl: await freshDatabase() });
      t.after(() => fleet.close());
      const r = await conforms(fleet.instances[0]!.base, profile);
      t.diagnostic(`${profile}: ${r.summary.passed} passed`);
    });
  }
});

describe('two Parley instances on one database behind a round-robin proxy conform', () => {
  for (const profile of ['spec', 'reference'] as const) {
    test(`profile ${profile}: every case passes, none skipped, both instances served`, { timeout: 240_000 }, async (t) => {
      const fleet: Fleet = await startFleet(2, { databaseUrl: await freshDatabase() });
      const proxy: ReverseProxy = await startProxy(fleet.instances.map((i) => i.origin));
      t.after(async () => {
        await proxy.close();
        await fleet.close();
      });
      const before = [...proxy.served.values()];
      const r = await conforms(proxy.base, profile);
      const counts = [...proxy.served.values()].map((n, i) => n - before[i]!);
      t.diagnostic(`${profile}: ${r.summary.passed} passed; requests per instance ${counts.join(', ')}`);
      for (const n of counts) assert.ok(n > 50, `an instance served only ${n} requests`);
    });
  }
});
