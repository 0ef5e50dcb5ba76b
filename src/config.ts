// Configuration from flags, then environment, then defaults (README's configuration table).
import { parseArgs } from 'node:util';
import { DEFAULT_OLLAMA_HOST } from './engines/index.ts';
import { TrustedProxies } from './http/client-address.ts';
import { hashCostRefusal, MAX_COST, MIN_COST, PRODUCTION_COST } from './services/admin/passwords.ts';
import type { WebhookOptions } from './services/webhooks/wiring.ts';
import { WEBHOOK_FLAGS, WEBHOOK_USAGE, type WebhookFlagValues, webhookSettings } from './webhook-config.ts';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  fixturesDir: string;
  logLevel: string;
  /** PARLEY_MODEL: `local` or `ollama:<model>` for every app; null keeps each app's `agent.model`. */
  model: string | null;
  /** OLLAMA_HOST: where the Ollama engine finds Ollama. */
  ollamaHost: string;
  /** The playground at the server's root (docs/widget.md); --no-playground turns it off. */
  playground: boolean;
  /** The dashboard at /dashboard (docs/dashboard.md, D-95); --no-dashboard turns it off (/admin/v1 stays). */
  dashboard: boolean;
  /** PARLEY_WIDGET_SECRET: signs visitor tokens; null: one generated in the data directory (D-49). */
  widgetSecret: string | null;
  /** DATABASE_URL: postgres://… selects the PostgreSQL store (docs/postgres.md); null keeps the file store. */
  databaseUrl: string | null;
  /** DATABASE_POOL_SIZE: the PostgreSQL connections each instance may open (docs/deploy.md). */
  databasePoolSize: number;
  /**
   * TRUST_PROXY: the proxies (CIDRs, comma-separated) whose X-Forwarded-For names the client's address
   * (D-92); null: the socket's peer address is the client's.
   */
  trustProxy: string | null;
  /** STORE_TIMEOUT: D-91's bound, in seconds, on a request while the store is out of reach (then 503). */
  storeTimeoutSeconds: number;
  /** PUBLIC_URL: Parley's own address behind a proxy, without a trailing slash (D-65); null: none given. */
  publicUrl: string | null;
  /** PASSWORD_HASH_COST: log2 of scrypt's N for new password hashes (D-66; below the production cost only with NODE_ENV=test). */
  passwordHashCost: number;
  /** AUDIT_RETENTION_DAYS: D-75's retention of the audit log, applied by both stores at each start. */
  auditRetentionDays: number;
  /** docs/webhooks.md: the settings given (src/webhook-config.ts). */
  webhooks?: WebhookOptions;
  /** DELETED_RETENTION_DAYS: D-73, how long a deleted conversation's history is kept before it is purged. */
  deletedRetentionDays: number;
}

export const DEFAULTS: Config = {
  host: '127.0.0.1',
  port: 8787,
  dataDir: './data',
  fixturesDir: 'fixtures/',
  logLevel: 'info',
  model: null,
  ollamaHost: DEFAULT_OLLAMA_HOST,
  playground: true,
  dashboard: true,
  widgetSecret: null,
  databaseUrl: null,
  databasePoolSize: 10,
  trustProxy: null,
  storeTimeoutSeconds: 5,
  publicUrl: null,
  passwordHashCost: PRODUCTION_COST,
  auditRetentionDays: 365,
  deletedRetentionDays: 30,
};

export class ConfigError extends Error {}

/** Asked for with --help: not an error, but nothing to start either. */
export class HelpRequested extends Error {}

