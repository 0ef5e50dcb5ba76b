// `npm start` as a user runs it: configuration, the banner, start-up failures and SIGTERM.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import path from 'node:path';
import { ConfigError, HelpRequested, loadConfig, USAGE } from '../src/config.ts';
import { banner } from '../src/main.ts';
import { FIXTURES_DIR, KEY, TARGET } from './support/helpers.ts';

/** The webhooks' defaults (docs/webhooks.md). */
const WEBHOOK_DEFAULTS = {
  // D-85: Svix's schedule, and an attempt's bound.
  webhookRetrySchedule: [5, 300, 1800, 7200, 18000, 36000, 36000],
  webhookTimeoutMs: 15_000,
  // D-82: no private address unless asked for.
  webhookAllowPrivate: false,
  // D-86: an endpoint failing five days is disabled; D-87: seven days kept.
  webhookDisableAfterMs: 5 * 86_400_000,
  webhookRetentionMs: 7 * 86_400_000,
  // D-169: an app's endpoints.
  webhookEndpointsPerApp: 20,
};

/** D-173: the caps of a team's records. */
const CAP_DEFAULTS = {
  teamMaxKeys: 200,
  teamMaxTokens: 200,
  teamMaxWebhookEndpoints: 100,
  teamMaxApps: 100,
  teamMaxMembers: 500,
};

