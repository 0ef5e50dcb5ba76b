// `parley login` and `parley logout` (D-60): a profile checked against the server, stored owner-only.
import { Command } from 'commander';
import { ParleyClient } from '../client.ts';
import { DEFAULT_BASE_URL, refuseMistyped, type Session } from '../context.ts';
import { UsageError } from '../io.ts';
import { configPath, profileName, readConfig, writeConfig } from '../profiles.ts';
import { Prompter } from '../prompt.ts';

export function loginCommand(session: Session): Command {
  const out = session.out;
  return new Command('login')
    .description('store a base URL, key and default app as a profile, after checking them against the server')
    .addHelpText(
      'after',
      `
Asks for what --base-url, --api-key and --app do not give; the key is not echoed. The profile is
written to $XDG_CONFIG_HOME/parley/config.json (else ~/.config/parley/config.json), readable by
you alone. Flags and PARLEY_* variables still win over it.

Examples:
  parley login
  parley login --profile staging --base-url https://parley.example.com/v1
  printf 'http://127.0.0.1:8787/v1\\nsk_live_…\\napp_demo\\n' | parley login
`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const io = session.io;
      // Only flags: login exists to type the values, the environment is not a profile.
      const flags = cmd.optsWithGlobals() as { baseUrl?: string; apiKey?: string; app?: string; profile?: string };
      const { name } = profileName(flags.profile, io.env);
      const prompter = new Prompter(io.stdin, io.stderr);
      let baseUrl: string, apiKey: string, app: string;
      try {
        baseUrl = flags.baseUrl ?? ((await prompter.ask(`Base URL [${DEFAULT_BASE_URL}]: `)) || DEFAULT_BASE_URL);
        apiKey = flags.apiKey ?? (await prompter.ask('API key (sk_live_…, not shown): ', { secret: true }));
        out.addSecret(apiKey);
        app = flags.app ?? (await prompter.ask('Default app id: '));
      } finally {
        prompter.close();
      }
      if (!/^https?:\/\/\S+$/.test(baseUrl))
        throw new UsageError(`the base URL must be an http or https URL like ${DEFAULT_BASE_URL} (got ${JSON.stringify(baseUrl)})`);
      if (apiKey === '') throw new UsageError('no API key given');
      refuseMistyped(apiKey, 'the API key');
      if (app === '') throw new UsageError('no app id given');
      // D-60: checked before anything is stored; a wrong key or app is the API's error, exit 1.
      const client = new ParleyClient({ baseUrl, apiKey, appId: app, timeoutMs: 10_000, signal: out.closedSignal, validate: false });
      try {
        await client.getConfig();
      } finally {
        await client.close();
      }
      const config = readConfig(io.env);
      // D-79: an admin login of the same server stays; one made for another server would be sent to this one.
      const before = Object.hasOwn(config.profiles, name) ? config.profiles[name] : undefined;
      const sameServer = before?.admin_token !== undefined && originOf(before.base_url) === originOf(baseUrl);
      config.profiles[name] = {
        base_url: baseUrl,
        api_key: apiKey,
        app_id: app,
        ...(sameServer ? { admin_token: before.admin_token, admin_token_id: before.admin_token_id } : {}),
      };
      if (before?.admin_token !== undefined && !sameServer)
        out.note(`the profile's admin login was for another server and is forgotten (it was not revoked there)`);
      const file = writeConfig(io.env, config);
      out.note(`logged in: profile ${name} (${app} at ${baseUrl}) saved to ${file}`);
    });
}

export function logoutCommand(session: Session): Command {
  return new Command('logout')
    .description('remove the active profile (--profile, PARLEY_PROFILE, else default) from the config file')
    .addHelpText('after', '\nExamples:\n  parley logout\n  parley logout --profile staging\n')
    .action((_opts: unknown, cmd: Command) => {
      const env = session.io.env;
      const { name } = profileName((cmd.optsWithGlobals() as { profile?: string }).profile, env);
      const config = readConfig(env);
      if (!Object.hasOwn(config.profiles, name)) {
        session.out.note(`no profile ${name} in ${configPath(env)}: nothing to do`);
        return;
      }
      delete config.profiles[name];
      writeConfig(env, config);
      session.out.note(`logged out: profile ${name} removed from ${configPath(env)}`);
    });
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
