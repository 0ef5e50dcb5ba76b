// Members' passwords (D-66): scrypt from node:crypto, salted, stored with its parameters so that a later
// cost applies to new hashes while old ones still verify. Never kept or logged in clear.
import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

/** log2 of scrypt's N in production (OWASP: N = 2^17 with r = 8 is the floor for new systems; 2^15 is ~50 ms here). */
export const PRODUCTION_COST = 15;
/** The bounds of the setting: 2^18 needs 256 MiB per hash, past which one sign-in could exhaust a small host. */
export const MIN_COST = 4;
export const MAX_COST = 18;
const R = 8;
const P = 1;
const KEY_BYTES = 32;

/**
 * D-66: why `cost` (log2 of N) may not be used, or undefined. Below the production cost only in tests,
 * which say so with NODE_ENV=test: a lowered cost in production would make stolen hashes cheap to crack.
 */
export function hashCostRefusal(cost: number, env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (!Number.isInteger(cost) || cost < MIN_COST || cost > MAX_COST)
    return `PASSWORD_HASH_COST must be an integer from ${MIN_COST} to ${MAX_COST} (log2 of scrypt's N; got ${JSON.stringify(cost)})`;
  if (cost < PRODUCTION_COST && env.NODE_ENV !== 'test')
    return `PASSWORD_HASH_COST below ${PRODUCTION_COST} (the production cost) is for tests only: set NODE_ENV=test to use ${cost}`;
  return undefined;
}

/** D-66: throws what `hashCostRefusal` says (Parley started from code follows the flag's rule). */
export function assertHashCost(cost: number, env: Readonly<Record<string, string | undefined>>): void {
  const refusal = hashCostRefusal(cost, env);
  if (refusal) throw new Error(refusal);
}

/** scrypt of `password` (NFC) with these parameters: on libuv's pool by default, D-166's worker in the server. */
export type Derive = (password: string, salt: Buffer, keyBytes: number, options: ScryptOptions) => Promise<Buffer>;

const onLibuv: Derive = (password, salt, keyBytes, options) =>
  new Promise((resolve, reject) => scrypt(password, salt, keyBytes, options, (err, key) => (err ? reject(err) : resolve(key))));

function derive(password: string, salt: Buffer, logN: number, r: number, p: number, via: Derive): Promise<Buffer> {
  // scrypt needs 128·N·r bytes; node's default ceiling (32 MiB) is exactly 2^15 × 8 × 128.
  const maxmem = 256 * 2 ** logN * r;
  return via(password.normalize('NFC'), salt, KEY_BYTES, { N: 2 ** logN, r, p, maxmem });
}

/** `scrypt$<logN>$<r>$<p>$<salt>$<hash>` (base64url). */
export async function hashPassword(password: string, logN: number, via: Derive = onLibuv): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, logN, R, P, via);
  return ['scrypt', logN, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Whether `password` matches `stored`; a malformed record matches nothing. */
export async function verifyPassword(password: string, stored: string, via: Derive = onLibuv): Promise<boolean> {
  const [kind, logN, r, p, salt, hash] = stored.split('$');
  if (kind !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), Number(logN), Number(r), Number(p), via);
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/**
 * The work of a verification for an email nobody has (D-66): the same cost as a real one, so that the
 * time of an answer does not tell which emails have accounts.
 */
export async function verifyNobody(password: string, logN: number, via: Derive = onLibuv): Promise<false> {
  await derive(password, randomBytes(16), logN, R, P, via);
  return false;
}
