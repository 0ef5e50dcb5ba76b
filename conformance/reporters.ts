// Reporters: pretty (people), json (machines), junit (CI test tabs), tap (TAP 14 consumers).
// Each returns the report without the final summary line, which the command always prints last.
import { clauseMatrix, matrixSummary } from './clauses.ts';
import { CASES, sectionTitle } from './registry.ts';
import type { CaseResult, RunResults } from './run.ts';

export const REPORTERS = ['pretty', 'json', 'junit', 'tap'] as const;
export type ReporterName = (typeof REPORTERS)[number];

export function summaryLine(s: RunResults['summary']): string {
  return `conformance: ${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped`;
}

const MARK = { passed: '✓', failed: '✗', skipped: '-' } as const;

/** One line per case, as the pretty reporter prints it while the run progresses. */
export function prettyLine(r: CaseResult): string {
  const runs = r.runs ? ` in ${r.status === 'failed' ? r.failedRuns : r.skippedRuns} of ${r.runs} runs` : '';
  const extra = r.status === 'skipped' ? `  (skipped${runs}: ${r.reason})` : r.status === 'failed' && r.runs ? `  (failed${runs})` : '';
  return `  ${MARK[r.status]} ${r.id}  ${r.description}${extra}`;
}

function indent(s: string, by = '      '): string {
  return s
    .split('\n')
    .map((l) => by + l)
    .join('\n');
}

export function failureBlock(r: CaseResult): string {
  const f = r.failure!;
  const parts = [`${MARK.failed} ${r.id} [${r.level}, ${sectionTitle(r.section)}]`, `    ${f.message}`];
  if (f.curl) parts.push('    sent:', indent(f.curl));
  if (f.response) parts.push('    got:', indent(f.response));
  const clauses = CASES.find((c) => c.id === r.id)?.clauses;
  if (clauses?.length) parts.push(`    clauses: ${clauses.join(', ')} (docs/conformance.md, clause matrix)`);
  return parts.join('\n');
}

export function renderPretty(run: RunResults, opts: { progressShown?: boolean } = {}): string {
  const out: string[] = [];
  if (!opts.progressShown) {
    out.push(prettyHeader(run));
    let section = '';
    for (const r of run.results) {
      if (r.section !== section) out.push(sectionTitle((section = r.section)));
      out.push(prettyLine(r));
    }
  }
  const failed = run.results.filter((r) => r.status === 'failed');
  if (failed.length > 0) out.push('', `Failures (${failed.length}):`, '', failed.map(failureBlock).join('\n\n'));
  const missing = [...new Set(run.results.flatMap((r) => r.missing ?? []))];
  if (missing.length > 0) out.push('', `Skipped for lack of target keys: ${missing.join(', ')}`);
  if (run.interrupted) out.push('', `Interrupted (${run.interrupted}): the cases not run are reported as skipped.`);
  if (run.cleanup.failed.length > 0) out.push('', `Cleanup: could not delete ${run.cleanup.failed.join('; ')}`);
  out.push('', clauseLine(run));
  out.push('', `run ${run.runId}, profile ${run.profile}, ${(run.ms / 1000).toFixed(1)} s, ${run.cleanup.deleted} conversations deleted at the end`);
  return out.join('\n');
}

/** One line on the clause matrix: of the checkable clauses this run's cases reached, how many a passing case covered. */
export function clauseLine(run: Pick<RunResults, 'results'>): string {
  const m = matrixSummary(clauseMatrix(run.results));
  const failed = m.failed ? `, ${m.failed} hit by a failing case` : '';
  const unreached = m.exact + m.weak - (m.reached ?? 0);
  return `clauses: ${m.covered} of the ${m.reached} checkable clauses this run's cases reached are covered by a passing case${failed}${unreached ? `; ${unreached} not reached by the selected cases` : ''} (${m.clauses} clauses: ${m.exact} checked exactly, ${m.weak} weakly, ${m.none} not checkable; see docs/conformance.md)`;
}

export function prettyHeader(run: Pick<RunResults, 'runId' | 'profile' | 'baseUrl' | 'appId'>): string {
  return `Parley conformance: ${run.baseUrl} (app ${run.appId}), profile ${run.profile}, run ${run.runId}`;
}

function xml(s: string): string {
  // Characters XML 1.0 cannot carry at all are dropped.
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function renderJunit(run: RunResults): string {
  const bySection = new Map<string, CaseResult[]>();
  for (const r of run.results) bySection.set(r.section, [...(bySection.get(r.section) ?? []), r]);
  const s = run.summary;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="conformance" tests="${run.results.length}" failures="${s.failed}" skipped="${s.skipped}" time="${(run.ms / 1000).toFixed(3)}">`,
  ];
  for (const [section, rs] of bySection) {
    const failures = rs.filter((r) => r.status === 'failed').length;
    const skippedN = rs.filter((r) => r.status === 'skipped').length;
    const time = rs.reduce((t, r) => t + r.ms, 0) / 1000;
    lines.push(`  <testsuite name="${xml(sectionTitle(section))}" tests="${rs.length}" failures="${failures}" skipped="${skippedN}" time="${time.toFixed(3)}">`);
    for (const r of rs) {
      const open = `    <testcase classname="conformance.S${xml(section)}" name="${xml(`${r.id}: ${r.description}`)}" time="${(r.ms / 1000).toFixed(3)}"`;
      if (r.status === 'passed') lines.push(`${open}/>`);
      else if (r.status === 'skipped') lines.push(`${open}>`, `      <skipped message="${xml(r.reason ?? '')}"/>`, '    </testcase>');
      else {
        const f = r.failure!;
        const body = [f.message, f.curl ? `sent:\n${f.curl}` : '', f.response ? `got:\n${f.response}` : ''].filter(Boolean).join('\n\n');
        lines.push(`${open}>`, `      <failure message="${xml(f.message)}" type="${r.level}">${xml(body)}</failure>`, '    </testcase>');
      }
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>');
  return lines.join('\n');
}

function yamlBlock(key: string, value: string): string[] {
  return [`    ${key}: |-`, ...value.split('\n').map((l) => `      ${l}`)];
}

export function renderTap(run: RunResults): string {
  const lines = ['TAP version 14', `1..${run.results.length}`];
  run.results.forEach((r, i) => {
    const name = `${r.id} - ${r.description.replace(/#/g, '\\#')}`;
    if (r.status === 'passed') lines.push(`ok ${i + 1} - ${name}`);
    else if (r.status === 'skipped') lines.push(`ok ${i + 1} - ${name} # SKIP ${r.reason ?? ''}`);
    else {
      const f = r.failure!;
      lines.push(`not ok ${i + 1} - ${name}`, '  ---', ...yamlBlock('message', f.message), `    level: ${r.level}`);
      if (f.curl) lines.push(...yamlBlock('sent', f.curl));
      if (f.response) lines.push(...yamlBlock('got', f.response));
      lines.push('  ...');
    }
  });
  return lines.join('\n');
}

export function render(run: RunResults, reporter: ReporterName): string {
  switch (reporter) {
    case 'json':
      // The clause → case matrix with this run's outcomes (docs/conformance.md has it without them).
      return JSON.stringify({ ...run, matrix: clauseMatrix(run.results) }, null, 2);
    case 'junit':
      return renderJunit(run);
    case 'tap':
      return renderTap(run);
    default:
      return renderPretty(run);
  }
}
