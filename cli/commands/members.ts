// `parley members list|add|update|remove` (D-79, D-72): the team's members through the admin surface.
// `add` without a password prints the one-time set-password link once; `remove` asks first at a
// terminal, as `keys revoke` does (D-64).
import { Command, Option } from 'commander';
import {
  AddMemberRequest,
  AdminDeletion,
  AdminMember,
  AdminMemberAdded,
  type AdminMemberT,
  listOf,
  UpdateMemberRequest,
} from '../../src/contract/admin.ts';
import { adminClient, checkedBody, confirm, show } from '../admin.ts';
import type { Session } from '../context.ts';
import { readStdin } from '../io.ts';
import { canAsk } from '../prompt.ts';
import { ago, table } from '../render.ts';

const HEADER = ['ID', 'EMAIL', 'NAME', 'ROLE', 'PASSWORD', 'LAST SIGN-IN', 'ADDED'];
const ROLES = ['admin', 'viewer'];

function rows(members: AdminMemberT[]): string[][] {
  return members.map((m) => [
    m.id,
    m.email,
    m.name ?? '-',
    m.role,
    m.password_set ? 'set' : 'invited',
    m.last_sign_in_at === null ? 'never' : ago(m.last_sign_in_at),
    ago(m.created_at),
  ]);
}

export function membersCommand(session: Session): Command {
  const out = session.out;
  const group = new Command('members')
    .description("the team's members: list, add, update, remove (needs parley admin login)")
    .addHelpText('after', '\nExample:\n  parley members add --email ana@example.com --role viewer\n');

  group
    .command('list')
    .alias('ls')
    .description("the team's members, with their roles and last sign-in")
    .addHelpText('after', '\nExample:\n  parley members list --json | jq -r \'.data[] | select(.role == "admin") | .email\'\n')
    .action(async (_o: unknown, cmd: Command) => {
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.get('/members', listOf(AdminMember));
      show(session, g, res, () => (res.data.data.length > 0 ? table(rows(res.data.data), HEADER) : '(no members)\n'));
    });

  group
    .command('add')
    .description('add a member: with --password-stdin ready to sign in, else with a one-time set-password link')
    .requiredOption('--email <email>', 'their email (unique across the service)')
    .addOption(new Option('--role <role>', 'admin or viewer').choices(ROLES).makeOptionMandatory())
    .option('--name <name>', 'their name')
    .option('--password-stdin', 'read their password from stdin (all of it; one trailing newline dropped)')
    .addHelpText(
      'after',
      '\nWithout --password-stdin the answer carries a link, valid 7 days, that the admin passes on (no mail is sent).\n\nExample:\n  parley members add --email ana@example.com --role viewer --name Ana\n',
    )
    .action(async (o: { email: string; role: string; name?: string; passwordStdin?: boolean }, cmd: Command) => {
      const password = o.passwordStdin ? (await readStdin(session.io.stdin)).replace(/\r?\n$/, '') : undefined;
      const body = checkedBody(
        AddMemberRequest,
        { email: o.email, role: o.role, name: o.name, password },
        { email: '--email', role: '--role', name: '--name', password: '--password-stdin' },
      );
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.post('/members', AdminMemberAdded, body);
      const m = res.data;
      show(session, g, res, () =>
        // D-72: the link carries the token (the dashboard's page); without a dashboard, the token goes beside it.
        m.invite
          ? `${m.invite.accept_url}\n${m.invite.accept_url.includes(m.invite.token) ? '' : `token: ${m.invite.token}\n`}`
          : `added ${m.id} (${m.email}, ${m.role}); they can sign in now\n`,
      );
      if (!g.json && m.invite)
        out.note(
          `added ${m.id} (${m.email}, ${m.role}): pass the link above on; it sets their password once, until ${new Date(m.invite.expires_at * 1000).toISOString()}`,
        );
    });

  group
    .command('update')
    .argument('<member_id>')
    .description("change a member's role: in effect at their next request")
    .addOption(new Option('--role <role>', 'admin or viewer').choices(ROLES).makeOptionMandatory())
    .addHelpText('after', '\nExample:\n  parley members update mem_abc123 --role admin\n')
    .action(async (id: string, o: { role: string }, cmd: Command) => {
      const body = checkedBody(UpdateMemberRequest, { role: o.role }, { role: '--role' });
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.patch(`/members/${encodeURIComponent(id)}`, AdminMember, body);
      show(session, g, res, () => `${res.data.id} (${res.data.email}) is now ${res.data.role}\n`);
    });

  group
    .command('remove')
    .alias('rm')
    .argument('<member_id>')
    .description('remove a member: their sessions and personal access tokens end at once; asks first on a terminal')
    .option('-y, --yes', 'do not ask for confirmation')
    .addHelpText('after', '\nWithout a terminal (a script, a pipe) it never asks.\n\nExample:\n  parley members remove mem_abc123 --yes\n')
    .action(async (id: string, o: { yes?: boolean }, cmd: Command) => {
      const { admin, g } = adminClient(session, cmd);
      // D-64: a member who is not there is the server's 404, not a question.
      const asks = !o.yes && canAsk(session.io);
      const known = asks ? (await admin.get('/members', listOf(AdminMember))).data.data.find((m) => m.id === id) : undefined;
      const question = `Remove ${id} (${known?.email}, ${known?.role})? Their sessions and access tokens end at once.`;
      if (known && !(await confirm(session, o.yes, question, `kept ${id}`))) return;
      const res = await admin.delete(`/members/${encodeURIComponent(id)}`, AdminDeletion);
      show(session, g, res, () => `removed ${id}\n`);
    });

  return group;
}
