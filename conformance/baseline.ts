// --expected-failures FILE and --write-baseline FILE: the cases a team knows its implementation
// fails, or fails now and then, each with a reason. A listed case that ends as listed does not fail
// the run; an entry that no longer says what happens does (it is stale), so that the list shrinks as
// the implementation improves (D-105).
//
// The file is text, one case a line: `<case id> <reason>` for a case that fails, `<case id> [flaky]
// <reason>` for one that fails now and then; a line that starts with `#` is a comment, blank lines
// are ignored.
import fs from 'node:fs/promises';
import { CASES } from './registry.ts';
import type { CaseResult, RunResults } from './results.ts';
import { UsageError } from './target.ts';
import { INTERFACE_VERSION } from './version.ts';

/** What a baseline says of a case: it fails (every time), or it is flaky (it may pass or fail). */
export interface BaselineEntry {
  state: 'fails' | 'flaky';
  reason: string;
}

/** Case id → what the team expects of it and why. */
export type Baseline = Map<string, BaselineEntry>;

const FLAKY = '[flaky]';

export function parseBaseline(text: string, source: string): Baseline {
  const known = new Set(CASES.map((c) => c.id));
  const out: Baseline = new Map();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const where = `${source}:${i + 1}`;
    const m = /^(\S+)\s+(?:(\[flaky\])\s*)?(.*)$/.exec(line);
    if (!m?.[3])
      throw new UsageError(
        `${where}: "${line}" has no reason: write "<case id> <why it is expected to fail>" (or "<case id> [flaky] <why>")`,
      );
    const [, id, flaky, reason] = m as unknown as [string, string, string | undefined, string];
    if (!known.has(id)) throw new UsageError(`${where}: ${id} is no case of this suite (see --list)`);
    if (out.has(id)) throw new UsageError(`${where}: ${id} is listed twice`);
    out.set(id, { state: flaky ? 'flaky' : 'fails', reason });
  });
  return out;
}

export async function loadBaseline(file: string): Promise<Baseline> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read --expected-failures file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parseBaseline(text, file);
}

/**
 * Why an entry no longer holds, for each state (D-105): listed as failing, the case passed, or passed
 * on a retry (it is flaky now); listed as flaky, it failed every one of several tries (it fails now).
 * A flaky case that failed its only try did what its entry says. Undefined while it holds.
 */
function staleness(entry: BaselineEntry, r: CaseResult): string | undefined {
  const failed = r.status === 'failed' || r.status === 'errored';
  if (entry.state === 'fails') {
    if (r.status === 'passed') return 'listed as failing, but it passed: delete its line';
    if (r.status === 'flaky') return `listed as failing, but it passed on a retry: mark it ${FLAKY}, or fix it`;
    return undefined;
  }
  const tries = Math.max(r.tries ?? 1, r.runs ?? 1);
  return failed && tries > 1 ? `listed as ${FLAKY}, but it failed all ${tries} tries: list it as failing, or fix it` : undefined;
}

/** Marks the listed cases with what the baseline says, and returns the run's baseline summary. */
export function applyBaseline(results: CaseResult[], baseline: Baseline, file: string): NonNullable<RunResults['baseline']> {
  const stale: string[] = [];
  let expected = 0;
  let flaky = 0;
  for (const r of results) {
    const entry = baseline.get(r.id);
    if (entry === undefined) continue;
    if (entry.state === 'fails') r.expectedFailure = entry.reason;
    else r.expectedFlaky = entry.reason;
    if (r.status === 'skipped') continue;
    const why = staleness(entry, r);
    if (why) {
      r.stale = why;
      stale.push(r.id);
    } else if (entry.state === 'fails') expected++;
    else flaky++;
  }
  const ran = new Set(results.map((r) => r.id));
  return { file, expected, flaky, stale, unknown: [...baseline.keys()].filter((id) => !ran.has(id)) };
}

/**
 * What the baseline excuses of a case that failed or errored this run, in the reporters' words: an
 * expected failure, or a case listed flaky that failed its only try (D-105); undefined otherwise.
 */
export function excused(r: CaseResult): string | undefined {
  if (r.stale !== undefined || (r.status !== 'failed' && r.status !== 'errored')) return undefined;
  if (r.expectedFailure !== undefined) return `expected failure: ${r.expectedFailure}`;
  if (r.expectedFlaky !== undefined) return `listed flaky, failed this run: ${r.expectedFlaky}`;
  return undefined;
}

/** Whether a result fails the run: a failure, an error or a flaky case that no entry of the baseline excuses, or a stale entry. */
export function failsTheRun(r: CaseResult): boolean {
  if (r.stale !== undefined) return true;
  if (r.status === 'failed' || r.status === 'errored') return excused(r) === undefined;
  if (r.status === 'flaky') return r.expectedFlaky === undefined && r.expectedFailure === undefined;
  return false;
}

/**
 * A baseline file listing every case of the run that failed or errored (its first line of failure as
 * the reason) and every flaky one (marked `[flaky]`).
 */
export function baselineText(run: RunResults): string {
  const lines = [
    `# Expected failures for ${run.baseUrl} (app ${run.appId}): written by ${run.suite.name} ${run.suite.version}, interface ${INTERFACE_VERSION}, profile ${run.profile}, run ${run.runId}.`,
    `# One case a line: <case id> <reason>, or <case id> ${FLAKY} <reason> for a case that fails now and then.`,
    `# Replace each reason with why your implementation fails it; use with --expected-failures.`,
    `# An entry that no longer holds fails the run (a stale entry): a listed case that passes, a failing one that passes on a retry, a flaky one that fails every try.`,
  ];
  for (const r of run.results) {
    if (r.status !== 'failed' && r.status !== 'errored' && r.status !== 'flaky') continue;
    const why =
      (r.status === 'flaky' ? r.expectedFlaky : r.expectedFailure) ??
      (r.status === 'errored' ? `blocked by precondition "${r.blockedBy}"` : (r.failure?.message ?? 'failed').split('\n')[0]!);
    const reason = why.length > 200 ? `${why.slice(0, 199)}…` : why;
    lines.push(`${r.id} ${r.status === 'flaky' ? `${FLAKY} ` : ''}${reason}`);
  }
  return `${lines.join('\n')}\n`;
}
