// How a setting's text becomes its value: the row type of the settings table (src/settings.ts) and
// the readers its rows share, each failing with a ConfigError that names the setting and what it allows.
export class ConfigError extends Error {}

export type Env = Readonly<Record<string, string | undefined>>;

/** One setting whose value is of type T; D is its default's type (null: none, the value is then null). */
export interface Setting<T, D extends string | null> {
  /** `--name <arg>` for a value, `--name` alone for a switch (which gives `switched`). */
  flag?: string;
  /** The environment variable read when the flag is not given (an empty one counts as unset). */
  env?: string;
  /** What error messages call it, when not its environment variable. */
  name?: string;
  /** The default as a user would write it (parsed like a given value); null: none. */
  default: D;
  /** The default as the docs show it (markdown), when it is not `default` itself: none, or a switch's. */
  shown?: string;
  /** The value a switch flag gives. */
  switched?: T;
  /** The value of a given text; throws a ConfigError that names the setting (`name`) and what it allows. */
  parse: (text: string, name: string, env: Env) => T;
  /** `npm start -- --help`'s description. */
  help: string;
  /** The README's description, with its links. */
  meaning: string;
}

/** Keeps the types of each row (T and D) for `Config`. */
export const row = <T, D extends string | null>(s: Setting<T, D>): Setting<T, D> => s;

export const text = (t: string): string => t;

/** Switches read from the environment: `1`, `true` or `yes` (any case) is on, anything else off. */
export const yes = (t: string): boolean => /^(1|true|yes)$/i.test(t);

/** A number within [min, max]: a whole one, or with `decimals` a decimal one that may have spaces around it. */
export function number(min: number, max: number, o: { unit?: string; decimals?: boolean } = {}) {
  return (t: string, name: string): number => {
    const n = Number(t);
    const form = o.decimals ? /^\d+(\.\d+)?$/.test(t.trim()) : /^\d+$/.test(t);
    if (!form || n < min || n > max)
      throw new ConfigError(
        `${name} must be ${o.decimals ? 'a number' : 'an integer'} from ${min} to ${max}${o.unit ?? ''} (got ${JSON.stringify(t)})`,
      );
    return n;
  };
}

export const DAY_MS = 86_400_000;
/** Days, decimals allowed, kept in milliseconds (what the webhook worker counts in). */
export const daysInMs = (min: number, max: number) => {
  const days = number(min, max, { decimals: true });
  return (t: string, name: string) => days(t, name) * DAY_MS;
};

/**
 * D-65: PUBLIC_URL is an absolute http(s) URL with no credentials, query or fragment (a path is kept,
 * for a proxy that serves Parley under one); returned without its trailing slash.
 */
export function parsePublicUrl(text: string): string {
  const fail = (why: string) =>
    new ConfigError(`PUBLIC_URL must be ${why}, such as https://parley.example.com (got ${JSON.stringify(text)})`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw fail('an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw fail('an http:// or https:// URL');
  if (url.username || url.password) throw fail('a URL without a user name or password');
  if (url.search || url.hash || text.includes('?') || text.includes('#')) throw fail('a URL without a query or fragment');
  return url.href.replace(/\/+$/, '');
}

/** D-143: an http(s) URL without credentials in it (the key is OPENAI_API_KEY's, never part of an address that is shown). */
export function parseModelUrl(text: string, name: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`${name} must be an absolute http:// or https:// URL (got ${JSON.stringify(text)})`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError(`${name} must be an http:// or https:// URL`);
  if (url.username || url.password) throw new ConfigError(`${name} must not hold a user name or password: put the key in OPENAI_API_KEY`);
  return url.href.replace(/\/+$/, '');
}
