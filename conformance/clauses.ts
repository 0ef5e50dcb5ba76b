// The clause → case matrix: every clause of the interface (interface-clauses.ts) with the cases that
// name it and, after a run, how each ended. docs/conformance-reference.md and every report render it.
import type { Level } from './context.ts';
import { CLAUSES, type CheckKind, type Clause } from './interface-clauses.ts';
import { CASES } from './registry.ts';

export { CLAUSES, clause, rows, ENDPOINTS, type CheckKind, type Clause, type EndpointKey, type WeakReason } from './interface-clauses.ts';

export interface MatrixCase {
  id: string;
  level: Level;
  /** With results: how the case ended in this run. */
  status?: 'passed' | 'failed' | 'skipped' | 'errored' | 'not run';
}

export interface MatrixRow extends Clause {
  cases: MatrixCase[];
}

/** A case's outcome as the matrix shows it; results come from run.ts (kept structural to avoid an import circle). */
interface ResultLike {
  id: string;
  status: string;
}

/**
 * One row per clause, with the cases that name it (and, given a run's results, how each ended;
 * a case the run did not select is "not run").
 */
export function clauseMatrix(
  results?: readonly ResultLike[],
  cases: readonly { id: string; level: Level; clauses: readonly string[] }[] = CASES,
): MatrixRow[] {
  const outcome = results ? new Map(results.map((r) => [r.id, r.status])) : undefined;
  return CLAUSES.map((c) => ({
    ...c,
    cases: cases
      .filter((k) => k.clauses.includes(c.id))
      .map((k) => ({ id: k.id, level: k.level, ...(outcome ? { status: (outcome.get(k.id) ?? 'not run') as MatrixCase['status'] } : {}) })),
  }));
}

/**
 * Counts for a summary line: clauses by kind and, given a run's outcomes, how many checkable clauses
 * its cases reached (ran, skipped or not), how many a passing case covered and how many a failing one hit.
 */
export function matrixSummary(matrix: readonly MatrixRow[]): {
  clauses: number;
  exact: number;
  weak: number;
  /** Of the weak ones: the interface leaves a choice open, or the target cannot provoke the rest. */
  weakOpen: number;
  weakUnprovokable: number;
  none: number;
  reached?: number;
  covered?: number;
  failed?: number;
} {
  const count = (k: CheckKind) => matrix.filter((r) => r.check === k).length;
  const s = {
    clauses: matrix.length,
    exact: count('exact'),
    weak: count('weak'),
    weakOpen: matrix.filter((r) => r.weakBecause === 'open').length,
    weakUnprovokable: matrix.filter((r) => r.weakBecause === 'unprovokable').length,
    none: count('none'),
  };
  if (!matrix.some((r) => r.cases.some((c) => c.status !== undefined))) return s;
  const reached = matrix.filter((r) => r.check !== 'none' && r.cases.some((c) => c.status !== undefined && c.status !== 'not run'));
  return {
    ...s,
    reached: reached.length,
    covered: reached.filter((r) => r.cases.some((c) => c.status === 'passed')).length,
    failed: reached.filter((r) => r.cases.some((c) => c.status === 'failed')).length,
  };
}

/** How a clause is checked, as the matrix says it: exactly, weakly and why (quoting the interface where it leaves the choice open), or not. */
export function howChecked(c: Clause): string {
  if (c.check === 'exact') return 'exactly';
  if (c.check === 'none') return `not checkable: ${c.why ?? ''}`;
  if (c.weakBecause === 'open') return `weakly, the interface leaves it open ("${c.quote}"): ${c.why ?? ''}`;
  return `weakly, the target cannot provoke the rest: ${c.why ?? ''}`;
}

/** The matrix's counts in words: `183 checked exactly, 50 weakly (41 left open by the interface, 9 the target cannot provoke), 29 not checkable`. */
export function countsText(m: ReturnType<typeof matrixSummary>): string {
  return `${m.exact} checked exactly, ${m.weak} weakly (${m.weakOpen} left open by the interface, ${m.weakUnprovokable} the target cannot provoke), ${m.none} not checkable`;
}
