// An Idempotency-Key's claim, written in the transaction of the work it ran (D-42): an exchange's
// (pg-store.ts) or a completion's usage (usage.ts). The one statement both use.
import type { TransactionSql } from 'postgres';
import type { IdempotencyClaim } from '../../core/claims.ts';

/** Saves `claim` as of `at` (ms). A key past its retention may be used again: the newer claim replaces it. */
export async function keepClaim(tx: TransactionSql, claim: IdempotencyClaim, at: number): Promise<void> {
  await tx`INSERT INTO idempotency_claims (key, fingerprint, at) VALUES (${claim.key}, ${claim.fingerprint}, ${at})
           ON CONFLICT (key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, at = EXCLUDED.at`;
}
