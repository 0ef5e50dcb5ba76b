// The webhooks' settings (docs/webhooks.md, D-82, D-85…D-87): flags, then environment, then defaults;
// a bad value is a clear configuration error naming the setting.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';

const webhookSettings = (argv: string[], env: Record<string, string>) => {
  const c = loadConfig(argv, env);
  return {
    webhookRetrySchedule: c.webhookRetrySchedule,
    webhookTimeoutMs: c.webhookTimeoutMs,
    webhookAllowPrivate: c.webhookAllowPrivate,
    webhookDisableAfterMs: c.webhookDisableAfterMs,
    webhookRetentionMs: c.webhookRetentionMs,
  };
};

describe('webhook settings', () => {
  test('from the environment, decimals allowed; flags win', () => {
    const env = {
      WEBHOOK_RETRY_SCHEDULE: '0.3,0.6,1',
      WEBHOOK_TIMEOUT_MS: '2500',
      WEBHOOK_ALLOW_PRIVATE: '1',
      WEBHOOK_DISABLE_AFTER_DAYS: '2',
      WEBHOOK_RETENTION_DAYS: '3',
      PUBLIC_URL: 'https://parley.example',
    };
    assert.deepEqual(webhookSettings([], env), {
      webhookRetrySchedule: [0.3, 0.6, 1],
      webhookTimeoutMs: 2500,
      webhookAllowPrivate: true,
      webhookDisableAfterMs: 2 * 86_400_000,
      webhookRetentionMs: 3 * 86_400_000,
    });
    // D-83's payload URLs start with the one public URL of D-65.
    assert.equal(loadConfig([], env).publicUrl, 'https://parley.example');
    const flags = webhookSettings(['--webhook-retry-schedule', '5', '--webhook-timeout-ms', '100', '--webhook-allow-private'], {
      ...env,
      WEBHOOK_ALLOW_PRIVATE: 'no',
    });
    assert.deepEqual(flags.webhookRetrySchedule, [5]);
    assert.equal(flags.webhookTimeoutMs, 100);
    assert.equal(flags.webhookAllowPrivate, true);
    assert.equal(webhookSettings([], { WEBHOOK_ALLOW_PRIVATE: 'no' }).webhookAllowPrivate, false);
    assert.deepEqual(webhookSettings(['--webhook-retry-schedule', ''], {}).webhookRetrySchedule, []);
  });

  test('bad values are refused, naming the setting', () => {
    assert.throws(
      () => loadConfig([], { WEBHOOK_RETRY_SCHEDULE: '5,x' }),
      (e: Error) =>
        e instanceof ConfigError && e.message === 'WEBHOOK_RETRY_SCHEDULE (each delay) must be a number from 0 to 86400 (got "x")',
    );
    assert.throws(() => loadConfig(['--webhook-timeout-ms=50'], {}), /WEBHOOK_TIMEOUT_MS must be a number from 100 to 600000/);
    assert.throws(
      () => loadConfig([], { WEBHOOK_DISABLE_AFTER_DAYS: '366' }),
      /WEBHOOK_DISABLE_AFTER_DAYS must be a number from 0.0001 to 365/,
    );
    assert.throws(() => loadConfig([], { WEBHOOK_RETENTION_DAYS: '0' }), /WEBHOOK_RETENTION_DAYS must be a number from 1 to 365/);
    assert.throws(() => loadConfig([], { PUBLIC_URL: 'parley.example' }), /PUBLIC_URL/);
  });
});
