// D-7 identifiers: a prefix and 96 random bits from the OS's CSPRNG, so ids never collide in practice.
import { randomFillSync } from 'node:crypto';
import { ID_PREFIX } from '../contract/index.ts';

export type IdKind = keyof typeof ID_PREFIX;

/**
 * Random bytes are drawn from the CSPRNG 4 KiB at a time and handed out 12 bytes per id: one call
 * into the OS per 341 ids instead of one per id (a GET's profile showed it: docs/benchmarks.md).
 * Each byte is used once, so ids stay as unpredictable as randomBytes(12).
 */
const POOL_SIZE = 4096 - (4096 % 12);
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

function random96(): string {
  if (offset === POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + 12);
  offset += 12;
  return hex;
}

export function newId(kind: IdKind): string {
  return ID_PREFIX[kind] + random96();
}

export function newRequestId(): string {
  return `req_${random96()}`;
}
