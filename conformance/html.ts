// --reporter html: one self-contained page (no script, no external file), readable offline: the
// summary linking to the failures, the evidence of each failure and flaky case, every case, and the
// clause matrix with each case's outcome.
import { clauseMatrix, howChecked, type MatrixRow } from './clauses.ts';
import { sectionTitle } from './registry.ts';
import type { CaseResult, EvidenceExchange, GroupScore, Outcome, RunResults } from './results.ts';
import { COUNTED, capabilityWords, percent } from './score.ts';

/** Text as HTML or XML (the report and the badge): &, <, > and " escaped. */
export function esc(s: unknown): string {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const anchor = (id: string) => `case-${id.replace(/[^A-Za-z0-9_.-]/g, '_')}`;

function badge(outcome: Outcome | string | undefined, id?: string): string {
  const o = outcome ?? 'not run';
  const label = esc(o);
  const inner = `<span class="b ${esc(o.replace(/\s/g, '-'))}">${id ? `${esc(id)} ` : ''}${label}</span>`;
  return id ? `<a href="#${anchor(id)}">${inner}</a>` : inner;
}

function json(v: unknown): string {
  return esc(typeof v === 'string' ? v : JSON.stringify(v, null, 2));
}

function exchangeHtml(e: EvidenceExchange, n: number): string {
  const req = e.request;
  const res = e.response;
  const headers = (h: Record<string, string>) =>
    Object.entries(h)
      .map(([k, v]) => `${esc(k)}: ${esc(v)}`)
      .join('\n');
  const body = res.events
    ? `<p>${res.events.length} events${res.ended === false ? ` (the stream did not end: ${esc(res.timedOut ?? 'cut short')})` : ''}</p><ol class="events">${res.events.map((ev) => `<li><code>${esc(ev.event)}</code> <pre>${json(ev.data)}</pre></li>`).join('')}</ol>`
    : res.body !== undefined
      ? `<pre>${json(res.body)}</pre>`
      : '';
  return `<details><summary>${n + 1}. ${esc(req.method)} ${esc(req.url)} → ${res.status ? `HTTP ${res.status}` : esc(res.error ?? 'no response')} <small>${res.ms} ms</small></summary>
<h5>request</h5><pre>${headers(req.headers)}</pre>${req.body !== undefined ? `<pre>${json(req.body)}</pre>` : ''}
<h5>response</h5><pre>${res.status ? `HTTP ${res.status}\n` : ''}${headers(res.headers)}</pre>${body}
<h5>curl</h5><pre>${esc(e.curl)}</pre></details>`;
}

function failureHtml(r: CaseResult): string {
  // A flaky case blocked by a precondition at first has no evidence of its own: its reason says it.
  const f = r.failure ?? { message: r.reason ?? '' };
  const exchanges = f.exchanges ?? [];
  const notes = [
    r.status === 'flaky' ? `Flaky: ${esc(r.reason ?? '')}; the failure it had:` : '',
    r.stale !== undefined ? `<b>Stale baseline entry</b> (it fails the run): ${esc(r.stale)}` : '',
    r.expectedFailure !== undefined ? `Expected failure (baseline): ${esc(r.expectedFailure)}` : '',
    r.expectedFlaky !== undefined ? `Listed flaky (baseline): ${esc(r.expectedFlaky)}` : '',
  ].filter(Boolean);
  return `<section class="failure" id="${anchor(r.id)}"><h3>${badge(r.status)} ${esc(r.id)} <small>[${esc(r.level)}, ${esc(sectionTitle(r.section))}]</small></h3>
<p>${esc(r.description)}</p>${r.clauses ? `<p>clauses: ${esc(r.clauses.join(', '))}</p>` : ''}${notes.map((n) => `<p>${n}</p>`).join('')}<p class="msg">${esc(f.message)}</p>
${f.curl ? `<h4>the request that showed it</h4><pre>${esc(f.curl)}</pre>` : ''}${f.response ? `<h4>what came back</h4><pre>${esc(f.response)}</pre>` : ''}
${exchanges.length ? `<h4>every request of the case (${exchanges.length})</h4>${exchanges.map(exchangeHtml).join('\n')}` : ''}
${f.reproduction ? `<h4>reproduce</h4><pre>${esc(f.reproduction)}</pre>` : ''}</section>`;
}

function matrixHtml(run: RunResults, rows: MatrixRow[]): string {
  if (rows.length === 0) return '<p>This build of the suite has no clause matrix.</p>';
  const byId = new Map(run.results.map((r) => [r.id, r.status]));
  const body = rows
    .map((row) => {
      // The run's outcome of each case that names the clause ("not run" for one the run did not select).
      const cases = row.cases.map((k) => badge((k.status === 'not run' ? undefined : k.status) ?? byId.get(k.id), k.id));
      return `<tr><td><code>${esc(row.id)}</code></td><td>§${esc(row.section)}</td><td>${esc(row.text)}</td><td class="${esc(row.check)}">${esc(row.check)}${row.check === 'exact' ? '' : `<br><small>${esc(howChecked(row).replace(/^[^,:]*[,:] /, ''))}</small>`}</td><td>${cases.join(' ') || '<em>no case</em>'}</td></tr>`;
    })
    .join('\n');
  return `<table class="matrix"><thead><tr><th>clause</th><th>section</th><th>text</th><th>checked</th><th>cases</th></tr></thead><tbody>\n${body}\n</tbody></table>`;
}

/** The score by capability (D-105, extended): which extensions the target claims, and each one's pass rate. */
function scoreHtml(run: RunResults): string {
  if (!run.score || run.subject !== undefined) return '';
  const o = run.score.overall;
  const cells = (g: GroupScore) =>
    `<td>${g.passed}</td><td>${g.failed}</td><td>${g.flaky}</td><td>${g.skipped}</td><td>${g.errored}</td><td><b>${esc(percent(g.passRate))}</b> <small>(${g.passed} of ${g.total})</small></td>`;
  const rows = [
    `<tr><td>interface</td><td>always</td>${cells(run.score.interface)}</tr>`,
    ...run.score.capabilities.map((c) => {
      const { how, unscored } = capabilityWords(c);
      return `<tr><td>${esc(c.name)}</td><td>${esc(how)}</td>${unscored === null ? cells(c) : `<td colspan="6">${esc(unscored)}</td>`}</tr>`;
    }),
  ];
  return `<h2 id="score">Score: ${esc(percent(o.passRate))}</h2>
<p>${o.passed} of ${o.total} counted cases passed: ${COUNTED}; a case of a capability it does not claim is skipped and not counted.</p>
<table class="score"><thead><tr><th>cases of</th><th>claimed</th><th>passed</th><th>failed</th><th>flaky</th><th>skipped</th><th>errored</th><th>pass rate</th></tr></thead><tbody>
${rows.join('\n')}
</tbody></table>`;
}

const CSS = `body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:80em;padding:0 1em;color:#1f2328}
table{border-collapse:collapse;width:100%;margin:1em 0}td,th{border:1px solid #d0d7de;padding:.3em .5em;vertical-align:top;text-align:left}
pre{background:#f6f8fa;padding:.5em;overflow-x:auto;white-space:pre-wrap;word-break:break-all;margin:.3em 0}
.b{display:inline-block;border-radius:.8em;padding:0 .6em;font-size:12px;margin:1px;color:#fff;background:#6e7781}
.passed{background:#1a7f37}.failed{background:#cf222e}.flaky{background:#8250df}.errored{background:#bc4c00}.skipped{background:#9a6700}
td.exact,td.weak,td.none{background:none}a{text-decoration:none}.msg{font-weight:600;color:#cf222e}
.failure{border-top:2px solid #d0d7de;margin-top:1.5em}summary{cursor:pointer}ol.events pre{display:inline-block;margin:0;vertical-align:top}`;

/**
 * `rows`: the clause matrix (by default `clauseMatrix` of the run's results). Failures come first,
 * linked from the summary; the cases and the clause matrix follow.
 */
export function renderHtml(run: RunResults, rows: MatrixRow[] = clauseMatrix(run.results)): string {
  const s = run.summary;
  // D-175, D-130: a webhook receiver's run and a client's judge no clause of the interface and delete nothing.
  const receiver = run.subject !== undefined;
  const failed = run.results.filter((r) => r.status === 'failed' && r.failure);
  const flaky = run.results.filter((r) => r.status === 'flaky');
  const stale = run.results.filter((r) => r.stale !== undefined && !(r.status === 'failed' && r.failure) && r.status !== 'flaky');
  const sections = [...new Set(run.results.map((r) => r.section))];
  const shownAbove = (r: CaseResult) => (r.status === 'failed' && r.failure !== undefined) || r.status === 'flaky';
  const caseRows = sections
    .map((sec) => {
      const rs = run.results.filter((r) => r.section === sec);
      return `<tr><th colspan="3">${esc(sectionTitle(sec))}</th></tr>${rs
        .map(
          (r) =>
            `<tr${shownAbove(r) ? '' : ` id="${anchor(r.id)}"`}><td>${shownAbove(r) ? `<a href="#${anchor(r.id)}">${badge(r.status)}</a>` : badge(r.status)}</td><td><code>${esc(r.id)}</code> <small>${esc(r.level)}</small></td><td>${esc(r.description)}${r.answered ? `<br><small>answered: ${esc(r.answered)}</small>` : ''}${r.reason ? `<br><small>${esc(r.reason)}</small>` : ''}${r.expectedFailure !== undefined ? `<br><small>baseline: ${esc(r.expectedFailure)}</small>` : ''}${r.expectedFlaky !== undefined ? `<br><small>baseline, flaky: ${esc(r.expectedFlaky)}</small>` : ''}${r.stale !== undefined ? `<br><small><b>stale baseline entry</b>: ${esc(r.stale)}</small>` : ''}</td></tr>`,
        )
        .join('')}`;
    })
    .join('\n');
  const pre = run.preconditions.filter((p) => p.blocked.length > 0);
  const link = (href: string, text: string) => `<a href="#${href}">${text}</a>`;
  const count = (outcome: keyof typeof s, href?: string) => {
    const b = `${badge(outcome)} ${s[outcome]}`;
    return href && s[outcome] > 0 ? link(href, b) : b;
  };
  const contents = [
    failed.length ? link('failures', `Failures (${failed.length})`) : '',
    flaky.length ? link('flaky', `Flaky (${flaky.length})`) : '',
    run.score ? link('score', 'Score') : '',
    link('cases', 'Cases'),
    receiver ? '' : link('clause-matrix', 'Clause matrix'),
  ].filter(Boolean);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${receiver ? 'Webhook receiver' : 'Conformance'}: ${esc(run.baseUrl)}: ${s.passed} passed, ${s.failed} failed${s.flaky ? `, ${s.flaky} flaky` : ''}</title><style>${CSS}</style></head><body>
<h1>${receiver ? 'Webhook receiver report' : 'Conformance report'}</h1>
<p>${esc(run.suite.name)} ${esc(run.suite.version)} judging ${receiver ? '' : 'interface '}${esc(run.interfaceVersion)}, profile <b>${esc(run.profile)}</b>, against <code>${esc(run.baseUrl)}</code> (app <code>${esc(run.appId)}</code>); run ${esc(run.runId)}, started ${esc(run.startedAt)}, ${(run.ms / 1000).toFixed(1)} s, ${run.requests.sent} requests.</p>
<h2>Summary</h2>
<p>${count('passed')} ${count('failed', 'failures')} ${count('flaky', 'flaky')} ${count('skipped')} ${count('errored')}${run.interrupted ? ` — interrupted (${esc(run.interrupted)})` : ''}</p>
<p>${contents.join(' · ')}</p>
${scoreHtml(run)}
${run.baseline ? `<p>Baseline <code>${esc(run.baseline.file)}</code>: ${run.baseline.expected} expected failures${run.baseline.flaky ? `, ${run.baseline.flaky} listed flaky` : ''}${run.baseline.stale.length ? `; <b>stale</b> (they fail the run): ${run.baseline.stale.map((id) => `<a href="#${anchor(id)}"><code>${esc(id)}</code></a>`).join(', ')}` : ''}</p>` : ''}
${run.warnings.length ? `<h3>Warnings</h3><ul>${run.warnings.map((w) => `<li>${esc(w)}</li>`).join('')}</ul>` : ''}
${pre.length ? `<h3>Failed preconditions</h3><ul>${pre.map((p) => `<li><b>${esc(p.name)}</b> (shown by <a href="#${anchor(p.shownBy)}">${esc(p.shownBy)}</a>): ${esc(p.message)}<br>blocked ${p.blocked.length}: ${p.blocked.map((id) => `<code>${esc(id)}</code>`).join(', ')}</li>`).join('')}</ul>` : ''}
${receiver ? '' : run.cleanup.failed.length ? `<p>Cleanup could not delete: ${esc(run.cleanup.failed.join('; '))}</p>` : `<p>${run.cleanup.deleted} conversations the run created were deleted at its end.</p>`}
<h2 id="failures">Failures (${failed.length})</h2>
${failed.map(failureHtml).join('\n') || '<p>None.</p>'}
${flaky.length ? `<h2 id="flaky">Flaky (${flaky.length}): passed on a retry or in some runs only</h2>\n${flaky.map(failureHtml).join('\n')}` : ''}
${stale.length ? `<p>Stale baseline entries of cases that passed: ${stale.map((r) => `<code>${esc(r.id)}</code> (${esc(r.stale!)})`).join('; ')}</p>` : ''}
<h2 id="cases">Cases</h2>
<table class="cases">${caseRows}</table>
${receiver ? '' : `<h2 id="clause-matrix">Clause matrix</h2>\n${matrixHtml(run, rows)}`}
</body></html>`;
}
