// Usage and credits (D-74): the month's balance and the plans, and usage per app per day as a table.
import { api, qs } from './api.ts';
import { appChooser, teamApps } from './apps.ts';
import { field, h, table, when } from './dom.ts';
import type { PageContext } from './main.ts';
import type { Balance, UsageDay } from './types.ts';

const n = (x: number) => x.toLocaleString('en-US', { maximumFractionDigits: 3 });

const SVG = 'http://www.w3.org/2000/svg';

/** Tokens per day, all apps together, as bars (no charting library: D-95); the table below holds the numbers. */
function chart(days: UsageDay[]): Element | null {
  const perDay = new Map<string, number>();
  for (const d of days) perDay.set(d.date, (perDay.get(d.date) ?? 0) + d.total_tokens);
  if (perDay.size === 0) return null;
  const entries = [...perDay].sort(([a], [b]) => a.localeCompare(b));
  const max = Math.max(...entries.map(([, v]) => v), 1);
  const w = 600;
  const hgt = 160;
  const bar = w / entries.length;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${w} ${hgt}`);
  svg.setAttribute('class', 'chart');
  svg.setAttribute('role', 'img');
  svg.setAttribute(
    'aria-label',
    `Tokens per day, ${entries.length} day${entries.length === 1 ? '' : 's'}, at most ${n(max)} a day; the numbers are in the table below.`,
  );
  entries.forEach(([date, v], i) => {
    const r = document.createElementNS(SVG, 'rect');
    const bh = Math.max(1, (v / max) * (hgt - 4));
    r.setAttribute('x', String(i * bar + bar * 0.1));
    r.setAttribute('width', String(bar * 0.8));
    r.setAttribute('y', String(hgt - bh));
    r.setAttribute('height', String(bh));
    const t = document.createElementNS(SVG, 'title');
    t.textContent = `${date}: ${n(v)} tokens`;
    r.append(t);
    svg.append(r);
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
    api<{ since: string; until: string; data: UsageDay[] }>(
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
          ['At zero', balance.limit === 'hard' ? 'replies are refused (hard limit)' : 'replies go on, with a warning (soft limit)'],
        ] as [string, string][]
      ).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    ),
    table(
      ['Plan', 'Apps', 'Monthly allowance', 'Credits per 1,000 tokens', 'Limit'],
      balance.plans.map((p) => [
        h('span', {}, p.plan),
        h('span', {}, String(p.apps)),
        h('span', {}, n(p.monthly_allowance)),
        h('span', {}, n(p.price_per_1k_tokens)),
        h('span', {}, p.limit),
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
  );
}
