// Reporters: pretty (people), json (machines), junit (CI test tabs), tap (TAP 14 consumers), html (a
// self-contained page). Each returns the report without the final summary line, which the command
// always prints last.
import { excused } from './baseline.ts';
import { clauseMatrix, countsText, matrixSummary } from './clauses.ts';
import { renderHtml } from './html.ts';
import { CASES, sectionTitle } from './registry.ts';
import type { CaseResult, RunResults, Summary } from './results.ts';
import { COUNTED, capabilityWords, passedOf, percent, scoreLines } from './score.ts';

export const REPORTERS = ['pretty', 'json', 'junit', 'tap', 'html'] as const;
export type ReporterName = (typeof REPORTERS)[number];

/** The run's last line; `name` is `check-receiver` for a receiver's run (D-175). */
export function summaryLine(s: Summary, baseline?: RunResults['baseline'], name = 'conformance'): string {
  const line = `${name}: ${s.passed} passed, ${s.failed} failed, ${s.flaky} flaky, ${s.skipped} skipped, ${s.errored} errored`;
  if (!baseline) return line;
  const flaky = baseline.flaky ? `, ${baseline.flaky} listed flaky` : '';
  return `${line} (baseline: ${baseline.expected} expected failure${baseline.expected === 1 ? '' : 's'}${flaky}, ${baseline.stale.length} stale)`;
}

const MARK = { passed: '✓', failed: '✗', flaky: '~', skipped: '-', errored: '!' } as const;

/** One line per case, as the pretty reporter prints it while the run progresses. */
export function prettyLine(r: CaseResult): string {
  const runs = r.runs ? ` in ${r.status === 'failed' ? r.failedRuns : r.skippedRuns} of ${r.runs} runs` : '';
  const tries = r.tries && r.status !== 'flaky' ? ` (${r.failedTries} of ${r.tries} tries)` : '';
  const extra =
    r.status === 'skipped'
      ? `  (skipped${runs}: ${r.reason})`
      : r.status === 'errored'
        ? `  (${r.reason})${tries}`
        : r.status === 'flaky'
          ? `  (flaky: ${r.reason})`
          : r.status === 'failed' && (r.runs || r.tries)
            ? `  (failed${runs}${tries})`
            : '';
  const answer = r.answered ? `  → ${r.answered}` : '';
  return `  ${MARK[r.status]} ${r.id}  ${r.description}${answer}${extra}${baselineMark(r)}`;
}

/** What the baseline says of a result that ran, as the pretty line ends. */
function baselineMark(r: CaseResult): string {
  if (r.status === 'skipped') return '';
  if (r.stale) return `  [stale baseline entry: ${r.stale}]`;
  if (r.expectedFailure !== undefined && r.status !== 'passed') return '  [expected failure]';
  if (r.expectedFlaky !== undefined) return '  [listed flaky]';
  return '';
}

function indent(s: string, by = '      '): string {
  return s
    .split('\n')
    .map((l) => by + l)
    .join('\n');
}

