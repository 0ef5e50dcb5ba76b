// Usage and credits (D-74): the month's balance and the plans, and usage per app per day as a table.
import { api, qs } from './api.ts';
import { appChooser, teamApps } from './apps.ts';
import { field, h, table, when } from './dom.ts';
import type { PageContext } from './main.ts';
import type { Balance, UsageDay, UsageReport } from './types.ts';

const n = (x: number) => x.toLocaleString('en-US', { maximumFractionDigits: 3 });

/** D-74 at zero, per plan: what a reply of an app on a plan with this limit does once the credits are spent. */
const AT_ZERO = { soft: 'replies run, with a warning', hard: 'replies are refused' } as const;

/** The share of the month's allowance used from which the banner warns (D-154). */
const WARN_AT = 0.8;

/**
 * D-154: the banner every page shows (the shell) while the team's credits are spent (≤ 0) or nearly (80 %
 * used or more), saying what happens at zero on the plans the team's apps are on; null otherwise.
 */
export function creditsBanner(b: Balance): HTMLElement | null {
  const spent = b.credits <= 0;
  const share = b.allowance > 0 ? b.used / b.allowance : 0;
  if (!spent && share < WARN_AT) return null;
  const head = spent
    ? `This month's credits are spent: ${n(b.credits)} left of ${n(b.allowance)}.`
    : `${Math.floor(share * 100)} % of this month's credits are used: ${n(b.credits)} left of ${n(b.allowance)}.`;
  return h(
    'div',
    { class: `notice warning credits-banner${spent ? ' spent' : ''}`, role: 'status', 'data-testid': 'credits-banner' },
    `${head} ${spent ? 'Now' : 'At zero'}: ${atZero(b)}. The allowance comes again ${when(b.period_end)}. `,
    h('a', { href: '#/usage' }, 'Usage and credits'),
  );
}

/** What happens at zero on the team's plans: one rule when they agree, else each limit with its apps. */
function atZero(b: Balance): string {
  const apps = (limit: 'soft' | 'hard') => b.plans.filter((p) => p.limit === limit).reduce((sum, p) => sum + p.apps, 0);
  const soft = apps('soft');
  const hard = apps('hard');
  if (hard === 0) return `${AT_ZERO.soft} (every app is on a soft plan)`;
  if (soft === 0) return `${AT_ZERO.hard} (every app is on a hard plan)`;
  const of = (k: number) => `${k} app${k === 1 ? '' : 's'}`;
  return `${AT_ZERO.hard} for the ${of(hard)} on a hard plan; for the ${of(soft)} on a soft plan, ${AT_ZERO.soft}`;
}

const SVG = 'http://www.w3.org/2000/svg';

