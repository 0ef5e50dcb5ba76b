// The client kit's self-proof (docs/client-kit.md): the reference client passes every case, MUST and
// SHOULD, and each broken copy of it fails the case that names its fault, for that reason.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CLIENT_CASES, runClientKit } from '../../conformance/client/kit.ts';
import type { RunResults } from '../../conformance/results.ts';
import { CLIENT_MUTANTS, REFERENCE_CLIENT, writeMutant } from '../support/client-mutants.ts';
import { tempDir } from '../support/helpers.ts';

const run = (file: string, only?: string) =>
  runClientKit({ cmd: `node --import tsx ${file}`, cases: CLIENT_CASES.filter((c) => !only || c.id === only), timeoutMs: 60_000 });

function failures(r: RunResults): string {
  return r.results
    .filter((c) => c.status !== 'passed')
    .map((c) => `${c.id} ${c.status}: ${c.failure?.message ?? c.reason}\n${c.failure?.response ?? ''}`)
    .join('\n\n');
}

describe('the client kit judges clients', () => {
  test('the reference client passes every case, MUST and SHOULD', { timeout: 300_000 }, async () => {
    const r = await run(REFERENCE_CLIENT);
    assert.equal(r.summary.failed + r.summary.errored + r.summary.skipped, 0, failures(r));
    assert.equal(r.results.filter((c) => c.level === 'MUST').length, CLIENT_CASES.length);
  });

  for (const m of CLIENT_MUTANTS) {
    test(`a client that ${m.name} fails ${m.fails}`, { timeout: 120_000 }, async () => {
      const file = await writeMutant(m, await tempDir('parley-client-mutant-'));
      const r = await run(file, m.fails.replace(/\/should$/, ''));
      const judged = r.results.find((c) => c.id === m.fails);
      assert.ok(judged, `no result ${m.fails}: ${failures(r)}`);
      assert.equal(judged.status, 'failed', `${m.fails} passed a client that ${m.name}`);
      assert.match(judged.failure!.message, m.because);
    });
  }
});