function failureBlock(r: CaseResult): string {
  // A flaky case blocked by a precondition at first has no evidence of its own: its reason says it.
  const f = r.failure ?? { message: r.reason ?? '' };
  const parts = [`${MARK[r.status]} ${r.id} [${r.level}, ${sectionTitle(r.section)}]`, `    ${f.message}`];
  if (r.status === 'flaky') parts.splice(1, 0, `    flaky: ${r.reason}; the failure it had:`);
  if (r.expectedFailure !== undefined) parts.push(`    expected failure (baseline): ${r.expectedFailure}`);
  if (r.expectedFlaky !== undefined) parts.push(`    listed flaky (baseline): ${r.expectedFlaky}`);
  const earlier = (f.exchanges ?? []).slice(0, -1);
  if (earlier.length > 0)
    parts.push(
      `    before it (${earlier.length} request${earlier.length > 1 ? 's' : ''}; all of them, and a script that replays them, in the JSON and HTML reports):`,
      ...earlier.slice(-8).map((e) => `      ${e.request.method} ${e.request.url} → ${e.response.status || e.response.error}`),
    );
  if (f.curl) parts.push('    sent:', indent(f.curl));
  if (f.response) parts.push('    got:', indent(f.response));
  if (r.clauses) parts.push(`    clauses: ${r.clauses.join(', ')}`);
  const clauses = CASES.find((c) => c.id === r.id)?.clauses;
  if (!r.clauses && clauses?.length) parts.push(`    clauses: ${clauses.join(', ')} (docs/conformance-reference.md, clause matrix)`);
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
  const flaky = run.results.filter((r) => r.status === 'flaky');
  if (flaky.length > 0)
    out.push('', `Flaky (${flaky.length}): passed on a retry or in some runs only`, '', flaky.map(failureBlock).join('\n\n'));
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
    out.push(
      '',
      `Baseline ${b.file}: ${b.expected} expected failure${b.expected === 1 ? '' : 's'}${b.flaky ? `, ${b.flaky} listed flaky` : ''}`,
    );
    if (b.stale.length > 0)
      out.push('  stale (they fail the run):', ...run.results.filter((r) => r.stale).map((r) => `    ${r.id}: ${r.stale}`));
    if (b.unknown.length > 0) out.push(`  not run here: ${b.unknown.join(', ')}`);
  }
  const missing = [...new Set(run.results.flatMap((r) => r.missing ?? []))];
  if (missing.length > 0) out.push('', `Skipped for lack of target keys: ${missing.join(', ')}`);
  if (run.interrupted) out.push('', `Interrupted (${run.interrupted}): the cases not run are reported as skipped.`);
  if (run.cleanup.failed.length > 0) out.push('', `Cleanup: could not delete ${run.cleanup.failed.join('; ')}`);
  if (run.subject !== undefined) {
    out.push(
      '',
      `run ${run.runId}, ${run.suite.name} ${run.suite.version}, ${(run.ms / 1000).toFixed(1)} s, ${run.requests.sent} requests`,
    );
    return out.join('\n');
  }
  out.push('', clauseLine(run));
  if (run.score) out.push('', ...scoreText(run));
  const retried = run.requests.retried429 ? `, ${run.requests.retried429} sent again after a 429` : '';
  out.push(
    '',
    `run ${run.runId}, ${run.suite.name} ${run.suite.version}, interface ${run.interfaceVersion}, profile ${run.profile}, ${(run.ms / 1000).toFixed(1)} s, ${run.requests.sent} requests${retried}, ${run.cleanup.deleted} conversations deleted at the end`,
  );
  return out.join('\n');
}

/**
 * The score by capability and the pass rate (D-105, extended): absent from a run built by hand or read
 * from an older JSON report.
 */
export function scoreText(run: Pick<RunResults, 'score'>): string[] {
  const o = run.score.overall;
  return [`score: ${o.passed} of ${o.total} counted cases passed (${percent(o.passRate)}): ${COUNTED}`, ...scoreLines(run.score)];
}

/** One line on the clause matrix: of the checkable clauses this run's cases reached, how many a passing case covered. */
export function clauseLine(run: Pick<RunResults, 'results'>): string {
  const m = matrixSummary(clauseMatrix(run.results));
  const failed = m.failed ? `, ${m.failed} hit by a failing case` : '';
  const unreached = m.exact + m.weak - (m.reached ?? 0);
  return `clauses: ${m.covered} of the ${m.reached} checkable clauses this run's cases reached are covered by a passing case${failed}${unreached ? `; ${unreached} not reached by the selected cases` : ''} (${m.clauses} clauses: ${countsText(m)}; see docs/conformance-reference.md)`;
}

export function prettyHeader(
  run: Pick<RunResults, 'runId' | 'profile' | 'baseUrl' | 'appId' | 'suite' | 'interfaceVersion' | 'subject'>,
): string {
  if (run.subject === 'client') return `Parley client kit: ${run.baseUrl}, judged against a Parley of its own, run ${run.runId}`;
  if (run.subject === 'receiver')
    return `Parley check-receiver: ${run.baseUrl}, judged by ${run.interfaceVersion} and D-175, run ${run.runId} (${run.suite.name} ${run.suite.version})`;
  return `Parley conformance: ${run.baseUrl} (app ${run.appId}), profile ${run.profile}, run ${run.runId} (suite ${run.suite.version}, interface ${run.interfaceVersion})`;
}

