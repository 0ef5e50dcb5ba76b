// `parley admin login|logout` (D-79): a personal access token of the admin surface (D-68), made by
// signing in once and kept as `admin_token` in the active profile (0600), revoked by logout.
import os from 'node:os';
import { Command } from 'commander';
import { z } from 'zod';
import { AccessToken, AccessTokenCreated, AdminSession } from '../../src/contract/admin.ts';
import { AdminClient, adminClient, adminUrlOf, confirm, show } from '../admin.ts';
import { ApiError, ConnectionError } from '../client.ts';
import type { Session } from '../context.ts';
import { readStdin, UsageError } from '../io.ts';
import { configPath, profileName, readConfig, writeConfig } from '../profiles.ts';
import { Prompter } from '../prompt.ts';
import { ago, table, time } from '../render.ts';

const Deleted = z.object({ deleted: z.literal(true) });

/** How long a token of the CLI lasts (the server's default, D-68). */
const TOKEN_DAYS = 90;

export function adminCommand(session: Session): Command {
  const group = new Command('admin')
    .description('sign in to the admin API (/admin/v1) for keys, audit and the other team commands')
    .addHelpText('after', '\nExample:\n  parley admin login --email admin@demo.example\n');
  group.addCommand(loginCommand(session));
  group.addCommand(logoutCommand(session));
  group.addCommand(tokensCommand(session));
  return group;
}

function loginCommand(session: Session): Command {
  const out = session.out;
  return new Command('login')
    .description('sign in as a team member and keep a personal access token in the active profile')
    .option('--email <email>', 'your email (asked otherwise)')
    .option('--password-stdin', 'read the password from stdin (all of it; one trailing newline dropped)')
    .addHelpText(
      'after',
      `
The admin API is base_url's origin + /admin/v1. The password is asked without echo unless
--password-stdin is given; it is sent once, to sign in, and never stored. What is stored is a
personal access token (${TOKEN_DAYS} days), as admin_token in the active profile (0600).

Examples:
  parley admin login --email admin@demo.example
  printf '%s\\n' "$PARLEY_ADMIN_PASSWORD" | parley admin login --email ops@example.com --password-stdin
`,
    )
    .action(async (opts: { email?: string; passwordStdin?: boolean }, cmd: Command) => {
      const io = session.io;
      const g = session.globals(cmd);
      const { name: profile } = profileName((cmd.optsWithGlobals() as { profile?: string }).profile, io.env);
      const config = readConfig(io.env);
      const before = Object.hasOwn(config.profiles, profile) ? config.profiles[profile] : undefined;
      // D-153: signing in on another address moves the profile there (a server restarted on another
      // port); the old token is never sent to the new address, only forgotten, and said so.
      const moved = before && new URL(before.base_url).origin !== new URL(g.baseUrl).origin ? before : undefined;
      let email = opts.email;
      let password: string;
      if (opts.passwordStdin) {
        if (email === undefined) throw new UsageError('--password-stdin needs --email (stdin holds the password)');
        password = (await readStdin(io.stdin)).replace(/\r?\n$/, '');
      } else {
        const prompter = new Prompter(io.stdin, io.stderr);
        try {
          email ??= await prompter.ask('Email: ');
          password = await prompter.ask('Password (not shown): ', { secret: true });
        } finally {
          prompter.close();
        }
      }
      out.addSecret(password);
      if (email.trim() === '') throw new UsageError('no email given');
      if (password === '') throw new UsageError('no password given');

      const adminUrl = adminUrlOf(g.baseUrl);
      const anonymous = new AdminClient(session.newClient(g, adminUrl, ''));
      const signedIn = await anonymous.post('/sessions', AdminSession, { email, password });
      // The session only lives long enough to make the token; it is closed right after.
      const cookie = (signedIn.headers['set-cookie'] ?? '').split(';')[0]!;
      const asSession = { cookie, 'x-csrf-token': signedIn.data.csrf_token };
      const name = `parley CLI on ${os.hostname()}`.slice(0, 100);
      const created = await anonymous.call('POST', '/tokens', AccessTokenCreated, {
        body: { name, expires_in_days: TOKEN_DAYS },
        headers: asSession,
      });
      out.addSecret(created.data.token);
      await anonymous.call('DELETE', '/sessions/current', z.unknown(), { headers: asSession }).catch(() => {
        // The session expires by itself; the token is what matters.
      });

      config.profiles[profile] = {
        ...before,
        base_url: moved ? g.baseUrl : (before?.base_url ?? g.baseUrl),
        admin_token: created.data.token,
        admin_token_id: created.data.id,
      };
      const file = writeConfig(io.env, config);
      if (moved)
        out.note(
          `profile ${profile} now follows ${g.baseUrl} (it was ${moved.base_url})${
            moved.admin_token_id
              ? `; the admin token ${moved.admin_token_id} made there was forgotten, not sent here: if that server still knows it, sign in there and run parley admin tokens revoke ${moved.admin_token_id}`
              : ''
          }`,
        );
      const { member, team } = signedIn.data;
      out.note(
        `signed in to ${adminUrl} as ${member.email} (${member.role} of ${team.name}); token ${created.data.redacted} saved in profile ${profile} (${file})`,
      );
    });
}

