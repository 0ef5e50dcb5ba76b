// The clause matrix: every clause of the interface has a case or a written reason, every case names
// clauses that exist, and the reports carry the matrix.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLAUSES, clauseMatrix, matrixSummary } from '../conformance/clauses.ts';
import { CASES } from '../conformance/registry.ts';
import { clauseLine, render } from '../conformance/reporters.ts';
import type { RunResults } from '../conformance/run.ts';

test('clause ids are unique and well-formed', () => {
  assert.equal(new Set(CLAUSES.map((c) => c.id)).size, CLAUSES.length);
  for (const c of CLAUSES) assert.match(c.id, /^(§\d+(\.\d+)*\.[\w@.-]+|D-\d+)$/, c.id);
});

test('every case names at least one clause, and only clauses that exist', () => {
  const ids = new Set(CLAUSES.map((c) => c.id));
  for (const c of CASES) {
    assert.ok(c.clauses.length > 0, `${c.id} names no clause`);
    for (const id of c.clauses) assert.ok(ids.has(id), `${c.id} names ${id}, which is no clause`);
  }
});

test('every checkable clause has a case; a clause without one is a written decision', () => {
  for (const row of clauseMatrix()) {
    if (row.check === 'none') {
      assert.ok(row.why && row.why.length > 10, `${row.id}: not checkable, without a reason`);
      assert.deepEqual(row.cases, [], `${row.id} is marked not checkable but ${row.cases.map((c) => c.id).join(', ')} check it`);
    } else {
      assert.ok(row.cases.length > 0, `${row.id} (${row.check}) has no case`);
      if (row.check === 'weak') assert.ok(row.why && row.why.length > 10, `${row.id}: weak, without saying why`);
      // D-106: weak for one of two reasons only: the interface leaves a choice open (in its words), or the target cannot provoke the rest.
      if (row.check === 'weak')
        assert.ok(row.weakBecause === 'open' || row.weakBecause === 'unprovokable', `${row.id}: weak, for no reason of the two`);
      if (row.weakBecause === 'open')
        assert.ok(row.quote && row.quote.length > 5, `${row.id}: left open by the interface, without its words`);
      if (row.id.startsWith('D-') && row.check === 'weak')
        assert.equal(row.weakBecause, 'unprovokable', `${row.id}: a decision leaves nothing open`);
    }
  }
});

test('an interface clause checked exactly or weakly has a MUST case (a decision: any case)', () => {
  for (const row of clauseMatrix()) {
    if (row.check === 'none') continue;
    if (row.id.startsWith('D-')) assert.ok(row.cases.length > 0, row.id);
    else
      assert.ok(
        row.cases.some((c) => c.level === 'MUST'),
        `${row.id} is checked by REFERENCE cases only: ${row.cases.map((c) => c.id).join(', ')}`,
      );
  }
});

test('the errors of §5.6 and §7 have a row per endpoint, streaming ones twice', () => {
  const rowsOf = (prefix: string) => CLAUSES.filter((c) => c.id.startsWith(`${prefix}@`)).map((c) => c.id.split('@')[1]);
  const all = ['create', 'list', 'get', 'update', 'delete', 'send', 'send-stream', 'completion', 'completion-stream', 'config', 'metrics'];
  for (const p of ['§5.6.missing-key', '§5.6.invalid-key', '§5.6.access-denied', '§7.app-inactive', '§7.unknown-app', '§5.4.publishable'])
    assert.deepEqual(rowsOf(p), all, p);
  assert.deepEqual(rowsOf('§7.agent-unavailable'), ['send', 'send-stream', 'completion', 'completion-stream']);
  assert.deepEqual(rowsOf('§7.rate-limit'), ['send', 'send-stream']);
  for (const p of ['§7.unknown-conversation', '§7.other-app-conversation', '§7.other-team-conversation'])
    assert.deepEqual(rowsOf(p), ['get', 'update', 'delete', 'send', 'send-stream'], p);
});

test("the matrix carries a run's outcomes: json has it, pretty summarises it", () => {
  const results = CASES.map((c, i) => ({
    id: c.id,
    section: c.section,
    level: c.level,
    description: c.description,
    status: i === 0 ? ('failed' as const) : ('passed' as const),
    ms: 1,
    ...(i === 0 ? { failure: { message: 'x' } } : {}),
  }));
  const run = {
    runId: 'r',
    profile: 'reference',
    baseUrl: 'http://x/v1',
    appId: 'a',
    startedAt: '',
    ms: 1,
    results,
    summary: { passed: results.length - 1, failed: 1, flaky: 0, skipped: 0, errored: 0 },
    cleanup: { deleted: 0, failed: [] },
    suite: { name: 'parley-conformance', version: '0.0.0' },
    interfaceVersion: '1.0.0',
    preconditions: [],
    warnings: [],
    requests: { sent: 0, retried429: 0 },
  } as unknown as RunResults;
  const json = JSON.parse(render(run, 'json')) as { matrix: Array<{ id: string; cases: Array<{ id: string; status: string }> }> };
  assert.equal(json.matrix.length, CLAUSES.length);
  const first = CASES[0]!;
  const row = json.matrix.find((r) => r.id === first.clauses[0])!;
  assert.deepEqual(row.cases.find((c) => c.id === first.id)?.status, 'failed');
  const m = matrixSummary(clauseMatrix(results));
  assert.equal(m.exact + m.weak + m.none, CLAUSES.length);
  assert.equal(m.weakOpen + m.weakUnprovokable, m.weak);
  assert.ok((m.failed ?? 0) >= 1);
  assert.equal(m.reached, m.exact + m.weak);
  assert.match(
    clauseLine(run),
    /^clauses: \d+ of the \d+ checkable clauses this run's cases reached are covered by a passing case, \d+ hit by a failing case \(\d+ clauses: \d+ checked exactly, \d+ weakly \(\d+ left open by the interface, \d+ the target cannot provoke\), \d+ not checkable/,
  );
  assert.match(render(run, 'pretty'), /\nclauses: \d+ of the \d+ checkable clauses/);
  // A run of one case reaches only that case's clauses; the rest are "not reached".
  const one = { ...run, results: results.slice(1, 2) };
  assert.match(
    clauseLine(one),
    new RegExp(
      `^clauses: ${CASES[1]!.clauses.filter((id) => CLAUSES.find((c) => c.id === id)!.check !== 'none').length} of the \\d+ .*; \\d+ not reached by the selected cases`,
    ),
  );
  // A case the run did not select is "not run".
  assert.ok(clauseMatrix(results.slice(1)).some((r) => r.cases.some((c) => c.id === first.id && c.status === 'not run')));
});
