// The Idempotency-Key claims the file backend has saved with work (see IdempotencyClaim in
// src/core/claims.ts), in memory for as long as a key is honoured; start-up hands them to the answers.
import { CLAIM_TTL_MS, type KeptClaim } from '../../core/claims.ts';

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
