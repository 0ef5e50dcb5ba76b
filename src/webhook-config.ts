// The webhooks' settings (docs/webhooks.md, D-82, D-85…D-87), from flags, then environment, then
// defaults, read by config.ts beside the others (the public URL of D-83 is config.ts's PUBLIC_URL, D-65).
import type { WebhookOptions } from './services/webhooks/wiring.ts';

export const WEBHOOK_FLAGS = {
  'webhook-retry-schedule': { type: 'string' },
  'webhook-timeout-ms': { type: 'string' },
  'webhook-allow-private': { type: 'boolean' },
  'webhook-disable-after-days': { type: 'string' },
  'webhook-retention-days': { type: 'string' },
} as const;

export const WEBHOOK_USAGE = `
Webhooks (docs/webhooks.md):
  --webhook-retry-schedule <s,…>  delays in seconds between the first attempt and each retry, decimals
                      allowed [WEBHOOK_RETRY_SCHEDULE] (default 5,300,1800,7200,18000,36000,36000)
  --webhook-timeout-ms <n>  an attempt's bound [WEBHOOK_TIMEOUT_MS] (default 15000)
  --webhook-allow-private  allow endpoints on loopback, private, link-local and metadata addresses
                      [WEBHOOK_ALLOW_PRIVATE=1] (default: loopback only while Parley listens on loopback)
  --webhook-disable-after-days <n>  disable an endpoint failing this long [WEBHOOK_DISABLE_AFTER_DAYS] (default 5)
  --webhook-retention-days <n>  keep finished events and attempts [WEBHOOK_RETENTION_DAYS] (default 7)
`;

export type WebhookFlagValues = {
  [K in keyof typeof WEBHOOK_FLAGS]?: (typeof WEBHOOK_FLAGS)[K]['type'] extends 'boolean' ? boolean : string;
};

/** The settings given (absent ones keep their defaults); throws a message naming the setting at fault. */
export function webhookSettings(v: WebhookFlagValues, env: (name: string) => string | undefined): WebhookOptions {
  const out: WebhookOptions = {};
  const number = (text: string | undefined, name: string, min: number, max: number) => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!/^\d+(\.\d+)?$/.test(text.trim()) || n < min || n > max)
      throw new Error(`${name} must be a number from ${min} to ${max} (got ${JSON.stringify(text)})`);
    return n;
  };
  const schedule = v['webhook-retry-schedule'] ?? env('WEBHOOK_RETRY_SCHEDULE');
  if (schedule !== undefined)
    out.webhookRetrySchedule =
      schedule.trim() === '' ? [] : schedule.split(',').map((s) => number(s.trim(), 'WEBHOOK_RETRY_SCHEDULE (each delay)', 0, 86_400)!);
  const timeout = number(v['webhook-timeout-ms'] ?? env('WEBHOOK_TIMEOUT_MS'), 'WEBHOOK_TIMEOUT_MS', 100, 600_000);
  if (timeout !== undefined) out.webhookTimeoutMs = timeout;
  const allow =
    v['webhook-allow-private'] ??
    (env('WEBHOOK_ALLOW_PRIVATE') === undefined ? undefined : /^(1|true|yes)$/i.test(env('WEBHOOK_ALLOW_PRIVATE')!));
  if (allow !== undefined) out.webhookAllowPrivate = allow;
  const disable = number(v['webhook-disable-after-days'] ?? env('WEBHOOK_DISABLE_AFTER_DAYS'), 'WEBHOOK_DISABLE_AFTER_DAYS', 0.0001, 365);
  if (disable !== undefined) out.webhookDisableAfterMs = disable * 86_400_000;
  const keep = number(v['webhook-retention-days'] ?? env('WEBHOOK_RETENTION_DAYS'), 'WEBHOOK_RETENTION_DAYS', 1, 365);
  if (keep !== undefined) out.webhookRetentionMs = keep * 86_400_000;
  return out;
}
