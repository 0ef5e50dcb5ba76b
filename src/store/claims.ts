// The Idempotency-Key claims a store has saved with work (see IdempotencyClaim in ./types.ts), kept
// for as long as a key is honoured; the idempotency stage reads them at start-up.
import type { KeptClaim } from '../core/claims.ts';

/** How long a key is honoured (the Idempotency-Key draft asks that it be published: docs/reliability.md). */
export const CLAIM_TTL_MS = 24 * 3_600_000;

export class ClaimLog {
  /** Oldest first (claims are added as their work is saved, or read back in that order). */
  private list: KeptClaim[] = [];

  add(claim: KeptClaim): void {
    this.list.push(claim);
    let expired = 0;
    while (this.list[expired]!.at < claim.at - CLAIM_TTL_MS) expired++;
    if (expired > 0) this.list = this.list.slice(expired);
  }

  since(t: number): KeptClaim[] {
    return this.list.filter((c) => c.at >= t);
  }
}
