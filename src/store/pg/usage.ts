// Token usage on PostgreSQL (docs/postgres.md): one row per response or completion, totals by query,
// so that every instance reports the same totals. A completion's Idempotency-Key claim is written in
// the same transaction as its usage (its only save), as the file ledger writes both in one line.
import type { Sql } from 'postgres';
import type { UsageT } from '../../contract/index.ts';
import { appUsage, type AppUsage, type UsageLedger } from '../shared.ts';
import type { IdempotencyClaim } from '../../core/claims.ts';

export class PgUsageLedger implements UsageLedger {
  constructor(
    private readonly sql: Sql,
    private readonly now: () => number = Date.now,
  ) {}

  async record(appId: string, kind: 'response' | 'completion', id: string, usage: UsageT, claim?: IdempotencyClaim): Promise<void> {
    const now = this.now();
    await this.sql.begin(async (tx) => {
      // A save retried with the same id counts once (the file ledger keeps one line per record).
      await tx`INSERT INTO usage_entries (app_id, kind, id, at, input_tokens, output_tokens)
               VALUES (${appId}, ${kind}, ${id}, ${Math.floor(now / 1000)}, ${usage.input_tokens}, ${usage.output_tokens})
               ON CONFLICT (kind, id) DO NOTHING`;
      if (claim) {
        await tx`INSERT INTO idempotency_claims (key, fingerprint, at) VALUES (${claim.key}, ${claim.fingerprint}, ${now})
                 ON CONFLICT (key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, at = EXCLUDED.at`;
      }
    });
  }

  async of(appId: string): Promise<AppUsage> {
    const [row] = await this.sql<{ n: string; i: string | null; o: string | null }[]>`
      SELECT count(*) AS n, sum(input_tokens) AS i, sum(output_tokens) AS o FROM usage_entries WHERE app_id = ${appId}`;
    return appUsage(Number(row!.n), Number(row!.i ?? 0), Number(row!.o ?? 0));
  }

  async close(): Promise<void> {}
}
