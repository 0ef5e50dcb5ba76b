// D-7 identifiers: a prefix and 96 random bits from the OS's CSPRNG, so ids never collide in practice.
import { randomBytes } from 'node:crypto';
import { ID_PREFIX } from '../contract/index.ts';

export type IdKind = keyof typeof ID_PREFIX;

export function newId(kind: IdKind): string {
  return ID_PREFIX[kind] + randomBytes(12).toString('hex');
}

export function newRequestId(): string {
  return 'req_' + randomBytes(12).toString('hex');
}

export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