describe('configuration (flags, then environment, then defaults)', () => {
  test('defaults', () => {
    assert.deepEqual(loadConfig([], {}), {
      host: '127.0.0.1',
      port: 8787,
      dataDir: './data',
      fixturesDir: 'fixtures/',
      logLevel: 'info',
      model: null,
      ollamaHost: 'http://127.0.0.1:11434',
      openaiBaseUrl: null,
      openaiApiKey: null,
      recordTapes: null,
      replayTapes: null,
      tapeTiming: 'recorded',
      playground: true,
      dashboard: true,
      widgetSecret: null,
      databaseUrl: null,
      databasePoolSize: 10,
      trustProxy: null,
      storeTimeoutSeconds: 5,
      publicUrl: null,
      scenarios: null,
      passwordHashCost: 15,
      auditRetentionDays: 365,
      deletedRetentionDays: 30,
      ...WEBHOOK_DEFAULTS,
      ...CAP_DEFAULTS,
    });
  });

  test('environment', () => {
    const env = {
      PORT: '9000',
      HOST: '0.0.0.0',
      DATA_DIR: '/tmp/d',
      FIXTURES: '/tmp/f',
      LOG_LEVEL: 'debug',
      PARLEY_MODEL: 'ollama:qwen3:4b',
      OLLAMA_HOST: 'http://127.0.0.1:11500',
      PARLEY_WIDGET_SECRET: 's'.repeat(32),
    };
    assert.deepEqual(loadConfig([], env), {
      host: '0.0.0.0',
      port: 9000,
      dataDir: '/tmp/d',
      fixturesDir: '/tmp/f',
      logLevel: 'debug',
      model: 'ollama:qwen3:4b',
      ollamaHost: 'http://127.0.0.1:11500',
      openaiBaseUrl: null,
      openaiApiKey: null,
      recordTapes: null,
      replayTapes: null,
      tapeTiming: 'recorded',
      playground: true,
      dashboard: true,
      widgetSecret: 's'.repeat(32),
      databaseUrl: null,
      databasePoolSize: 10,
      trustProxy: null,
      storeTimeoutSeconds: 5,
      publicUrl: null,
      scenarios: null,
      passwordHashCost: 15,
      auditRetentionDays: 365,
      deletedRetentionDays: 30,
      ...WEBHOOK_DEFAULTS,
      ...CAP_DEFAULTS,
    });
    // D-49: a short signing secret is refused rather than weakening every visitor token.
    assert.throws(
      () => loadConfig([], { PARLEY_WIDGET_SECRET: 'short' }),
      (e: Error) => e instanceof ConfigError && /at least 32/.test(e.message),
    );
  });

  test('flags win over the environment; an empty variable counts as unset', () => {
    const argv = [
      '--port',
      '0',
      '--host',
      '::1',
      '--data-dir',
      'x',
      '--fixtures',
      'y',
      '--log-level',
      'warn',
      '--no-playground',
      '--no-dashboard',
    ];
    assert.deepEqual(loadConfig(argv, { PORT: '9000', HOST: 'h', DATA_DIR: 'd', FIXTURES: 'f', LOG_LEVEL: 'error' }), {
      host: '::1',
      port: 0,
      dataDir: 'x',
      fixturesDir: 'y',
      logLevel: 'warn',
      model: null,
      ollamaHost: 'http://127.0.0.1:11434',
      openaiBaseUrl: null,
      openaiApiKey: null,
      recordTapes: null,
      replayTapes: null,
      tapeTiming: 'recorded',
      playground: false,
      dashboard: false,
      widgetSecret: null,
      databaseUrl: null,
      databasePoolSize: 10,
      trustProxy: null,
      storeTimeoutSeconds: 5,
      publicUrl: null,
      scenarios: null,
      passwordHashCost: 15,
      auditRetentionDays: 365,
      deletedRetentionDays: 30,
      ...WEBHOOK_DEFAULTS,
      ...CAP_DEFAULTS,
    });
    assert.equal(loadConfig(['--port=1234'], {}).port, 1234);
    assert.equal(loadConfig([], { PORT: '' }).port, 8787);
    // D-91: the bound on a request while the store is out of reach.
    assert.equal(loadConfig([], { STORE_TIMEOUT: '9' }).storeTimeoutSeconds, 9);
    assert.equal(loadConfig(['--store-timeout', '2'], { STORE_TIMEOUT: '9' }).storeTimeoutSeconds, 2);
    for (const bad of ['0', '301', '1.5', 'x'])
      assert.throws(
        () => loadConfig([], { STORE_TIMEOUT: bad }),
        (e: Error) => e instanceof ConfigError && /1 to 300/.test(e.message),
      );
    // D-75: the audit log's retention, in days.
    assert.equal(loadConfig([], { AUDIT_RETENTION_DAYS: '30' }).auditRetentionDays, 30);
    assert.equal(loadConfig(['--audit-retention-days', '7'], { AUDIT_RETENTION_DAYS: '30' }).auditRetentionDays, 7);
    for (const bad of ['0', '3651', '1.5', 'x'])
      assert.throws(
        () => loadConfig([], { AUDIT_RETENTION_DAYS: bad }),
        (e: Error) => e instanceof ConfigError && /AUDIT_RETENTION_DAYS must be an integer from 1 to 3650/.test(e.message),
      );
    // D-73: how long a deleted conversation's history is kept (0: purged at the delete).
    assert.equal(loadConfig([], { DELETED_RETENTION_DAYS: '0' }).deletedRetentionDays, 0);
    assert.equal(loadConfig(['--deleted-retention-days', '7'], { DELETED_RETENTION_DAYS: '9' }).deletedRetentionDays, 7);
    for (const bad of ['-1', '3651', '1.5', 'x'])
      assert.throws(
        () => loadConfig([], { DELETED_RETENTION_DAYS: bad }),
        (e: Error) => e instanceof ConfigError && /0 to 3650/.test(e.message),
      );
  });

  test('bad values are ConfigErrors that say what is allowed', () => {
    for (const port of ['-1', '65536', 'abc', '80.5', '']) {
      assert.throws(
        () => loadConfig([`--port=${port}`], {}),
        (e: Error) => e instanceof ConfigError && /port must be an integer from 0 to 65535/.test(e.message),
        port,
      );
    }
    assert.throws(() => loadConfig([], { PORT: 'http' }), ConfigError);
    assert.throws(() => loadConfig([], { LOG_LEVEL: 'loud' }), /LOG_LEVEL must be one of/);
    assert.throws(() => loadConfig(['--colour'], {}), ConfigError);
    assert.throws(() => loadConfig(['serve'], {}), ConfigError);
    assert.throws(() => loadConfig(['--help'], {}), HelpRequested);
    // The model's settings are environment-only, so --help is the one place a user can find them.
    assert.match(USAGE, /PARLEY_MODEL .*ollama:<model>/);
    assert.match(USAGE, /OLLAMA_HOST /);
    assert.match(USAGE, /OPENAI_BASE_URL /);
  });

  test('D-140, D-143: the tapes and the OpenAI-compatible server', () => {
    const c = loadConfig(['--replay-tapes', 'tapes', '--tape-timing', 'fast'], { OPENAI_BASE_URL: 'http://127.0.0.1:8080/v1/' });
    assert.deepEqual([c.replayTapes, c.tapeTiming, c.openaiBaseUrl], ['tapes', 'fast', 'http://127.0.0.1:8080/v1']);
    assert.equal(loadConfig([], { PARLEY_RECORD_TAPES: 'rec' }).recordTapes, 'rec');
    assert.throws(() => loadConfig(['--record-tapes', 'a', '--replay-tapes', 'b'], {}), /cannot be used together/);
    assert.throws(() => loadConfig(['--tape-timing', 'slow'], {}), /must be recorded or fast/);
    // The key belongs in OPENAI_API_KEY, never in an address that a banner or an error shows.
    const err = (() => {
      try {
        loadConfig([], { OPENAI_BASE_URL: 'https://me:sk-secret@llm.example/v1' });
      } catch (e) {
        return e as Error;
      }
    })();
    assert.ok(err instanceof ConfigError);
    assert.doesNotMatch(err.message, /sk-secret/);
    assert.throws(() => loadConfig([], { OPENAI_BASE_URL: 'llm.example' }), /absolute http/);
  });
});

describe('D-94: the banner shows keys redacted and names only what this process uses', () => {
  const of = { baseUrl: 'http://127.0.0.1:8787/v1', fixturesDir: FIXTURES_DIR, playgroundUrl: null, dataDir: './data' };
  const secrets = [KEY, KEY.slice('sk_live_demo_'.length), TARGET.publishable_key];

  test('the file store: its data directory, the demo key redacted', () => {
    const text = banner({ ...of, databaseUrl: null });
    assert.ok(text.includes(`  data directory:  ${path.resolve('./data')}\n`), text);
    assert.ok(text.includes(`  demo secret key: sk_live_…${KEY.slice(-4)} `), text);
    for (const secret of secrets) assert.ok(!text.includes(secret), text);
  });

  test('PostgreSQL: the database by host and name, without its password; no data directory', () => {
    const text = banner({
      ...of,
      dataDir: '/nonexistent/parley-data',
      databaseUrl: 'postgres://parley:hunter22@db.internal:5433/parley_prod',
    });
    assert.ok(text.includes('  database:        PostgreSQL at db.internal:5433/parley_prod\n'), text);
    assert.doesNotMatch(text, /data director|parley-data|hunter22/);
    for (const secret of secrets) assert.ok(!text.includes(secret), text);
  });
});
