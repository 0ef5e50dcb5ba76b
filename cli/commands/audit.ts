// `parley audit list` (D-79, D-75): the team's audit log, newest first, filtered by action and time.
import { Command, Option } from 'commander';
import { AUDIT_ACTIONS } from '../../src/contract/audit-actions.ts';
import { AuditEntry, type AuditEntryT, listOf } from '../../src/contract/admin.ts';
import { adminClient, noteMore, parseSince, show } from '../admin.ts';
import type { Session } from '../context.ts';
import { table, time, truncate } from '../render.ts';

const HEADER = ['TIME', 'ACTION', 'ACTOR', 'TARGET', 'CHANGES'];

function rows(entries: AuditEntryT[]): string[][] {
  return entries.map((e) => [
    time(e.created_at),
    e.action,
    // D-75: a failed sign-in's actor is nobody proven; where it came from is what a reader needs.
    e.actor.email ?? (e.actor.type === 'anonymous' ? `anonymous from ${e.address ?? '?'}` : e.actor.type),
    e.target ? e.target.id : '-',
    truncate(
      Object.entries(e.changes)
        .map(([field, [before, after]]) => `${field}: ${JSON.stringify(before)} → ${JSON.stringify(after)}`)
        .join('; ') || '-',
      80,
    ),
  ]);
}

export function auditCommand(session: Session): Command {
  const group = new Command('audit')
    .description("the team's audit log: every change of the control plane (needs parley admin login)")
    .addHelpText('after', '\nExample:\n  parley audit list --since 7d --action key.revoked\n');
  group
    .command('list')
    .alias('ls')
    .description('list entries, newest first')
    .addOption(new Option('--action <action>', 'only this action').choices(AUDIT_ACTIONS))
    .option('--since <time>', 'from this time: ISO 8601, Unix seconds, or a duration ago (24h, 7d)')
    .option('--until <time>', 'up to this time, in the same forms')
    .option('--limit <n>', 'page size, 1 to 100 (default 20)')
    .option('--after <audit_id>', 'the page after this entry')
    .addHelpText('after', '\nExamples:\n  parley audit list --since 24h\n  parley audit list --action key.revoked --json | jq .data[0]\n')
    .action(async (opts: { action?: string; since?: string; until?: string; limit?: string; after?: string }, cmd: Command) => {
      const { admin, g } = adminClient(session, cmd);
      const query = {
        action: opts.action,
        since: opts.since === undefined ? undefined : parseSince(opts.since),
        until: opts.until === undefined ? undefined : parseSince(opts.until),
        limit: opts.limit,
        after: opts.after,
      };
      const res = await admin.get('/audit', listOf(AuditEntry), query);
      show(session, g, res, () => (res.data.data.length > 0 ? table(rows(res.data.data), HEADER) : '(no entries)\n'));
      if (!g.json) noteMore(session, res.data);
    });
  return group;
}