/** What judged: the suite, check-receiver (D-175) or the client kit (D-130); the last two judge no clause of the interface. */
function suiteName(run: Pick<RunResults, 'subject'>): string {
  return run.subject === 'receiver' ? 'check-receiver' : run.subject === 'client' ? 'client-kit' : 'conformance';
}

/** The control characters XML 1.0 cannot carry at all (all of C0 but tab, line feed and carriage return). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching these control characters is the point: xml() drops them.
const NOT_IN_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g;

function xml(s: string): string {
  return s.replace(NOT_IN_XML, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** The evidence of a failure as one text: message, the request that showed it, its answer, the replay script. */
function evidenceText(f: NonNullable<CaseResult['failure']>): string {
  return [
    f.message,
    f.curl ? `sent:\n${f.curl}` : '',
    f.response ? `got:\n${f.response}` : '',
    f.reproduction ? `reproduce:\n${f.reproduction}` : '',
  ]
    .filter(Boolean)
    .join('\n\n');
}

type JunitKind = 'failure' | 'error' | 'skipped' | 'flaky' | 'none';

/**
 * The JUnit element of a result (docs/conformance.md, "Outcomes in JUnit"): a failure that fails the
 * run is <failure> (a stale baseline entry too), an error <error>, what the baseline expects and a
 * skip <skipped>, a flaky case Maven Surefire's <flakyFailure> inside a passing test case.
 */
export function junitElement(r: CaseResult): { kind: JunitKind; xml: string } {
  if (r.stale !== undefined) {
    const body = r.failure ? evidenceText(r.failure) : '';
    return {
      kind: 'failure',
      xml: `<failure message="${xml(`stale baseline entry: ${r.stale}`)}" type="stale-baseline">${xml(body)}</failure>`,
    };
  }
  const excuse = excused(r);
  if (excuse !== undefined) return { kind: 'skipped', xml: `<skipped message="${xml(excuse)}"/>` };
  if (r.status === 'skipped') return { kind: 'skipped', xml: `<skipped message="${xml(r.reason ?? '')}"/>` };
  if (r.status === 'errored')
    return { kind: 'error', xml: `<error message="${xml(r.reason ?? '')}" type="${r.blockedBy ? 'precondition' : 'set-up'}"/>` };
  if (r.status === 'flaky') {
    const f = r.failure;
    const message = `flaky: ${r.reason ?? ''}${r.expectedFlaky !== undefined ? ` (listed flaky: ${r.expectedFlaky})` : ''}`;
    return {
      kind: 'flaky',
      xml: `<flakyFailure message="${xml(message)}" type="${r.level}">${f ? `<stackTrace>${xml(evidenceText(f))}</stackTrace>` : ''}</flakyFailure>`,
    };
  }
  if (r.status === 'failed') {
    const f = r.failure ?? { message: 'failed' };
    const clauses = r.clauses ? `\n\nclauses: ${r.clauses.join(', ')}` : '';
    return { kind: 'failure', xml: `<failure message="${xml(f.message)}" type="${r.level}">${xml(evidenceText(f) + clauses)}</failure>` };
  }
  return { kind: 'none', xml: '' };
}

