// Usage and credits (D-74): the month's balance and the plans, and usage per app per day as a table.
import { api, qs } from './api.ts';
import { field, h, table, when } from './dom.ts';
import type { PageContext } from './main.ts';
import type { Balance, UsageDay } from './types.ts';

const n = (x: number) => x.toLocaleString('en-US', { maximumFractionDigits: 3 });

export async function usagePage(c: PageContext): Promise<void> {
  const { main, params } = c;
  const since = h('input', { type: 'date', id: 'usage-since', value: params.get('since') ?? '' });
  const until = h('input', { type: 'date', id: 'usage-until', value: params.get('until') ?? '' });
  const form = h(
    'form',
    { class: 'inline-form', 'aria-label': 'Usage period', novalidate: true },
    field('From', since),
    field('To', until),
    h('button', { type: 'submit', class: 'primary' }, 'Show'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = `#/usage${qs({ since: since.value, until: until.value })}`;
  });
  const [balance, usage] = await Promise.all([
    api<Balance>('GET', '/credits'),
    api<{ since: string; until: string; data: UsageDay[] }>(
      'GET',
      `/usage${qs({ since: params.get('since'), until: params.get('until') })}`,
    ),
  ]);
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
    h('h2', {}, `Usage from ${usage.since} to ${usage.until}`),
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
  main.append(
    rows.length
      ? table(['Day (UTC)', 'App', 'Requests', 'Input tokens', 'Output tokens', 'Credits'], rows, 'Usage per app per day')
      : h('p', {}, 'No usage in this period.'),
  );
}
