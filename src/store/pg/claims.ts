// An Idempotency-Key's claim, written in the transaction of the work it ran (D-42): an exchange's
// (pg-store.ts, exchange.ts) or a completion's usage (usage.ts). The one statement they use.
import type { PendingQuery, Row, Sql, TransactionSql } from 'postgres';
import type { IdempotencyClaim } from '../../core/claims.ts';

/**
 * The upsert of `claim` as of `at` (ms), alone or as a part of a larger statement (D-104: an exchange's,
 * `from` naming the row it is written with). A key past its retention may be used again: the newer
 * claim replaces it.
 */
export function claimUpsert(sql: Sql | TransactionSql, claim: IdempotencyClaim, at: number, from?: PendingQuery<Row[]>) {
  return sql`INSERT INTO idempotency_claims (key, fingerprint, at) SELECT ${claim.key}::text, ${claim.fingerprint}::text, ${at}::bigint ${from ?? sql``}
             ON CONFLICT (key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, at = EXCLUDED.at`;
}

/** Saves `claim` as of `at` (ms). */
export async function keepClaim(tx: TransactionSql, claim: IdempotencyClaim, at: number): Promise<void> {
  await claimUpsert(tx, claim, at);
}