/** An SVG element with its attributes. */
function svgEl(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const el = document.createElementNS(SVG, tag) as SVGElement;
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/**
 * Tokens per day, all apps together, as bars (no charting library: D-95); the table below holds the numbers.
 * D-154: it has axes, the days under their bars and the scale's top and zero beside them, and a bar is at
 * most 48 units wide, so that one day reads as one day of tokens, not as a solid block.
 */
function chart(days: UsageDay[]): Element | null {
  const perDay = new Map<string, number>();
  for (const d of days) perDay.set(d.date, (perDay.get(d.date) ?? 0) + d.total_tokens);
  if (perDay.size === 0) return null;
  const entries = [...perDay].sort(([a], [b]) => a.localeCompare(b));
  const max = Math.max(...entries.map(([, v]) => v), 1);
  const [w, hgt, left, bottom, top] = [600, 200, 72, 28, 10];
  const plot = { w: w - left - 4, h: hgt - bottom - top };
  const slot = plot.w / entries.length;
  const barW = Math.min(48, slot * 0.8);
  const svg = svgEl('svg', {
    viewBox: `0 0 ${w} ${hgt}`,
    class: 'chart',
    role: 'img',
    'aria-label': `Tokens per day, ${entries.length} day${entries.length === 1 ? '' : 's'}, at most ${n(max)} a day; the numbers are in the table below.`,
  });
  svg.append(
    svgEl('line', { class: 'axis', x1: left, y1: top, x2: left, y2: top + plot.h }),
    svgEl('line', { class: 'axis', x1: left, y1: top + plot.h, x2: w - 4, y2: top + plot.h }),
    svgEl('text', { x: left - 6, y: top + 12, 'text-anchor': 'end' }, n(max)),
    svgEl('text', { x: left - 6, y: top + plot.h, 'text-anchor': 'end' }, '0'),
  );
  // Every day's label when they fit (a label is about 90 units wide), else the first and the last.
  const labelled = new Set(slot >= 90 ? entries.map((_, i) => i) : [0, entries.length - 1]);
  entries.forEach(([date, v], i) => {
    const bh = Math.max(1, (v / max) * plot.h);
    const x = left + i * slot + (slot - barW) / 2;
    const bar = svgEl('rect', { x, width: barW, y: top + plot.h - bh, height: bh });
    bar.append(svgEl('title', {}, `${date}: ${n(v)} tokens`));
    svg.append(bar);
    if (labelled.has(i)) {
      const anchor = entries.length === 1 || slot >= 90 ? 'middle' : i === 0 ? 'start' : 'end';
      const lx = anchor === 'middle' ? x + barW / 2 : anchor === 'start' ? left : w - 4;
      svg.append(svgEl('text', { x: lx, y: hgt - 8, 'text-anchor': anchor }, date));
    }
  });
  return svg;
}

export async function usagePage(c: PageContext): Promise<void> {
  const { main, params } = c;
  const appId = params.get('app') ?? '';
  const app = appChooser('usage-app', await teamApps(), appId, 'All apps');
  const since = h('input', { type: 'date', id: 'usage-since', value: params.get('since') ?? '' });
  const until = h('input', { type: 'date', id: 'usage-until', value: params.get('until') ?? '' });
  const form = h(
    'form',
    { class: 'inline-form', 'aria-label': 'Usage of an app in a period', novalidate: true },
    field('App', app),
    field('From', since),
    field('To', until),
    h('button', { type: 'submit', class: 'primary' }, 'Show'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = `#/usage${qs({ app: app.value.trim(), since: since.value, until: until.value })}`;
  });
  const [balance, usage] = await Promise.all([
    api<Balance>('GET', '/credits'),
    api<Pick<UsageReport, 'since' | 'until' | 'data' | 'refused'>>(
      'GET',
      `/usage${qs({ app_id: appId, since: params.get('since'), until: params.get('until') })}`,
    ),
  ]);
  since.value ||= usage.since;
  until.value ||= usage.until;
  main.append(
    h('h2', {}, 'Credits this month'),
    h(
      'dl',
      { class: 'facts', 'data-testid': 'balance' },
      ...(
        [
          ['Left', n(balance.credits)],
          ['Used', n(balance.used)],
          ['Allowance', n(balance.allowance)],
          ['Period', `${when(balance.period_start)} to ${when(balance.period_end)}`],
          ['At zero', atZero(balance)],
        ] as [string, string][]
      ).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    ),
    table(
      ['Plan', 'Apps', 'Monthly allowance', 'Credits per 1,000 tokens', 'Limit: at zero'],
      balance.plans.map((p) => [
        h('span', {}, p.plan),
        h('span', {}, String(p.apps)),
        h('span', {}, n(p.monthly_allowance)),
        h('span', {}, n(p.price_per_1k_tokens)),
        h('span', {}, `${p.limit}: ${AT_ZERO[p.limit]}`),
      ]),
      'Plans',
    ),
    h('h2', {}, `Usage${appId ? ` of ${appId}` : ''} from ${usage.since} to ${usage.until}`),
    form,
  );
  const rows = usage.data.map((d) => [
    h('span', {}, d.date),
    h('span', {}, d.app_id),
    h('span', {}, n(d.requests)),
    h('span', {}, n(d.input_tokens)),
    h('span', {}, n(d.output_tokens)),
    h('span', {}, n(d.credits)),
  ]);
  const drawn = chart(usage.data);
  if (drawn) main.append(drawn);
  main.append(
    rows.length
      ? table(['Day (UTC)', 'App', 'Requests', 'Input tokens', 'Output tokens', 'Credits'], rows, 'Usage per app per day')
      : h('p', {}, appId ? 'No usage of this app in this period.' : 'No usage in this period.'),
    h('h2', {}, 'Refused requests'),
    // D-157: what the team's clients were refused, and why (a server before it answers no `refused`).
    (usage.refused ?? []).length
      ? table(
          ['Day (UTC)', 'App', 'Why', 'Refused'],
          usage.refused.map((r) => [
            h('span', {}, r.date),
            h('span', {}, r.app_id),
            h('span', {}, REFUSED_WHY[r.reason]),
            h('span', {}, n(r.requests)),
          ]),
          'Refused requests per app per day',
        )
      : h('p', {}, 'No request was refused for credits, a rate limit or the storage quota in this period.'),
  );
}

/** D-157's reasons, as the page says them. */
const REFUSED_WHY: Record<UsageReport['refused'][number]['reason'], string> = {
  credits: 'Credits spent on a hard plan',
  rate_limit: 'Rate limit (429)',
  storage_quota: 'Storage quota full',
};
