// Reporters: pretty (people), json (machines), junit (CI test tabs), tap (TAP 14 consumers), html (a
// self-contained page). Each returns the report without the final summary line, which the command
// always prints last.
import { clauseMatrix, matrixSummary } from './clauses.ts';
import { renderHtml } from './html.ts';
import { CASES, sectionTitle } from './registry.ts';
import type { CaseResult, RunResults, Summary } from './results.ts';

export const REPORTERS = ['pretty', 'json', 'junit', 'tap', 'html'] as const;
export type ReporterName = (typeof REPORTERS)[number];

export function summaryLine(s: Summary, baseline?: RunResults['baseline']): string {
  const line = `conformance: ${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped, ${s.errored} errored`;
  return baseline
    ? `${line} (baseline: ${baseline.expected} expected failure${baseline.expected === 1 ? '' : 's'}, ${baseline.stale.length} stale)`
    : line;
}

const MARK = { passed: '✓', failed: '✗', skipped: '-', errored: '!' } as const;

/** One line per case, as the pretty reporter prints it while the run progresses. */
export function prettyLine(r: CaseResult): string {
  const runs = r.runs ? ` in ${r.status === 'failed' ? r.failedRuns : r.skippedRuns} of ${r.runs} runs` : '';
  const extra =
    r.status === 'skipped'
      ? `  (skipped${runs}: ${r.reason})`
      : r.status === 'errored'
        ? `  (${r.reason})`
        : r.status === 'failed' && r.runs
          ? `  (failed${runs})`
          : '';
  const expected =
    r.expectedFailure !== undefined && r.status !== 'skipped'
      ? r.status === 'passed'
        ? '  [listed as an expected failure: stale]'
        : '  [expected failure]'
      : '';
  return `  ${MARK[r.status]} ${r.id}  ${r.description}${extra}${expected}`;
}

function indent(s: string, by = '      '): string {
  return s
    .split('\n')
    .map((l) => by + l)
    .join('\n');
}

function failureBlock(r: CaseResult): string {
  const f = r.failure!;
  const parts = [`${MARK.failed} ${r.id} [${r.level}, ${sectionTitle(r.section)}]`, `    ${f.message}`];
  if (r.expectedFailure !== undefined) parts.push(`    expected failure (baseline): ${r.expectedFailure}`);
  const earlier = (f.exchanges ?? []).slice(0, -1);
  if (earlier.length > 0)
    parts.push(
      `    before it (${earlier.length} request${earlier.length > 1 ? 's' : ''}; all of them, and a script that replays them, in the JSON and HTML reports):`,
      ...earlier.slice(-8).map((e) => `      ${e.request.method} ${e.request.url} → ${e.response.status || e.response.error}`),
    );
  if (f.curl) parts.push('    sent:', indent(f.curl));
  if (f.response) parts.push('    got:', indent(f.response));
  const clauses = CASES.find((c) => c.id === r.id)?.clauses;
  if (clauses?.length) parts.push(`    clauses: ${clauses.join(', ')} (docs/conformance.md, clause matrix)`);
  return parts.join('\n');
}

/** A failed precondition, once, with the cases it blocked. */
function preconditionBlock(p: RunResults['preconditions'][number]): string {
  return [
    `! precondition "${p.name}" (run by ${p.shownBy}, whose failure above shows it)`,
    `    ${p.message}`,
    `    blocked ${p.blocked.length}: ${p.blocked.join(', ')}`,
  ].join('\n');
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
  const blocking = run.preconditions.filter((p) => p.blocked.length > 0);
  if (blocking.length > 0)
    out.push(
      '',
      `Errored: ${run.summary.errored} cases not judged, blocked by ${blocking.length} failed precondition${blocking.length > 1 ? 's' : ''}:`,
      '',
      blocking.map(preconditionBlock).join('\n\n'),
    );
  if (run.warnings.length > 0) out.push('', 'Warnings (preflight):', ...run.warnings.map((w) => `  ${w}`));
  if (run.baseline) {
    const b = run.baseline;
    out.push('', `Baseline ${b.file}: ${b.expected} expected failure${b.expected === 1 ? '' : 's'}`);
    if (b.stale.length > 0) out.push(`  stale (listed, but now passing: delete these lines; they fail the run): ${b.stale.join(', ')}`);
    if (b.unknown.length > 0) out.push(`  not run here: ${b.unknown.join(', ')}`);
  }
  const missing = [...new Set(run.results.flatMap((r) => r.missing ?? []))];
  if (missing.length > 0) out.push('', `Skipped for lack of target keys: ${missing.join(', ')}`);
  if (run.interrupted) out.push('', `Interrupted (${run.interrupted}): the cases not run are reported as skipped.`);
  if (run.cleanup.failed.length > 0) out.push('', `Cleanup: could not delete ${run.cleanup.failed.join('; ')}`);
  out.push('', clauseLine(run));
  const retried = run.requests.retried429 ? `, ${run.requests.retried429} sent again after a 429` : '';
  out.push(
    '',
    `run ${run.runId}, ${run.suite.name} ${run.suite.version}, interface ${run.interfaceVersion}, profile ${run.profile}, ${(run.ms / 1000).toFixed(1)} s, ${run.requests.sent} requests${retried}, ${run.cleanup.deleted} conversations deleted at the end`,
  );
  return out.join('\n');
}