function logoutCommand(session: Session): Command {
  return new Command('logout')
    .description("revoke the profile's admin token and forget it")
    .addHelpText('after', '\nExamples:\n  parley admin logout\n  parley admin logout --profile staging\n')
    .action(async (_opts: unknown, cmd: Command) => {
      const env = session.io.env;
      const { name } = profileName((cmd.optsWithGlobals() as { profile?: string }).profile, env);
      const config = readConfig(env);
      const profile = Object.hasOwn(config.profiles, name) ? config.profiles[name] : undefined;
      if (!profile?.admin_token) {
        session.out.note(`no admin login in profile ${name} (${configPath(env)}): nothing to do`);
        return;
      }
      // The profile's own token, on the profile's own server (PARLEY_ADMIN_TOKEN is not the login to end).
      const g = session.globals(cmd);
      session.out.addSecret(profile.admin_token);
      const admin = new AdminClient(session.newClient(g, adminUrlOf(profile.base_url), profile.admin_token));
      const id = profile.admin_token_id ?? '';
      let unreachable: ConnectionError | undefined;
      try {
        await admin.delete(`/tokens/${encodeURIComponent(id)}`, Deleted);
      } catch (err) {
        // Already expired or revoked: nothing left to revoke. The server out of reach (D-153): the token
        // is forgotten all the same and the failure said plainly. A refusal by a server that answers is
        // said, and the token kept to try again.
        if (err instanceof ConnectionError) unreachable = err;
        else if (err instanceof ApiError && (err.status === 401 || err.status === 404))
          session.out.note('the token was no longer valid on the server');
        else throw err;
      }
      delete profile.admin_token;
      delete profile.admin_token_id;
      writeConfig(env, config);
      if (unreachable) {
        session.out.note(
          `error: could not revoke the admin token ${id} of profile ${name}: ${unreachable.message}. It is forgotten here but stays valid on ${profile.base_url} until it expires: sign in there (parley admin login) and run parley admin tokens revoke ${id}, or revoke it in the dashboard`,
        );
        session.exitCode = 1;
        return;
      }
      session.out.note(`signed out: the admin token of profile ${name} is revoked and forgotten`);
    });
}

type AccessTokenT = z.infer<typeof AccessToken>;

const TOKEN_HEADER = ['ID', 'NAME', 'TOKEN', 'CREATED', 'LAST USED', 'EXPIRES'];

/** D-68, D-153: the member's own personal access tokens, listed with their last use and revoked by id. */
function tokensCommand(session: Session): Command {
  const group = new Command('tokens')
    .description('your personal access tokens of the admin API: list (with last use) and revoke')
    .addHelpText('after', '\nExamples:\n  parley admin tokens list\n  parley admin tokens revoke pat_id_… --yes\n');
  group
    .command('list')
    .alias('ls')
    .description("your tokens; the profile's own is marked (this CLI)")
    .addHelpText('after', "\nExample:\n  parley admin tokens list --json | jq -r '.data[] | select(.last_used_at == null) | .id'\n")
    .action(async (_o: unknown, cmd: Command) => {
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.getAll('/tokens', AccessToken);
      const own = ownTokenId(session, cmd);
      const rows = (list: AccessTokenT[]) =>
        list.map((t) => [
          t.id,
          `${t.name}${t.id === own ? ' (this CLI)' : ''}`,
          t.redacted,
          time(t.created_at),
          t.last_used_at === null ? 'never' : ago(t.last_used_at),
          time(t.expires_at),
        ]);
      show(session, g, res, () => (res.data.data.length > 0 ? table(rows(res.data.data), TOKEN_HEADER) : '(no tokens)\n'));
    });
  group
    .command('revoke')
    .description('revoke one of your tokens (asks first at a terminal)')
    .addHelpText('after', '\nExample:\n  parley admin tokens revoke pat_id_abc123 --yes\n')
    .argument('<token_id>')
    .option('--yes', 'do it without asking (a script, without a terminal, is never asked)')
    .action(async (id: string, o: { yes?: boolean }, cmd: Command) => {
      const { admin, g } = adminClient(session, cmd);
      if (!(await confirm(session, o.yes, `Revoke token ${id}? What uses it is refused from now on.`, `kept ${id}`))) return;
      const res = await admin.delete(`/tokens/${encodeURIComponent(id)}`, Deleted);
      // The profile's own token revoked: forgotten too, as by logout.
      if (id === ownTokenId(session, cmd)) {
        const { name } = profileName((cmd.optsWithGlobals() as { profile?: string }).profile, session.io.env);
        const config = readConfig(session.io.env);
        delete config.profiles[name]!.admin_token;
        delete config.profiles[name]!.admin_token_id;
        writeConfig(session.io.env, config);
      }
      show(session, g, res, () => `revoked ${id}\n`);
    });
  return group;
}

/** The id of the active profile's admin token, when the token in use is the profile's. */
function ownTokenId(session: Session, cmd: Command): string | undefined {
  if (session.io.env.PARLEY_ADMIN_TOKEN) return undefined;
  const { name } = profileName((cmd.optsWithGlobals() as { profile?: string }).profile, session.io.env);
  const config = readConfig(session.io.env);
  return Object.hasOwn(config.profiles, name) ? config.profiles[name]?.admin_token_id : undefined;
}
