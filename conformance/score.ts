// The score of a run (D-105, extended: capabilities): the interface's cases, each claimed capability's,
// and a pass rate over all that count; in words for the reporters.
import type { Claims } from './capabilities.ts';
import { CAPABILITIES } from './capabilities.ts';
import { summarize } from './outcomes.ts';
import type { CapabilityScore, CaseResult, GroupScore, Score } from './results.ts';

function group(results: readonly CaseResult[]): GroupScore {
  const counts = summarize(results);
  return { ...counts, total: results.length, passRate: results.length > 0 ? counts.passed / results.length : null };
}

export function scoreOf(results: readonly CaseResult[], claims: Claims): Score {
  const counted = results.filter((r) => !r.capability || claims[r.capability].claimed);
  return {
    interface: group(results.filter((r) => !r.capability)),
    capabilities: CAPABILITIES.map((name) => {
      const mine = results.filter((r) => r.capability === name);
      return { name, ...claims[name], cases: mine.length, ...group(claims[name].claimed ? mine : []) };
    }),
    overall: group(counted),
  };
}

/** `97.4%`: rounded down, so that 100% means every counted case passed. */
export function percent(rate: number | null): string {
  if (rate === null) return 'n/a';
  const tenths = Math.floor(rate * 1000 + 1e-9) / 10;
  return `${Number.isInteger(tenths) ? tenths.toFixed(0) : tenths.toFixed(1)}%`;
}

/** What counts towards the score, as every reporter says it. */
export const COUNTED = "the interface's cases and those of the capabilities the target claims";

/** `3 of 4 passed (75%)` */
export function passedOf(g: GroupScore): string {
  return `${g.passed} of ${g.total} passed (${percent(g.passRate)})`;
}

/**
 * A capability in every reporter's words: whether and how the target claims it, and, when its cases make
 * no pass rate, why (`unscored`; null when the rate stands).
 */
export function capabilityWords(c: CapabilityScore): { how: string; unscored: string | null } {
  if (!c.claimed) {
    return {
      how: c.how === 'declared' ? 'not declared' : 'not claimed (inferred)',
      unscored: `${c.cases} case${c.cases === 1 ? '' : 's'} skipped, not counted`,
    };
  }
  return { how: c.how, unscored: c.cases === 0 ? 'no case of it in this run' : null };
}

/** One line per group, as the pretty reporter ends and the docs show. */
export function scoreLines(score: Score): string[] {
  const rate = (g: GroupScore) => (g.total === 0 ? 'no case counted' : `${passedOf(g)}${notPassed(g)}`);
  const rows: Array<[string, string, string]> = [['interface', 'always', rate(score.interface)]];
  for (const c of score.capabilities) {
    const { how, unscored } = capabilityWords(c);
    rows.push([c.name, how, unscored ?? rate(c)]);
  }
  const w0 = Math.max(...rows.map((r) => r[0].length));
  const w1 = Math.max(...rows.map((r) => r[1].length));
  return rows.map(([a, b, c]) => `  ${a.padEnd(w0)}  ${b.padEnd(w1)}  ${c}`);
}

function notPassed(g: GroupScore): string {
  const parts = (['failed', 'flaky', 'errored', 'skipped'] as const).filter((k) => g[k] > 0).map((k) => `${g[k]} ${k}`);
  return parts.length ? `; ${parts.join(', ')}` : '';
}
