// What a team shows of a run (D-105, extended: capabilities): a JSON summary and an SVG badge, written
// beside the report (`--out conformance.xml` → `conformance.summary.json`, `conformance.badge.svg`).
// The badge is self-contained: no script, no link, no font or image fetched; it reads the same offline.
import path from 'node:path';
import { esc } from './html.ts';
import type { RunResults, Score } from './results.ts';
import { percent } from './score.ts';

/** The files written beside a report: its path without the extension, then `.summary.json` and `.badge.svg`. */
export function besideReport(out: string): { summary: string; badge: string } {
  const ext = path.extname(out);
  const stem = ext ? out.slice(0, -ext.length) : out;
  return { summary: `${stem}.summary.json`, badge: `${stem}.badge.svg` };
}

/** The summary a dashboard or a README reads: what judged, the counts, and the score by capability. */
export function summaryJson(run: RunResults): string {
  const s = run.score;
  return `${JSON.stringify(
    {
      suite: run.suite,
      interfaceVersion: run.interfaceVersion,
      profile: run.profile,
      runId: run.runId,
      startedAt: run.startedAt,
      baseUrl: run.baseUrl,
      summary: run.summary,
      passRate: s.overall.passRate,
      passRateText: percent(s.overall.passRate),
      counted: s.overall.total,
      interface: s.interface,
      capabilities: Object.fromEntries(s.capabilities.map(({ name, ...rest }) => [name, rest])),
      ...(run.baseline ? { baseline: run.baseline } : {}),
      ...(run.interrupted ? { interrupted: run.interrupted } : {}),
    },
    null,
    2,
  )}\n`;
}

function colour(score: Score): string {
  const r = score.overall.passRate;
  if (r === null) return '#9f9f9f';
  if (r === 1) return '#4c1';
  if (r >= 0.95) return '#97ca00';
  if (r >= 0.8) return '#dfb317';
  if (r >= 0.5) return '#fe7d37';
  return '#e05d44';
}

/** Widths as Verdana 11px sets them, near enough for a badge (shields.io's look). */
function textWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += /[il.,:;|!' ]/.test(ch) ? 3.5 : /[mwMW%]/.test(ch) ? 10 : /[A-Z0-9]/.test(ch) ? 7.5 : 6.5;
  return Math.ceil(w);
}

/**
 * `conformance | 97.4% spec-1.0.0`: the pass rate of what the target claims, and the profile that
 * judged. Green at 100%, then yellow-green, yellow, orange, red; grey when no case counted.
 */
export function badgeSvg(run: Pick<RunResults, 'profile' | 'score' | 'summary' | 'suite'>): string {
  const left = 'conformance';
  const right = `${percent(run.score.overall.passRate)} ${run.profile}`;
  const lw = textWidth(left) + 12;
  const rw = textWidth(right) + 12;
  const w = lw + rw;
  const title = `${run.suite.name} ${run.suite.version}, profile ${run.profile}: ${run.score.overall.passed} of ${run.score.overall.total} counted cases passed (${percent(run.score.overall.passRate)})`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="20" role="img" aria-label="${esc(`${left}: ${right}`)}">
<title>${esc(title)}</title>
<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>
<clipPath id="r"><rect width="${w}" height="20" rx="3" fill="#fff"/></clipPath>
<g clip-path="url(#r)"><rect width="${lw}" height="20" fill="#555"/><rect x="${lw}" width="${rw}" height="20" fill="${colour(run.score)}"/><rect width="${w}" height="20" fill="url(#s)"/></g>
<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">
<text x="${lw / 2}" y="15" fill="#010101" fill-opacity=".3">${esc(left)}</text><text x="${lw / 2}" y="14">${esc(left)}</text>
<text x="${lw + rw / 2}" y="15" fill="#010101" fill-opacity=".3">${esc(right)}</text><text x="${lw + rw / 2}" y="14">${esc(right)}</text>
</g>
</svg>
`;
}
