// STUB on branch confproduct: the clause → case matrix is built on another branch; the lead merges
// the real module. Only its signature is relied on here (the HTML reporter renders whatever it returns).
import type { CaseResult, Outcome } from './results.ts';

export interface Clause {
  id: string;
  section: string;
  text: string;
  checkable: 'exact' | 'weak' | 'outside';
  why?: string;
}

export interface MatrixRow {
  clause: Clause;
  cases: Array<{ id: string; outcome?: Outcome }>;
}

export function clauseMatrix(_results?: CaseResult[]): MatrixRow[] {
  return [];
}
