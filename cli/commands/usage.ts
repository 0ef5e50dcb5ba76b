// `parley usage` (D-79, D-74): the team's usage per app per UTC day, its refused requests (D-157) and its
// credits this month, through the admin surface (GET /admin/v1/usage).
import { Command } from 'commander';
import { type UsageReportT, UsageQuery } from '../../src/contract/admin.ts';
import { UsageReport } from '../../src/contract/admin.ts';
import { adminClient, checkedBody, narrowingApp, parseSinceDay, show } from '../admin.ts';
import type { Session } from '../context.ts';
import { table, time } from '../render.ts';

const HEADER = ['DATE', 'APP', 'REQUESTS', 'INPUT', 'OUTPUT', 'TOTAL', 'CREDITS'];
const REFUSED_HEADER = ['DATE', 'APP', 'REASON', 'REFUSED'];
/** D-157's reasons, as a person reads them. */
const REASONS: Record<UsageReportT['refused'][number]['reason'], string> = {
  credits: 'credits (hard limit at zero)',
  rate_limit: 'rate limit (429)',
  storage_quota: 'storage quota',
};

function render(r: UsageReportT): string {
  const rows = r.data.map((d) => [
    d.date,
    d.app_id,
    String(d.requests),
    String(d.input_tokens),
    String(d.output_tokens),
    String(d.total_tokens),
    String(d.credits),
  ]);
  const b = r.balance;
  const days = rows.length > 0 ? table(rows, HEADER) : `(no usage from ${r.since} to ${r.until})\n`;
  // D-157: said only when some were refused (a refusal for credits shows beside the balance that caused it).
  const refused = r.refused.length
    ? `\nrefused requests:\n${table(
        r.refused.map((x) => [x.date, x.app_id, REASONS[x.reason], String(x.requests)]),
        REFUSED_HEADER,
      )}`
    : '';
  return `${days}${refused}\ncredits: ${b.credits} left of ${b.allowance} this month (${b.used} used; ${b.limit} limit; the allowance comes again ${time(b.period_end)})\n`;
}

export function usageCommand(session: Session): Command {
  return new Command('usage')
    .description("the team's usage per app and UTC day, its refused requests, and its credits this month (needs parley admin login)")
    .option('--since <date>', 'first day, such as 2026-11-01, or that long ago, such as 24h or 7d (default: the first of this month, UTC)')
    .option('--until <date>', 'last day, inclusive (default: today, UTC)')
    .addHelpText(
      'after',
      `
--app filters by one app when given as a flag (the profile's or PARLEY_APP_ID's app does not: usage is the team's; D-152).

Examples:
  parley usage
  parley usage --since 7d
  parley usage --app app_demo --since 2026-11-01 --until 2026-11-15 --json | jq .balance.credits
`,
    )
    .action(async (opts: { since?: string; until?: string }, cmd: Command) => {
      const { admin, g } = adminClient(session, cmd);
      const since = opts.since === undefined ? undefined : parseSinceDay(opts.since);
      const query = checkedBody(
        UsageQuery,
        { app_id: narrowingApp(g), since, until: opts.until },
        { app_id: '--app', since: '--since', until: '--until' },
      );
      const res = await admin.get('/usage', UsageReport, query);
      show(session, g, res, () => render(res.data));
    });
}
