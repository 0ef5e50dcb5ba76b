// `parley admin login|logout` (D-79): a personal access token of the admin surface (D-68), made by
// signing in once and kept as `admin_token` in the active profile (0600), revoked by logout.
import os from 'node:os';
import { Command } from 'commander';
import { z } from 'zod';
import { AccessTokenCreated, AdminSession } from '../../src/contract/admin.ts';
import { AdminClient, adminUrlOf } from '../admin.ts';
import { ApiError } from '../client.ts';
import type { Session } from '../context.ts';
import { readStdin, UsageError } from '../io.ts';
import { configPath, profileName, readConfig, writeConfig } from '../profiles.ts';
import { Prompter } from '../prompt.ts';

const Deleted = z.object({ deleted: z.literal(true) });

/** How long a token of the CLI lasts (the server's default, D-68). */
const TOKEN_DAYS = 90;

export function adminCommand(session: Session): Command {
  const group = new Command('admin')
    .description('sign in to the admin API (/admin/v1) for keys, audit and the other team commands')
    .addHelpText('after', '\nExample:\n  parley admin login --email admin@demo.example\n');
  group.addCommand(loginCommand(session));
  group.addCommand(logoutCommand(session));
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
      // A profile is one server: its admin token is never made on, or sent to, another.
      if (before && new URL(before.base_url).origin !== new URL(g.baseUrl).origin)
        throw new UsageError(
          `profile ${profile} is for ${before.base_url}, not ${g.baseUrl}: sign in to another server with --profile <name>`,
        );
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
        base_url: before?.base_url ?? g.baseUrl,
        admin_token: created.data.token,
        admin_token_id: created.data.id,
      };
      const file = writeConfig(io.env, config);
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
      try {
        await admin.delete(`/tokens/${encodeURIComponent(profile.admin_token_id ?? '')}`, Deleted);
      } catch (err) {
        // Already expired or revoked: nothing left to revoke. Anything else is said, and the token kept to try again.
        if (!(err instanceof ApiError && (err.status === 401 || err.status === 404))) throw err;
        session.out.note('the token was no longer valid on the server');
      }
      delete profile.admin_token;
      delete profile.admin_token_id;
      writeConfig(env, config);
      session.out.note(`signed out: the admin token of profile ${name} is revoked and forgotten`);
    });
}
