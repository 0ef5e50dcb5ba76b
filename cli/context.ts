// Global options (flags, then environment, then defaults) and the client they configure.
import { Option, type Command } from 'commander';
import { ApiError, DEFAULT_TIMEOUT_MS, ParleyClient } from './client.ts';
import { type Output, processIo, UsageError, withHint, type CliIo } from './io.ts';
import { checkFormat } from '../src/core/api-keys.ts';
import { activeProfile, profileName } from './profiles.ts';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8787/v1';

export interface Globals {
  baseUrl: string;
  apiKey: string | undefined;
  app: string | undefined;
  /** Where `app` came from, for a hint when something is not found in it. */
  appSource: string | undefined;
  timeoutMs: number;
  json: boolean;
  verbose: boolean;
  /** D-62: how many times a refused or unreachable request is tried again (0: never). */
  retries: number;
  /** D-79: the admin surface's personal access token (PARLEY_ADMIN_TOKEN, else the profile's). */
  adminToken: string | undefined;
  /** D-153: the base URL the profile's admin token was made on; undefined for PARLEY_ADMIN_TOKEN, which names no server. */
  adminTokenServer: string | undefined;
  /** The active profile's name, for the words of a hint. */
  profile: string;
  /** D-120: `Parley-Scenario` and `Parley-Test-Id` of the command's requests (`--scenario`, `--test-id`). */
  scenarioHeaders: Record<string, string>;
}

/** D-62: the longest Retry-After that --retry waits for; a longer one (a day's limit) is reported instead. */
export const MAX_RETRY_WAIT_MS = 60_000;

/** Declared on the program and on every command, so they may stand before or after the command name. */
export function addGlobalOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--base-url <url>', `base URL of the API, ending in /v1 (env PARLEY_BASE_URL, default ${DEFAULT_BASE_URL})`))
    .addOption(new Option('--api-key <key>', 'secret API key, sk_live_… (env PARLEY_API_KEY); never printed'))
    .addOption(new Option('--app <app_id>', 'app id (env PARLEY_APP_ID)'))
    .addOption(
      new Option(
        '--timeout <seconds>',
        `seconds to wait for a connection, an answer, or the next chunk of a stream (env PARLEY_TIMEOUT, default ${DEFAULT_TIMEOUT_MS / 1000})`,
      ),
    )
    .addOption(
      new Option(
        '--profile <name>',
        'use this profile of parley login (env PARLEY_PROFILE, default "default"); flags and environment still win',
      ),
    )
    .addOption(
      new Option(
        '--retry <n>',
        `retry a 429 after its Retry-After (up to ${MAX_RETRY_WAIT_MS / 1000} s) and network failures, n times; POSTs carry an Idempotency-Key so none applies twice`,
      ),
    )
    .addOption(new Option('--json', "print the API's JSON exactly (NDJSON, one event per line, for streams)"))
    .addOption(
      new Option(
        '--scenario <directives>',
        'send Parley-Scenario: make the server fail as a test asks, e.g. drop-after=3 (docs/scenarios.md)',
      ),
    )
    .addOption(new Option('--test-id <id>', 'send Parley-Test-Id: the test run the requests belong to (docs/scenarios.md)'))
    .addOption(new Option('--verbose', 'log requests and responses to stderr (the key is redacted)'));
}

/**
 * D-70: a key or token of Parley's checksummed format whose checksum is wrong was mistyped or cut:
 * refused (exit 2) before any request, without printing it. Other shapes go to the server as they are.
 */
export function refuseMistyped(secret: string, what: string): void {
  if (checkFormat(secret) === 'mistyped')
    throw new UsageError(
      `${what} fails its checksum (its last 6 characters, D-70): it was mistyped or cut short; copy it again (nothing was sent)`,
    );
}

/** `--timeout` / PARLEY_TIMEOUT: a positive number of seconds, or a usage error. */
export function parseSeconds(text: string): number {
  const seconds = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(seconds > 0))
    throw new UsageError(`--timeout must be a positive number of seconds (got ${JSON.stringify(text)})`);
  return seconds;
}

