// Proves the conformance suite: each broken implementation of test/mutants.ts (a loopback proxy in
// front of a fresh reference server) makes the suite fail with the case that should catch it.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { runConformance } from '../conformance/run.ts';
import { parseTarget } from '../conformance/target.ts';
import { FIXTURES_DIR, startTestServer } from './helpers.ts';
import { startMutantProxy } from './mutant-proxy.ts';
import { MUTANTS } from './mutants.ts';

const targetJson = JSON.parse(await fs.readFile(path.join(FIXTURES_DIR, 'target.json'), 'utf8'));
const caught: string[] = [];
describe('each broken implementation is caught by its case', { concurrency: 4 }, () => {
  for (const m of MUTANTS) {
    test(`${m.id}: ${m.breaks} → ${m.caughtBy} (${m.profile})`, { timeout: 60_000 }, async () => {
      const server = await startTestServer();
      const proxy = await startMutantProxy(server.baseUrl, m.hooks(), m.basePath);
      try {
        const r = await runConformance({ target: parseTarget(targetJson, { baseUrl: proxy.baseUrl }), profile: m.profile, only: m.caughtBy, timeoutMs: m.timeoutMs ?? 10_000 });
        const result = r.results.find((c) => c.id === m.caughtBy);
        assert.ok(result, `case ${m.caughtBy} did not run`);
        assert.equal(result.status, 'failed', `${m.caughtBy} ${result.status} against ${m.id}`);
        assert.ok(result.failure?.message, 'a failure says what was expected');
        caught.push(m.id);
      } finally {
        await proxy.close();
        await server.close();
      }
    });
  }
});

after(() => {
  // Reported in the test output and in docs/conformance.md.
  console.log(`conformance mutants: ${caught.length} of ${MUTANTS.length} broken implementations caught by the case that should catch them`);
});

test('the broken implementations span every section of the interface', () => {
  assert.ok(MUTANTS.length >= 40, `only ${MUTANTS.length} mutants`);
  const sections = new Set(MUTANTS.map((m) => m.section.replace(/^(\d+)\..*$/, '$1')));
  for (const s of ['1', '3', '4', '5', '6', '7', '8', '9']) assert.ok(sections.has(s), `no mutant for §${s}`);
  assert.equal(new Set(MUTANTS.map((m) => m.id)).size, MUTANTS.length, 'mutant ids are unique');
});
