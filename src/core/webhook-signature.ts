// The webhook signature scheme (docs/webhooks.md, D-80): Standard Webhooks 1.0 with the signing secret
// derived from the team's secret key (core/api-keys.ts). Kept apart from delivery so that the server,
// the CLI's `webhooks verify` and the tests share one implementation.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Standard Webhooks' default tolerance of a timestamp, either way. */
export const DEFAULT_TOLERANCE_S = 300;

/** `v1,` + base64(HMAC-SHA256(key = S, message = `{id}.{timestamp}.{body}`)). */
export function signatureOf(signingKey: Buffer, id: string, timestamp: number, body: string | Buffer): string {
  const mac = createHmac('sha256', signingKey).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

/** The `webhook-*` headers of one attempt: every key's signature, space-separated (D-150 says which keys). */
export function signedHeaders(
  signingKeys: readonly Buffer[],
  id: string,
  timestamp: number,
  body: string | Buffer,
): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signingKeys.map((k) => signatureOf(k, id, timestamp, body)).join(' '),
  };
}

/** S from its `whsec_` text (or bare base64). */
export function signingKeyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
}

export type VerifyResult = { ok: true } | { ok: false; reason: string };

/**
 * Standard Webhooks' verification: one of the `v1,` signatures matches (constant-time) and, unless
 * `toleranceS` is null, the timestamp is within it of `nowS`.
 */
export function verifySignature(
  signingKey: Buffer,
  headers: Record<string, string | undefined>,
  body: string | Buffer,
  nowS: number,
  toleranceS: number | null = DEFAULT_TOLERANCE_S,
): VerifyResult {
  const id = headers['webhook-id'];
  const ts = headers['webhook-timestamp'];
  const sigs = headers['webhook-signature'];
  if (!id || !ts || !sigs) return { ok: false, reason: 'missing webhook-id, webhook-timestamp or webhook-signature' };
  if (!/^\d+$/.test(ts)) return { ok: false, reason: 'webhook-timestamp is not whole Unix seconds' };
  const timestamp = Number(ts);
  if (toleranceS !== null && Math.abs(nowS - timestamp) > toleranceS)
    return { ok: false, reason: `webhook-timestamp is ${nowS - timestamp} s from now, beyond the tolerance of ${toleranceS} s` };
  const expected = Buffer.from(signatureOf(signingKey, id, timestamp, body).slice(3), 'base64');
  for (const entry of sigs.split(' ')) {
    const [version, mac] = entry.split(',');
    if (version !== 'v1' || !mac) continue;
    const given = Buffer.from(mac, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return { ok: true };
  }
  return { ok: false, reason: 'no v1 signature matches this secret' };
}