/** The options of `cmd` and its ancestors; the one nearest the command wins. */
export function resolveGlobals(cmd: Command, env: NodeJS.ProcessEnv): Globals {
  const merged: Record<string, unknown> = {};
  const chain: Command[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) chain.unshift(c);
  for (const c of chain) for (const [k, v] of Object.entries(c.opts())) if (v !== undefined) merged[k] = v;

  // D-60: flags, then the environment, then the profile, then the defaults.
  const profile = activeProfile(merged.profile as string | undefined, env);
  const baseUrl = String(merged.baseUrl ?? (env.PARLEY_BASE_URL || profile?.base_url || DEFAULT_BASE_URL));
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UsageError(`--base-url must be a URL like ${DEFAULT_BASE_URL} (got ${JSON.stringify(baseUrl)})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--base-url must be an http or https URL (got ${JSON.stringify(baseUrl)})`);

  const retryText = String(merged.retry ?? '0');
  if (!/^\d+$/.test(retryText) || Number(retryText) > 10)
    throw new UsageError(`--retry must be a whole number from 0 to 10 (got ${JSON.stringify(retryText)})`);

  const seconds = parseSeconds(String(merged.timeout ?? (env.PARLEY_TIMEOUT || DEFAULT_TIMEOUT_MS / 1000)));

  const app = (merged.app as string | undefined) ?? (env.PARLEY_APP_ID || profile?.app_id || undefined);
  const appSource =
    merged.app !== undefined
      ? '--app'
      : env.PARLEY_APP_ID
        ? 'PARLEY_APP_ID'
        : profile?.app_id
          ? `profile ${profileName(merged.profile as string | undefined, env).name}`
          : undefined;
  return {
    baseUrl,
    apiKey: (merged.apiKey as string | undefined) ?? (env.PARLEY_API_KEY || profile?.api_key || undefined),
    app,
    appSource,
    timeoutMs: Math.round(seconds * 1000),
    json: merged.json === true,
    verbose: merged.verbose === true,
    retries: Number(retryText),
    adminToken: env.PARLEY_ADMIN_TOKEN || profile?.admin_token || undefined,
    adminTokenServer: env.PARLEY_ADMIN_TOKEN ? undefined : profile?.admin_token ? profile.base_url : undefined,
    profile: profileName(merged.profile as string | undefined, env).name,
    scenarioHeaders: {
      ...(merged.scenario === undefined ? {} : { 'parley-scenario': String(merged.scenario) }),
      ...(merged.testId === undefined ? {} : { 'parley-test-id': String(merged.testId) }),
    },
  };
}

/**
 * A 404 for a conversation or response of the active app may mean that it is another app's (a key
 * reaches every app of its team): the error gets a hint at --app. An unknown app says so itself.
 */
export function hintOtherApp(err: unknown, g: Globals, id: string): unknown {
  if (err instanceof ApiError && err.status === 404 && err.param !== 'app_id')
    withHint(
      err,
      `${id} was not found in app ${g.app}${g.appSource ? ` (from ${g.appSource})` : ''}; if it belongs to another app, add --app <app_id>`,
    );
  return err;
}

/** `request` for the conversation or response `id` of the active app, its 404 with the hint of `hintOtherApp`. */
export async function inApp<T>(g: Globals, id: string, request: Promise<T>): Promise<T> {
  try {
    return await request;
  } catch (err) {
    throw hintOtherApp(err, g, id);
  }
}

/** Everything a command needs: the resolved options, the redacting output, the process context, and a client on demand. */
export class Session {
  #clients: ParleyClient[] = [];
  /** Whether the command runs with --json (so that an error can still show an unusable JSON body). */
  json = false;
  /** The exit code a command chose without throwing (a scripted chat's worst failure, the suite's verdict). */
  exitCode: number | undefined;
  constructor(
    readonly out: Output,
    readonly io: CliIo = processIo(),
  ) {}

  globals(cmd: Command): Globals {
    const g = resolveGlobals(cmd, this.io.env);
    this.out.addSecret(g.apiKey);
    this.out.addSecret(g.adminToken);
    this.json = g.json;
    return g;
  }

  /** A client for the command's settings; `needApp: false` for requests that name no app (`parley api`). */
  client(cmd: Command, { needApp = true } = {}): { client: ParleyClient; g: Globals } {
    const g = this.globals(cmd);
    if (!g.apiKey) throw new UsageError('no API key: run parley login, pass --api-key or set PARLEY_API_KEY');
    if (!g.app && needApp) throw new UsageError('no app: run parley login, pass --app or set PARLEY_APP_ID');
    refuseMistyped(g.apiKey, 'the API key');
    return { client: this.newClient(g, g.baseUrl, g.apiKey, g.app ?? '', g.scenarioHeaders), g };
  }

  /**
   * A client of the interface's plumbing for `baseUrl` with the credential `secret` ('' for none), closed
   * with the session; `headers` go on each of its requests (the API's: `--scenario`, `--test-id`).
   */
  newClient(g: Globals, baseUrl: string, secret: string, appId = '', headers: Record<string, string> = {}): ParleyClient {
    const client = new ParleyClient({
      baseUrl,
      apiKey: secret,
      appId,
      timeoutMs: g.timeoutMs,
      onTrace: g.verbose ? (line) => this.out.note(line) : undefined,
      // An answer that departs from the interface but can be shown is shown, with a warning (exit 0).
      onDeviation: (message) => this.out.note(`warning: ${message}`),
      // D-74: a soft plan past its credits runs the reply; the user is told on stderr, never on stdout.
      onWarning: (message) => this.out.note(`warning: ${message}`),
      // D-32: a dropped stream comes back by itself; the user is told.
      onResume: (id, after) => this.out.note(`(the stream dropped; resuming ${id} after event ${after})`),
      signal: this.out.closedSignal,
      retry: g.retries > 0 ? { retries: g.retries, maxWaitMs: MAX_RETRY_WAIT_MS, onRetry: (m) => this.out.note(m) } : undefined,
      headers,
    });
    this.#clients.push(client);
    return client;
  }

  async close(): Promise<void> {
    await Promise.all(this.#clients.map((c) => c.close()));
  }
}
