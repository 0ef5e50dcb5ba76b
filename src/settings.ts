// Every setting of the server, one row each: its flag, its environment variable, its default, its
// parser and what `--help` and the README say of it. The `Config` type, the defaults, the flag parser,
// `npm start -- --help` and the README's configuration table are all drawn from this table
// (src/config.ts, scripts/docs.ts), so adding a setting is one row here plus its use.
import { TrustedProxies } from './http/client-address.ts';
import { hashCostRefusal, MAX_COST, MIN_COST, PRODUCTION_COST } from './services/admin/passwords.ts';
import { ConfigError, daysInMs, type Env, number, parseModelUrl, parsePublicUrl, row, type Setting, text, yes } from './setting-values.ts';

export { ConfigError, type Env, parseModelUrl, parsePublicUrl, type Setting };

/** D-173: a cap of a team's records (`what`, as the refusal counts them), 1 to 100,000. */
const teamCap = (kind: string, env: string, dflt: string, what: string) =>
  row({
    flag: `--team-max-${kind} <n>`,
    env,
    default: dflt,
    parse: number(1, 100_000),
    help: `the most ${what} a team may have (one more is 409 limit_reached)`,
    meaning: `the most ${what} a team may have; one more is \`409 limit_reached\` ([docs/control-plane.md](docs/control-plane.md), D-173)`,
  });

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export const SETTINGS = {
  port: row({
    flag: '--port <n>',
    env: 'PORT',
    name: 'port',
    default: '8787',
    parse: number(0, 65535),
    help: 'port to listen on, 0 for any free one',
    meaning: 'TCP port; `0` picks a free one (the banner shows the real port)',
  }),
  host: row({
    flag: '--host <addr>',
    env: 'HOST',
    default: '127.0.0.1',
    parse: text,
    help: 'address to bind',
    meaning: 'address to bind; `0.0.0.0` to serve other machines',
  }),
  dataDir: row({
    flag: '--data-dir <dir>',
    env: 'DATA_DIR',
    default: './data',
    parse: text,
    help: 'where conversations are stored',
    meaning: 'where conversations are stored ([docs/storage.md](docs/storage.md))',
  }),
  databaseUrl: row({
    flag: '--database-url <url>',
    env: 'DATABASE_URL',
    default: null,
    // The URL holds a password: the error names the scheme only.
    parse: (t, name) => {
      if (!/^postgres(ql)?:\/\//.test(t))
        throw new ConfigError(`${name} must start with postgres:// or postgresql:// (got ${JSON.stringify(t.split(':')[0])}:…)`);
      return t;
    },
    help: 'postgres://… : store conversations in PostgreSQL (docs/postgres.md)',
    meaning: '`postgres://…`: conversations and responses in PostgreSQL ([docs/postgres.md](docs/postgres.md))',
  }),
  databasePoolSize: row({
    flag: '--database-pool-size <n>',
    env: 'DATABASE_POOL_SIZE',
    default: '10',
    // At least two: one request's transaction must not leave none for the others (the liveness lock
    // and LISTEN have a connection of their own, D-90).
    parse: number(2, 1000),
    help: 'connections to PostgreSQL per instance, 2 to 1000',
    meaning: 'the PostgreSQL connections each instance may open, 2 to 1000 ([docs/deploy.md](docs/deploy.md#connection-pool))',
  }),
  storeTimeoutSeconds: row({
    flag: '--store-timeout <s>',
    env: 'STORE_TIMEOUT',
    default: '5',
    parse: number(1, 300, { unit: ' seconds' }),
    help: 'answer 503 store_unavailable to a request still unanswered after this many seconds while the database is out of reach, 1 to 300',
    meaning:
      'a request still unanswered after this many seconds while the store is out of reach is answered 503 `store_unavailable`, 1 to 300 ([docs/reliability.md](docs/reliability.md), D-91)',
  }),
  fixturesDir: row({
    flag: '--fixtures <dir>',
    env: 'FIXTURES',
    default: 'fixtures/',
    parse: text,
    help: 'teams, keys, plans and apps',
    meaning: 'teams, keys, plans and apps (`fixtures.json`) and the conformance target (`target.json`)',
  }),
  logLevel: row({
    flag: '--log-level <lvl>',
    env: 'LOG_LEVEL',
    default: 'info',
    parse: (t, name) => {
      if (!LOG_LEVELS.includes(t)) throw new ConfigError(`${name} must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(t)})`);
      return t;
    },
    help: 'fatal, error, warn, info, debug, trace or silent',
    meaning: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`',
  }),
  deletedRetentionDays: row({
    flag: '--deleted-retention-days <n>',
    env: 'DELETED_RETENTION_DAYS',
    default: '30',
    parse: number(0, 3650, { unit: ' days' }),
    help: "days a deleted conversation's history is kept for the team before it is purged, 0 to 3650 (0: at once)",
    meaning:
      "days a deleted conversation's history stays readable by its team on `/admin/v1` before it is purged, 0 to 3650 ([docs/control-plane.md](docs/control-plane.md), D-73)",
  }),
  playground: row({
    flag: '--no-playground',
    switched: false,
    default: 'yes',
    shown: 'playground on',
    parse: yes,
    help: 'serve no playground page at / (the widget and its API stay)',
    meaning: 'no playground page at `/` ([docs/widget.md](docs/widget.md))',
  }),
  dashboard: row({
    flag: '--no-dashboard',
    switched: false,
    default: 'yes',
    shown: 'dashboard on',
    parse: yes,
    help: 'serve no dashboard at /dashboard (/admin/v1 and the CLI stay)',
    meaning: 'no dashboard at `/dashboard`; `/admin/v1` and the CLI stay ([docs/dashboard.md](docs/dashboard.md), D-95)',
  }),
  auditRetentionDays: row({
    flag: '--audit-retention-days <n>',
    env: 'AUDIT_RETENTION_DAYS',
    default: '365',
    parse: number(1, 3650, { unit: ' days' }),
    help: 'days the audit log keeps an entry, 1 to 3650',
    meaning:
      "days the control plane's audit log keeps an entry, 1 to 3650, applied by both stores at each start ([docs/control-plane.md](docs/control-plane.md), D-75)",
  }),
  trustProxy: row({
    flag: '--trust-proxy <cidr>',
    env: 'TRUST_PROXY',
    default: null,
    shown: "none, the socket's address",
    parse: (t, name) => {
      try {
        TrustedProxies.parse(t);
      } catch (err) {
        throw new ConfigError(`${name}: ${(err as Error).message}`);
      }
      return t;
    },
    help: "proxies (CIDRs, comma-separated) whose X-Forwarded-For gives the client's address for per-address limits, the sign-in throttle and the audit",
    meaning:
      "proxies (CIDRs or addresses, comma-separated) whose `X-Forwarded-For` names the client's address for per-address limits, the sign-in throttle and the audit ([docs/reliability.md](docs/reliability.md), D-92, D-168); without it, the socket's address",
  }),
  publicUrl: row({
    flag: '--public-url <url>',
    env: 'PUBLIC_URL',
    default: null,
    parse: (t) => parsePublicUrl(t),
    help: "Parley's own address behind a proxy, e.g. https://parley.example.com: links it gives, the banner, and Secure cookies when https",
    meaning:
      "Parley's own address behind a proxy, e.g. `https://parley.example.com`: the banner shows it, links start with it (invitations; a webhook payload cut short, D-83), and the admin session cookie is `Secure` when it is https ([docs/control-plane.md](docs/control-plane.md), D-65)",
  }),
  scenarios: row({
    flag: '--scenarios <on|off>',
    env: 'SCENARIOS',
    default: null,
    shown: 'on when listening on loopback without a public URL',
    parse: (t, name) => {
      if (t !== 'on' && t !== 'off') throw new ConfigError(`${name} must be on or off (got ${JSON.stringify(t)})`);
      return t === 'on';
    },
    help: 'serve the Parley-Scenario and Parley-Test-Id headers (a testing tool); default: on only on loopback without --public-url',
    meaning:
      'serve the `Parley-Scenario` and `Parley-Test-Id` headers, a testing tool; by default on only when Parley listens on loopback without `--public-url` ([docs/scenarios.md](docs/scenarios.md), D-122)',
  }),
  passwordHashCost: row({
    flag: '--password-hash-cost <n>',
    env: 'PASSWORD_HASH_COST',
    default: String(PRODUCTION_COST),
    parse: (t, name, env) => {
      if (!/^\d{1,2}$/.test(t))
        throw new ConfigError(`${name} must be an integer from ${MIN_COST} to ${MAX_COST} (got ${JSON.stringify(t)})`);
      const refusal = hashCostRefusal(Number(t), env);
      if (refusal) throw new ConfigError(refusal);
      return Number(t);
    },
    help: `log2 of scrypt's N for members' new password hashes, ${PRODUCTION_COST} to ${MAX_COST}; lower only with NODE_ENV=test`,
    meaning: `log2 of scrypt's N for members' new password hashes, ${PRODUCTION_COST} to ${MAX_COST}; lower only with \`NODE_ENV=test\` (D-66)`,
  }),
  webhookRetrySchedule: row({
    flag: '--webhook-retry-schedule <s,…>',
    env: 'WEBHOOK_RETRY_SCHEDULE',
    default: '5,300,1800,7200,18000,36000,36000',
    parse: (t, name) => {
      const delay = number(0, 86_400, { decimals: true });
      return t.trim() === '' ? [] : t.split(',').map((s) => delay(s.trim(), `${name} (each delay)`));
    },
    help: 'delays in seconds before each retry, each from the end of the attempt before it; decimals allowed',
    meaning:
      'delays in seconds before each retry of a webhook, each counted from the end of the attempt before it; the first attempt is made at once ([docs/webhooks.md](docs/webhooks.md), D-85)',
  }),
  webhookTimeoutMs: row({
    flag: '--webhook-timeout-ms <n>',
    env: 'WEBHOOK_TIMEOUT_MS',
    default: '15000',
    parse: number(100, 600_000, { decimals: true }),
    help: "a webhook attempt's bound",
    meaning: "a webhook attempt's bound (D-85)",
  }),
  webhookAllowPrivate: row({
    flag: '--webhook-allow-private',
    env: 'WEBHOOK_ALLOW_PRIVATE',
    switched: true,
    default: 'no',
    shown: 'off',
    parse: yes,
    help: 'allow webhook endpoints on loopback, private, link-local and metadata addresses (otherwise loopback only in local development: on loopback, without --public-url)',
    meaning:
      'webhook endpoints on loopback, private, link-local and metadata addresses; without it loopback alone is allowed, in local development only: Parley listening on loopback without `--public-url` (D-82, D-170)',
  }),
  webhookDisableAfterMs: row({
    flag: '--webhook-disable-after-days <n>',
    env: 'WEBHOOK_DISABLE_AFTER_DAYS',
    default: '5',
    parse: daysInMs(0.0001, 365),
    help: 'disable a webhook endpoint failing this long',
    meaning: 'an endpoint failing this long is disabled (D-86)',
  }),
  webhookRetentionMs: row({
    flag: '--webhook-retention-days <n>',
    env: 'WEBHOOK_RETENTION_DAYS',
    default: '7',
    parse: daysInMs(1, 365),
    help: 'keep finished webhook events and attempts',
    meaning: 'finished webhook events and their attempts are kept this long (D-87)',
  }),
  teamMaxKeys: teamCap('keys', 'TEAM_MAX_KEYS', '200', 'working API keys (neither revoked nor expired)'),
  teamMaxTokens: teamCap('tokens', 'TEAM_MAX_TOKENS', '200', 'working personal access tokens, of all its members'),
  teamMaxWebhookEndpoints: teamCap('webhook-endpoints', 'TEAM_MAX_WEBHOOK_ENDPOINTS', '100', 'webhook endpoints'),
  teamMaxApps: teamCap('apps', 'TEAM_MAX_APPS', '100', 'apps'),
  teamMaxMembers: teamCap('members', 'TEAM_MAX_MEMBERS', '500', 'members, invited ones too'),
  webhookEndpointsPerApp: row({
    flag: '--webhook-endpoints-per-app <n>',
    env: 'WEBHOOK_ENDPOINTS_PER_APP',
    default: '20',
    parse: number(1, 1000),
    help: 'the most webhook endpoints an app may have',
    meaning: 'the most webhook endpoints an app may have; one more is `409 limit_reached` (D-169)',
  }),
  widgetSecret: row({
    env: 'PARLEY_WIDGET_SECRET',
    default: null,
    shown: 'one kept in `<data dir>/widget-secret`',
    // D-49: a short signing secret is refused rather than weakening every visitor token.
    parse: (t, name) => {
      if (t.length < 32) throw new ConfigError(`${name} must be at least 32 characters (got ${t.length})`);
      return t;
    },
    help: 'signs widget visitor tokens, 32+ characters (docs/widget.md)',
    meaning: 'signs widget visitor tokens (32+ characters) ([docs/widget.md](docs/widget.md), D-49)',
  }),
  model: row({
    env: 'PARLEY_MODEL',
    default: null,
    shown: "each app's own",
    parse: text,
    help: "local (the offline engine), ollama:<model> or openai:<model>; replaces every app's agent.model",
    meaning: '`local`, `ollama:<model>` or `openai:<model>` for every app ([running on a real model](#running-on-a-real-model))',
  }),
  ollamaHost: row({
    env: 'OLLAMA_HOST',
    // Ollama's own default address.
    default: 'http://127.0.0.1:11434',
    parse: (t) => normalizeOllamaHost(t),
    help: 'where Ollama listens: host, host:port or a URL',
    meaning: 'where Ollama listens: `host`, `host:port` or a URL',
  }),
  openaiBaseUrl: row({
    env: 'OPENAI_BASE_URL',
    // D-143: none, so that no model call leaves the machine unless told where to go.
    default: null,
    parse: (t, name) => parseModelUrl(t, name),
    help: 'the OpenAI-compatible server of openai:<model>, e.g. http://127.0.0.1:8080/v1',
    meaning:
      'the OpenAI-compatible server of `openai:<model>` (Chat Completions), e.g. `http://127.0.0.1:8080/v1`; required for it ([docs/agent.md](docs/agent.md), D-143)',
  }),
  openaiApiKey: row({
    env: 'OPENAI_API_KEY',
    default: null,
    shown: 'none (no Authorization header)',
    parse: text,
    help: 'the key sent to that server, if it needs one; never logged, taped or shown',
    meaning: 'the key sent to that server, if it needs one; never logged, written in a tape or shown in an error (D-144)',
  }),
  recordTapes: row({
    flag: '--record-tapes <dir>',
    env: 'PARLEY_RECORD_TAPES',
    default: null,
    parse: text,
    help: 'record each model call (Ollama, OpenAI-compatible) as a tape in this directory',
    meaning:
      'record each model call of the Ollama and OpenAI-compatible engines as a tape in this directory ([docs/agent.md](docs/agent.md#tapes), D-140)',
  }),
  replayTapes: row({
    flag: '--replay-tapes <dir>',
    env: 'PARLEY_REPLAY_TAPES',
    default: null,
    parse: text,
    help: 'answer every model call from the tapes in this directory, without any model',
    meaning: 'answer every model call from the tapes in this directory, with no model; a call without a tape fails `tape_missing` (D-142)',
  }),
  tapeTiming: row({
    flag: '--tape-timing <t>',
    env: 'PARLEY_TAPE_TIMING',
    default: 'recorded',
    parse: (t, name) => {
      if (t !== 'recorded' && t !== 'fast') throw new ConfigError(`${name} must be recorded or fast (got ${JSON.stringify(t)})`);
      return t as 'recorded' | 'fast';
    },
    help: 'recorded (each chunk at its recorded offset) or fast (at once)',
    meaning: 'a replay sends each chunk at its recorded offset (`recorded`) or at once (`fast`)',
  }),
};

type ValueOf<S> = S extends Setting<infer T, infer D> ? (null extends D ? T | null : T) : never;

/** The settings' values, by the names of SETTINGS. */
export type Config = { [K in keyof typeof SETTINGS]: ValueOf<(typeof SETTINGS)[K]> };

/** OLLAMA_HOST as Ollama's own CLI accepts it: `host`, `host:port` or a URL. */
export function normalizeOllamaHost(v: string): string {
  const withScheme = /^https?:\/\//.test(v) ? v : `http://${v}`;
  const url = new URL(withScheme);
  if (!url.port && !/^https?:\/\/[^/]+:\d+/.test(withScheme))
    url.port = url.protocol === 'https:' ? '443' : new URL(SETTINGS.ollamaHost.default).port;
  return url.origin;
}
