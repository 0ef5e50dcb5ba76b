// --expected-failures FILE and --write-baseline FILE: the cases a team knows its implementation
// fails, each with a reason. A listed case that fails (or errors) does not fail the run; a listed case
// that passes does, so that the list shrinks as the implementation improves (a stale entry).
//
// The file is text, one case a line: `<case id> <reason>`; a line that starts with `#` is a comment, blank lines are ignored.
import fs from 'node:fs/promises';
import { CASES } from './registry.ts';
import type { CaseResult, RunResults } from './results.ts';
import { UsageError } from './target.ts';
import { INTERFACE_VERSION } from './version.ts';

/** Case id → why it is expected to fail. */
export type Baseline = Map<string, string>;

export function parseBaseline(text: string, source: string): Baseline {
  const known = new Set(CASES.map((c) => c.id));
  const out: Baseline = new Map();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const m = /^(\S+)\s+(.+)$/.exec(line);
    const where = `${source}:${i + 1}`;
    if (!m) throw new UsageError(`${where}: "${line}" has no reason: write "<case id> <why it is expected to fail>"`);
    const [, id, reason] = m as unknown as [string, string, string];
    if (!known.has(id)) throw new UsageError(`${where}: ${id} is no case of this suite (see --list)`);
    if (out.has(id)) throw new UsageError(`${where}: ${id} is listed twice`);
    out.set(id, reason);
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

/** Marks the listed cases that did not pass as expected, and returns the run's baseline summary. */
export function applyBaseline(results: CaseResult[], baseline: Baseline, file: string): NonNullable<RunResults['baseline']> {
  const stale: string[] = [];
  let expected = 0;
  for (const r of results) {
    const reason = baseline.get(r.id);
    if (reason === undefined) continue;
    r.expectedFailure = reason;
    if (r.status === 'passed') stale.push(r.id);
    else if (r.status === 'failed' || r.status === 'errored') expected++;
  }
  const ran = new Set(results.map((r) => r.id));
  return { file, expected, stale, unknown: [...baseline.keys()].filter((id) => !ran.has(id)) };
}

/** A baseline file listing every case of the run that failed or errored, its first line of failure as the reason. */
export function baselineText(run: RunResults): string {
  const lines = [
    `# Expected failures for ${run.baseUrl} (app ${run.appId}): written by ${run.suite.name} ${run.suite.version}, interface ${INTERFACE_VERSION}, profile ${run.profile}, run ${run.runId}.`,
    `# One case a line: <case id> <reason>. Replace each reason with why your implementation fails it; use with --expected-failures.`,
    `# A listed case that passes fails the run (a stale entry): delete its line then.`,
  ];
  for (const r of run.results) {
    if (r.status !== 'failed' && r.status !== 'errored') continue;
    const why =
      r.expectedFailure ??
      (r.status === 'errored' ? `blocked by precondition "${r.blockedBy}"` : (r.failure?.message ?? 'failed').split('\n')[0]!);
    lines.push(`${r.id} ${why.length > 200 ? `${why.slice(0, 199)}…` : why}`);
  }
  return `${lines.join('\n')}\n`;
}
