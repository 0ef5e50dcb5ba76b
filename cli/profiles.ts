// D-60: profiles, the settings `parley login` stores in the user's config directory (one JSON file,
// owner-only), and the chat's history beside it. Flags and the environment still win over a profile.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from './io.ts';

export interface Profile {
  base_url: string;
  /** Absent in a profile made by `parley admin login` alone. */
  api_key?: string;
  app_id?: string;
  /** D-79: the personal access token of `parley admin login`, and its id (for `parley admin logout`). */
  admin_token?: string;
  admin_token_id?: string;
}

export interface ConfigFile {
  profiles: Record<string, Profile>;
}

export const DEFAULT_PROFILE = 'default';

/** `$XDG_CONFIG_HOME/parley`, else `~/.config/parley` (the XDG base directory rule, on every platform). */
export function configDir(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME;
  // The XDG spec: a relative value is invalid and is ignored.
  if (xdg && path.isAbsolute(xdg)) return path.join(xdg, 'parley');
  return path.join(env.HOME || os.homedir(), '.config', 'parley');
}

export function configPath(env: NodeJS.ProcessEnv): string {
  return path.join(configDir(env), 'config.json');
}

export function readConfig(env: NodeJS.ProcessEnv): ConfigFile {
  const file = configPath(env);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { profiles: {} };
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as Partial<ConfigFile>;
    return { profiles: typeof parsed.profiles === 'object' && parsed.profiles !== null ? parsed.profiles : {} };
  } catch {
    throw new UsageError(`${file} is not valid JSON: fix or remove it (parley logout removes a profile)`);
  }
}

/** Written whole to a temporary file created 0600 and renamed over the old one: never readable by others, never half-written. */
export function writeConfig(env: NodeJS.ProcessEnv, config: ConfigFile): string {
  const file = configPath(env);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  // The mode given to open() is masked by the umask; 0600 is narrower than any umask leaves, but say it.
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
  return file;
}

/** The name of the active profile: `--profile`, else PARLEY_PROFILE, else `default`; and whether it was asked for. */
export function profileName(flag: string | undefined, env: NodeJS.ProcessEnv): { name: string; explicit: boolean } {
  const name = flag ?? (env.PARLEY_PROFILE || undefined);
  return { name: name ?? DEFAULT_PROFILE, explicit: name !== undefined };
}

/** The active profile, if any; a profile asked for by name that does not exist is a usage error. */
export function activeProfile(flag: string | undefined, env: NodeJS.ProcessEnv): Profile | undefined {
  const { name, explicit } = profileName(flag, env);
  const config = readConfig(env);
  const profile = Object.hasOwn(config.profiles, name) ? config.profiles[name] : undefined;
  if (!profile && explicit) {
    const known = Object.keys(config.profiles);
    throw new UsageError(
      `no profile ${JSON.stringify(name)} in ${configPath(env)}${known.length ? ` (known: ${known.join(', ')})` : ''}: create it with parley login --profile ${name}`,
    );
  }
  return profile;
}
