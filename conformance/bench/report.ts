// The bench's report as a person reads it (a table), as JSON (the report object) and as an HTML page.
import type { BenchReport, FigureResult, Spread } from './run.ts';

function num(v: number, unit: 'ms' | 'req/s'): string {
  if (unit === 'ms') return `${v < 10 ? v.toFixed(2) : v.toFixed(1)} ms`;
  return `${Math.round(v).toLocaleString('en-US')} req/s`;
}

function ratio(r: Spread): string {
  return `${r.median.toFixed(2)}× [${r.min.toFixed(2)}–${r.max.toFixed(2)}]`;
}

/** One figure's cells: what it is, the target's median, the floor's, the ratio with its spread (or why none). */
function cells(f: FigureResult): string[] {
  if (f.skipped) return [f.title, '', '', `skipped: ${f.skipped}`];
  if (f.error) return [f.title, '', '', `error: ${f.error}`];
  if (!f.target || !f.floor || !f.ratio) return [f.title, '', '', 'not measured'];
  return [f.title, num(f.target.median, f.unit), num(f.floor.median, f.unit), ratio(f.ratio)];
}

const HEAD = ['figure', 'target', 'floor', 'target ÷ floor [spread]'];

const ABOUT =
  'The floor is a raw node:http server on this machine answering the same requests with the bytes the target answered, measured in the same rounds, alternating. Times: lower is better; throughputs (req/s): higher is better.';

export function prettyReport(r: BenchReport): string {
  const rows = [HEAD, ...r.figures.map(cells)];
  const widths = HEAD.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const lines = rows.map((row) =>
    row
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  const tail = r.leftovers.length ? [`clean-up left: ${r.leftovers.join('; ')}`] : [];
  return [`parley bench: ${r.base_url}, ${r.rounds} round(s) in ${r.seconds} s`, ABOUT, '', ...lines, ...tail].join('\n');
}

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot' }[c]};`);
}

export function htmlReport(r: BenchReport): string {
  const row = (cs: string[], tag: string) => `<tr>${cs.map((c) => `<${tag}>${esc(c)}</${tag}>`).join('')}</tr>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>parley bench: ${esc(r.base_url)}</title>
<style>body{font:14px system-ui,sans-serif;margin:2rem}table{border-collapse:collapse}td,th{padding:.3rem .8rem;border-bottom:1px solid #ddd;text-align:left}</style>
</head><body>
<h1>parley bench</h1>
<p>${esc(r.base_url)}: ${r.rounds} round(s) in ${r.seconds} s, ${esc(r.started_at)}.</p>
<p>${esc(ABOUT)}</p>
<table><thead>${row(HEAD, 'th')}</thead><tbody>
${r.figures.map((f) => row(cells(f), 'td')).join('\n')}
</tbody></table>
${r.leftovers.length ? `<p>Clean-up left: ${esc(r.leftovers.join('; '))}</p>` : ''}
</body></html>
`;
}