/** One line on the clause matrix: of the checkable clauses this run's cases reached, how many a passing case covered. */
export function clauseLine(run: Pick<RunResults, 'results'>): string {
  const m = matrixSummary(clauseMatrix(run.results));
  const failed = m.failed ? `, ${m.failed} hit by a failing case` : '';
  const unreached = m.exact + m.weak - (m.reached ?? 0);
  return `clauses: ${m.covered} of the ${m.reached} checkable clauses this run's cases reached are covered by a passing case${failed}${unreached ? `; ${unreached} not reached by the selected cases` : ''} (${m.clauses} clauses: ${m.exact} checked exactly, ${m.weak} weakly, ${m.none} not checkable; see docs/conformance.md)`;
}

export function prettyHeader(run: Pick<RunResults, 'runId' | 'profile' | 'baseUrl' | 'appId' | 'suite' | 'interfaceVersion'>): string {
  return `Parley conformance: ${run.baseUrl} (app ${run.appId}), profile ${run.profile}, run ${run.runId} (suite ${run.suite.version}, interface ${run.interfaceVersion})`;
}

/** The control characters XML 1.0 cannot carry at all (all of C0 but tab, line feed and carriage return). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching these control characters is the point: xml() drops them.
const NOT_IN_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g;

function xml(s: string): string {
  return s.replace(NOT_IN_XML, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function renderJunit(run: RunResults): string {
  const bySection = new Map<string, CaseResult[]>();
  for (const r of run.results) bySection.set(r.section, [...(bySection.get(r.section) ?? []), r]);
  const s = run.summary;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="conformance" tests="${run.results.length}" failures="${s.failed}" errors="${s.errored}" skipped="${s.skipped}" time="${(run.ms / 1000).toFixed(3)}">`,
  ];
  for (const [section, rs] of bySection) {
    const failures = rs.filter((r) => r.status === 'failed').length;
    const skippedN = rs.filter((r) => r.status === 'skipped').length;
    const errors = rs.filter((r) => r.status === 'errored').length;
    const time = rs.reduce((t, r) => t + r.ms, 0) / 1000;
    lines.push(
      `  <testsuite name="${xml(sectionTitle(section))}" tests="${rs.length}" failures="${failures}" errors="${errors}" skipped="${skippedN}" time="${time.toFixed(3)}">`,
    );
    // Which suite and interface judged: CI test tabs show a suite's properties.
    lines.push(
      '    <properties>',
      ...Object.entries({ suite_version: run.suite.version, interface_version: run.interfaceVersion, profile: run.profile }).map(
        ([k, v]) => `      <property name="${k}" value="${xml(v)}"/>`,
      ),
      '    </properties>',
    );
    for (const r of rs) {
      const open = `    <testcase classname="conformance.S${xml(section)}" name="${xml(`${r.id}: ${r.description}`)}" time="${(r.ms / 1000).toFixed(3)}"`;
      if (r.status === 'passed') lines.push(`${open}/>`);
      else if (r.status === 'skipped') lines.push(`${open}>`, `      <skipped message="${xml(r.reason ?? '')}"/>`, '    </testcase>');
      else if (r.status === 'errored')
        lines.push(`${open}>`, `      <error message="${xml(r.reason ?? '')}" type="precondition"/>`, '    </testcase>');
      else {
        const f = r.failure!;
        const body = [
          f.message,
          f.curl ? `sent:\n${f.curl}` : '',
          f.response ? `got:\n${f.response}` : '',
          f.reproduction ? `reproduce:\n${f.reproduction}` : '',
        ]
          .filter(Boolean)
          .join('\n\n');
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

function renderTap(run: RunResults): string {
  const lines = [
    'TAP version 14',
    `1..${run.results.length}`,
    `# ${run.suite.name} ${run.suite.version}, interface ${run.interfaceVersion}, profile ${run.profile}`,
  ];
  run.results.forEach((r, i) => {
    const name = `${r.id} - ${r.description.replace(/#/g, '\\#')}`;
    if (r.status === 'passed') lines.push(`ok ${i + 1} - ${name}`);
    else if (r.status === 'skipped') lines.push(`ok ${i + 1} - ${name} # SKIP ${r.reason ?? ''}`);
    else if (r.status === 'errored')
      lines.push(`not ok ${i + 1} - ${name}`, '  ---', ...yamlBlock('message', r.reason ?? ''), '    severity: errored', '  ...');
    else {
      const f = r.failure!;
      lines.push(`not ok ${i + 1} - ${name}`, '  ---', ...yamlBlock('message', f.message), `    level: ${r.level}`);
      if (f.curl) lines.push(...yamlBlock('sent', f.curl));
      if (f.response) lines.push(...yamlBlock('got', f.response));
      if (f.reproduction) lines.push(...yamlBlock('reproduce', f.reproduction));
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
    case 'html':
      return renderHtml(run);
    default:
      return renderPretty(run);
  }
}
