// The webhooks' settings (docs/webhooks.md, D-82, D-85…D-87): flags, then environment, then defaults;
// a bad value is a clear configuration error naming the setting.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig, USAGE } from '../src/config.ts';

describe('webhook settings', () => {
  test('none given: no webhook settings (the defaults of D-85…D-87 apply)', () => {
    assert.equal(loadConfig([], {}).webhooks, undefined);
    assert.match(USAGE, /--webhook-retry-schedule/);
  });

  test('from the environment, decimals allowed; flags win', () => {
    const env = {
      WEBHOOK_RETRY_SCHEDULE: '0.3,0.6,1',
      WEBHOOK_TIMEOUT_MS: '2500',
      WEBHOOK_ALLOW_PRIVATE: '1',
      WEBHOOK_DISABLE_AFTER_DAYS: '2',
      WEBHOOK_RETENTION_DAYS: '3',
      PUBLIC_URL: 'https://parley.example',
    };
    assert.deepEqual(loadConfig([], env).webhooks, {
      webhookRetrySchedule: [0.3, 0.6, 1],
      webhookTimeoutMs: 2500,
      webhookAllowPrivate: true,
      webhookDisableAfterMs: 2 * 86_400_000,
      webhookRetentionMs: 3 * 86_400_000,
    });
    // D-83's payload URLs start with the one public URL of D-65.
    assert.equal(loadConfig([], env).publicUrl, 'https://parley.example');
    const flags = loadConfig(['--webhook-retry-schedule', '5', '--webhook-timeout-ms', '100'], env).webhooks!;
    assert.deepEqual(flags.webhookRetrySchedule, [5]);
    assert.equal(flags.webhookTimeoutMs, 100);
    assert.deepEqual(loadConfig(['--webhook-retry-schedule', ''], {}).webhooks!.webhookRetrySchedule, []);
  });

  test('bad values are refused, naming the setting', () => {
    assert.throws(
      () => loadConfig([], { WEBHOOK_RETRY_SCHEDULE: '5,x' }),
      (e: Error) => e instanceof ConfigError && /WEBHOOK_RETRY_SCHEDULE/.test(e.message),
    );
    assert.throws(() => loadConfig(['--webhook-timeout-ms=50'], {}), /WEBHOOK_TIMEOUT_MS/);
    assert.throws(() => loadConfig([], { PUBLIC_URL: 'parley.example' }), /PUBLIC_URL/);
  });
});