function renderJunit(run: RunResults): string {
  const bySection = new Map<string, CaseResult[]>();
  for (const r of run.results) bySection.set(r.section, [...(bySection.get(r.section) ?? []), r]);
  const all = run.results.map(junitElement);
  const n = (els: Array<{ kind: JunitKind }>, kind: JunitKind) => els.filter((e) => e.kind === kind).length;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${suiteName(run)}" tests="${run.results.length}" failures="${n(all, 'failure')}" errors="${n(all, 'error')}" skipped="${n(all, 'skipped')}" time="${(run.ms / 1000).toFixed(3)}">`,
  ];
  for (const [section, rs] of bySection) {
    const els = rs.map(junitElement);
    const time = rs.reduce((t, r) => t + r.ms, 0) / 1000;
    lines.push(
      `  <testsuite name="${xml(sectionTitle(section))}" tests="${rs.length}" failures="${n(els, 'failure')}" errors="${n(els, 'error')}" skipped="${n(els, 'skipped')}" time="${time.toFixed(3)}">`,
    );
    // Which suite and interface judged, and the run's score: CI test tabs show a suite's properties.
    lines.push(
      '    <properties>',
      ...Object.entries({
        suite_version: run.suite.version,
        interface_version: run.interfaceVersion,
        profile: run.profile,
        ...scoreProperties(run),
      }).map(([k, v]) => `      <property name="${k}" value="${xml(v)}"/>`),
      '    </properties>',
    );
    rs.forEach((r, i) => {
      const classname = run.subject !== undefined ? suiteName(run) : `conformance.S${section}`;
      const open = `    <testcase classname="${xml(classname)}" name="${xml(`${r.id}: ${r.description}`)}" time="${(r.ms / 1000).toFixed(3)}"`;
      const el = els[i]!;
      lines.push(el.kind === 'none' ? `${open}/>` : `${open}>\n      ${el.xml}\n    </testcase>`);
    });
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>');
  return lines.join('\n');
}

/** `pass_rate`, then `capability.<name>` per capability: claimed or not, and its cases' score. */
function scoreProperties(run: RunResults): Record<string, string> {
  if (!run.score) return {};
  const o = run.score.overall;
  if (run.subject !== undefined) return { pass_rate: passedOf(o) };
  return {
    pass_rate: passedOf(o),
    'capability.interface': passedOf(run.score.interface),
    ...Object.fromEntries(
      run.score.capabilities.map((c) => {
        const { how, unscored } = capabilityWords(c);
        return [`capability.${c.name}`, `${how}: ${unscored ?? passedOf(c)}`];
      }),
    ),
  };
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
    // TAP's TODO: a failure that the baseline excuses does not fail the plan.
    const excuse = excused(r);
    const todo = excuse !== undefined ? ` # TODO ${excuse}` : '';
    if (r.status === 'passed' && !r.stale) lines.push(`ok ${i + 1} - ${name}`);
    else if (r.status === 'skipped') lines.push(`ok ${i + 1} - ${name} # SKIP ${r.reason ?? ''}`);
    else if (r.status === 'flaky' && !r.stale) {
      lines.push(`ok ${i + 1} - ${name}`, '  ---', ...yamlBlock('flaky', r.reason ?? ''));
      if (r.expectedFlaky !== undefined) lines.push(...yamlBlock('listed', r.expectedFlaky));
      if (r.failure) lines.push(...yamlBlock('message', r.failure.message));
      lines.push('  ...');
    } else if (r.status === 'errored')
      lines.push(`not ok ${i + 1} - ${name}${todo}`, '  ---', ...yamlBlock('message', r.reason ?? ''), '    severity: errored', '  ...');
    else {
      const f = r.failure ?? { message: r.stale ?? 'failed' };
      lines.push(`not ok ${i + 1} - ${name}${todo}`, '  ---', ...yamlBlock('message', f.message), `    level: ${r.level}`);
      if (r.stale) lines.push(...yamlBlock('stale', r.stale));
      if (r.clauses) lines.push(...yamlBlock('clauses', r.clauses.join(', ')));
      if (f.curl) lines.push(...yamlBlock('sent', f.curl));
      if (f.response) lines.push(...yamlBlock('got', f.response));
      if (f.reproduction) lines.push(...yamlBlock('reproduce', f.reproduction));
      lines.push('  ...');
    }
  });
  if (run.score && run.subject === undefined) lines.push(...scoreText(run).map((l) => `# ${l.trim()}`));
  return lines.join('\n');
}

export function render(run: RunResults, reporter: ReporterName): string {
  switch (reporter) {
    case 'json':
      // The clause → case matrix with this run's outcomes (docs/conformance-reference.md has it without them).
      return JSON.stringify(run.subject !== undefined ? run : { ...run, matrix: clauseMatrix(run.results) }, null, 2);
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