export const USAGE = `Usage: npm start -- [options]   (or: node --import tsx src/main.ts [options])

Options (each also read from the environment variable in brackets):
  --port <n>          port to listen on, 0 for any free one [PORT] (default ${DEFAULTS.port})
  --host <addr>       address to bind [HOST] (default ${DEFAULTS.host})
  --data-dir <dir>    where conversations are stored [DATA_DIR] (default ${DEFAULTS.dataDir})
  --database-url <url>  postgres://… : store conversations in PostgreSQL (docs/postgres.md) [DATABASE_URL]
  --database-pool-size <n>  connections to PostgreSQL per instance, 2 to 1000 [DATABASE_POOL_SIZE] (default ${DEFAULTS.databasePoolSize})
  --store-timeout <s>  answer 503 store_unavailable to a request still unanswered after this many
                      seconds while the database is out of reach, 1 to 300 [STORE_TIMEOUT] (default ${DEFAULTS.storeTimeoutSeconds})
  --deleted-retention-days <n>  days a deleted conversation's history is kept for the team before it is
                      purged, 0 to 3650 (0: at once) [DELETED_RETENTION_DAYS] (default ${DEFAULTS.deletedRetentionDays})
  --fixtures <dir>    teams, keys, plans and apps [FIXTURES] (default ${DEFAULTS.fixturesDir})
  --audit-retention-days <n>  days the audit log keeps an entry, 1 to 3650 [AUDIT_RETENTION_DAYS] (default ${DEFAULTS.auditRetentionDays})
  --log-level <lvl>   fatal, error, warn, info, debug, trace or silent [LOG_LEVEL] (default ${DEFAULTS.logLevel})
  --no-playground     serve no playground page at / (the widget and its API stay)
  --no-dashboard      serve no dashboard at /dashboard (/admin/v1 and the CLI stay)
  --trust-proxy <cidr>  proxies (CIDRs, comma-separated) whose X-Forwarded-For gives the client's
                      address for per-address limits [TRUST_PROXY] (default: none, the socket's address)
  --public-url <url>  Parley's own address behind a proxy, e.g. https://parley.example.com: links it
                      gives, the banner, and Secure cookies when https [PUBLIC_URL] (default: none)
  --password-hash-cost <n>  log2 of scrypt's N for members' new password hashes, ${PRODUCTION_COST} to 18;
                      lower only with NODE_ENV=test [PASSWORD_HASH_COST] (default ${PRODUCTION_COST})
  --help              print this and exit

The model comes from the environment only (docs/agent.md):
  PARLEY_MODEL        local (the offline engine) or ollama:<model>; replaces every app's agent.model
  OLLAMA_HOST         where Ollama listens (default http://127.0.0.1:11434)

The widget (docs/widget.md):
  PARLEY_WIDGET_SECRET  signs visitor tokens (32+ characters); unset: one kept in <data dir>/widget-secret
${WEBHOOK_USAGE}`;

