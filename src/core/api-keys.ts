// API keys and personal access tokens in the checksummed format (D-70, after GitHub's token format): a
// prefix, 32 base62 characters from the OS's CSPRNG, then 6 base62 characters of the CRC32 of all that
// precedes them, so that a mistyped key is refused without a look-up. Keys of other shapes (the demo
// keys, keys of other implementations) are looked up as before (D-6).
import { createHash, createHmac, randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_CHARS = 32;
const CHECKSUM_CHARS = 6;

export type SecretPrefix = 'sk_live_' | 'pk_live_' | 'pat_';
const PREFIXES: readonly SecretPrefix[] = ['sk_live_', 'pk_live_', 'pat_'];

/** CRC32 (IEEE) of `text` in base62, left-padded with `0` to six characters (62^6 > 2^32). */
export function checksumOf(text: string): string {
  let n = crc32(text);
  let out = '';
  for (let i = 0; i < CHECKSUM_CHARS; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** A new secret of the checksummed format. */
export function newSecret(prefix: SecretPrefix): string {
  let body = prefix;
  for (let i = 0; i < RANDOM_CHARS; i++) body += BASE62[randomInt(62)];
  return body + checksumOf(body);
}

const SHAPE = new RegExp(`^(${PREFIXES.join('|')})[0-9A-Za-z]{${RANDOM_CHARS + CHECKSUM_CHARS}}$`);

/**
 * What the format says of `text`: `valid` (the checksummed shape, checksum right), `mistyped` (that
 * shape, checksum wrong: refused without a look-up), or `other` (another shape: looked up as before).
 */
export function checkFormat(text: string): 'valid' | 'mistyped' | 'other' {
  if (!SHAPE.test(text)) return 'other';
  const cut = text.length - CHECKSUM_CHARS;
  return checksumOf(text.slice(0, cut)) === text.slice(cut) ? 'valid' : 'mistyped';
}

/** The form a secret is listed under: its prefix, an ellipsis and its last four characters. */
export function redacted(text: string): string {
  const prefix = PREFIXES.find((p) => text.startsWith(p)) ?? text.slice(0, text.indexOf('_', 3) + 1);
  return `${prefix}…${text.slice(-4)}`;
}

/** D-6: keys and tokens are stored as their SHA-256, in hex. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The webhook signing secret S of a secret key (Standard Webhooks, docs/webhooks.md): HMAC-SHA256 keyed
 * with the whole key as issued, of the 25 ASCII bytes `parley webhook signing v1`. Computed when a key
 * is created (keys are kept hashed, so it cannot be derived later) and by the CLI from the key in use.
 */
export function webhookSigningKey(secretKey: string): Buffer {
  return createHmac('sha256', Buffer.from(secretKey, 'utf8')).update('parley webhook signing v1', 'ascii').digest();
}

/** S as Standard Webhooks libraries take it: `whsec_` + base64 (RFC 4648 §4, padded). */
export function webhookSecretText(signingKey: Buffer): string {
  return `whsec_${signingKey.toString('base64')}`;
}