export function loadConfig(argv: string[], env: NodeJS.ProcessEnv): Config {
  let values: {
    port?: string;
    host?: string;
    'data-dir'?: string;
    'database-url'?: string;
    'database-pool-size'?: string;
    'store-timeout'?: string;
    'audit-retention-days'?: string;
    'deleted-retention-days'?: string;
    fixtures?: string;
    'log-level'?: string;
    'no-playground'?: boolean;
    'no-dashboard'?: boolean;
    'trust-proxy'?: string;
    'public-url'?: string;
    'password-hash-cost'?: string;
    help?: boolean;
  } & WebhookFlagValues;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'data-dir': { type: 'string' },
        'database-url': { type: 'string' },
        'database-pool-size': { type: 'string' },
        'store-timeout': { type: 'string' },
        'audit-retention-days': { type: 'string' },
        'deleted-retention-days': { type: 'string' },
        fixtures: { type: 'string' },
        'log-level': { type: 'string' },
        'no-playground': { type: 'boolean' },
        'no-dashboard': { type: 'boolean' },
        'trust-proxy': { type: 'string' },
        'public-url': { type: 'string' },
        'password-hash-cost': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        ...WEBHOOK_FLAGS,
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  if (values.help) throw new HelpRequested(USAGE);
  // An empty variable counts as unset (e.g. `PORT= npm start`).
  const fromEnv = (name: string) => (env[name] === '' ? undefined : env[name]);
  const port = integer(values.port ?? fromEnv('PORT') ?? String(DEFAULTS.port), 'port', 0, 65535);
  const logLevel = values['log-level'] ?? fromEnv('LOG_LEVEL') ?? DEFAULTS.logLevel;
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got ${JSON.stringify(logLevel)})`);
  }
  const databaseUrl = values['database-url'] ?? fromEnv('DATABASE_URL') ?? DEFAULTS.databaseUrl;
  // The URL holds a password: the error names the scheme only.
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl))
    throw new ConfigError(`DATABASE_URL must start with postgres:// or postgresql:// (got ${JSON.stringify(databaseUrl.split(':')[0])}:…)`);
  // At least two: one request's transaction must not leave none for the others (the liveness lock and
  // LISTEN have a connection of their own, D-90).
  const poolText = values['database-pool-size'] ?? fromEnv('DATABASE_POOL_SIZE') ?? String(DEFAULTS.databasePoolSize);
  const databasePoolSize = integer(poolText, 'DATABASE_POOL_SIZE', 2, 1000);
  const trustProxy = values['trust-proxy'] ?? fromEnv('TRUST_PROXY') ?? DEFAULTS.trustProxy;
  if (trustProxy !== null) {
    try {
      TrustedProxies.parse(trustProxy);
    } catch (err) {
      throw new ConfigError(`TRUST_PROXY: ${(err as Error).message}`);
    }
  }
  const storeText = values['store-timeout'] ?? fromEnv('STORE_TIMEOUT') ?? String(DEFAULTS.storeTimeoutSeconds);
  const storeTimeoutSeconds = integer(storeText, 'STORE_TIMEOUT', 1, 300, ' seconds');
  const publicUrl = parsePublicUrl(values['public-url'] ?? fromEnv('PUBLIC_URL') ?? null);
  const costText = values['password-hash-cost'] ?? fromEnv('PASSWORD_HASH_COST') ?? String(DEFAULTS.passwordHashCost);
  if (!/^\d{1,2}$/.test(costText))
    throw new ConfigError(`PASSWORD_HASH_COST must be an integer from ${MIN_COST} to ${MAX_COST} (got ${JSON.stringify(costText)})`);
  const passwordHashCost = Number(costText);
  const costRefusal = hashCostRefusal(passwordHashCost, env);
  if (costRefusal) throw new ConfigError(costRefusal);
  const auditText = values['audit-retention-days'] ?? fromEnv('AUDIT_RETENTION_DAYS') ?? String(DEFAULTS.auditRetentionDays);
  const auditRetentionDays = integer(auditText, 'AUDIT_RETENTION_DAYS', 1, 3650, ' days');
  let webhooks: WebhookOptions;
  try {
    webhooks = webhookSettings(values, fromEnv);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const retentionText = values['deleted-retention-days'] ?? fromEnv('DELETED_RETENTION_DAYS') ?? String(DEFAULTS.deletedRetentionDays);
  const deletedRetentionDays = integer(retentionText, 'DELETED_RETENTION_DAYS', 0, 3650, ' days');
  return {
    ...(Object.keys(webhooks).length > 0 ? { webhooks } : {}),
    host: values.host ?? fromEnv('HOST') ?? DEFAULTS.host,
    port,
    dataDir: values['data-dir'] ?? fromEnv('DATA_DIR') ?? DEFAULTS.dataDir,
    fixturesDir: values.fixtures ?? fromEnv('FIXTURES') ?? DEFAULTS.fixturesDir,
    logLevel,
    model: env.PARLEY_MODEL || DEFAULTS.model,
    ollamaHost: normalizeOllamaHost(env.OLLAMA_HOST || DEFAULTS.ollamaHost),
    playground: !values['no-playground'],
    dashboard: !values['no-dashboard'],
    widgetSecret: widgetSecret(env.PARLEY_WIDGET_SECRET),
    databaseUrl,
    databasePoolSize,
    trustProxy,
    storeTimeoutSeconds,
    publicUrl,
    passwordHashCost,
    auditRetentionDays,
    deletedRetentionDays,
  };
}

/** An integer setting within [min, max], or a ConfigError naming it and what it got. */
function integer(text: string, name: string, min: number, max: number, unit = ''): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max)
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}${unit} (got ${JSON.stringify(text)})`);
  return n;
}

/**
 * D-65: PUBLIC_URL is an absolute http(s) URL with no credentials, query or fragment (a path is kept,
 * for a proxy that serves Parley under one); returned without its trailing slash.
 */
export function parsePublicUrl(text: string | null): string | null {
  if (text === null) return null;
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

/** OLLAMA_HOST as Ollama's own CLI accepts it: `host`, `host:port` or a URL. */
export function normalizeOllamaHost(v: string): string {
  const withScheme = /^https?:\/\//.test(v) ? v : `http://${v}`;
  const url = new URL(withScheme);
  if (!url.port && !/^https?:\/\/[^/]+:\d+/.test(withScheme))
    url.port = url.protocol === 'https:' ? '443' : new URL(DEFAULT_OLLAMA_HOST).port;
  return url.origin;
}

function widgetSecret(v: string | undefined): string | null {
  if (!v) return null;
  if (v.length < 32) throw new ConfigError(`PARLEY_WIDGET_SECRET must be at least 32 characters (got ${v.length})`);
  return v;
}
