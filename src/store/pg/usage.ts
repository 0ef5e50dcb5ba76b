// Token usage on PostgreSQL (docs/postgres.md): one row per response or completion, totals by query,
// so that every instance reports the same totals. A completion's Idempotency-Key claim is written in
// the same transaction as its usage (its only save), as the file ledger writes both in one line.
// D-74: the row carries its reply's debit (no balance row that every reply of a team would lock);
// a team's balance and the per-day sums are queries over the rows (migration 6's indexes).
import type { Sql, TransactionSql } from 'postgres';
import type { UsageT } from '../../contract/index.ts';
import { appUsage, type AppUsage, type Debit, type UsageDayRow, type UsageLedger } from '../shared.ts';
import type { IdempotencyClaim } from '../../core/claims.ts';
import { keepClaim } from './claims.ts';

export class PgUsageLedger implements UsageLedger {
  constructor(
    private readonly sql: Sql,
    private readonly now: () => number = Date.now,
  ) {}

  async record(
    appId: string,
    kind: 'response' | 'completion',
    id: string,
    usage: UsageT,
    claim?: IdempotencyClaim,
    debit?: Debit,
  ): Promise<void> {
    const now = this.now();
    // A save retried with the same id counts once (the file ledger keeps one line per record).
    const entry = (sql: Sql | TransactionSql) => sql`
      INSERT INTO usage_entries (app_id, kind, id, at, input_tokens, output_tokens, team_id, millicredits)
      VALUES (${appId}, ${kind}, ${id}, ${Math.floor(now / 1000)}, ${usage.input_tokens}, ${usage.output_tokens},
              ${debit?.team_id ?? null}, ${debit?.millicredits ?? 0})
      ON CONFLICT (kind, id) DO NOTHING`;
    // Alone, the row is its own transaction (BEGIN and COMMIT were 2 of a send's statements, D-100).
    if (!claim) {
      await entry(this.sql);
      return;
    }
    await this.sql.begin(async (tx) => {
      await entry(tx);
      await keepClaim(tx, claim, now);
    });
  }

  async of(appId: string): Promise<AppUsage> {
    const [row] = await this.sql<{ n: string; i: string | null; o: string | null }[]>`
      SELECT count(*) AS n, sum(input_tokens) AS i, sum(output_tokens) AS o FROM usage_entries WHERE app_id = ${appId}`;
    return appUsage(Number(row!.n), Number(row!.i ?? 0), Number(row!.o ?? 0));
  }

  async debited(teamId: string, since: number): Promise<number> {
    const [row] = await this.sql<{ mc: string | null }[]>`
      SELECT sum(millicredits) AS mc FROM usage_entries WHERE team_id = ${teamId} AND at >= ${since}`;
    return Number(row!.mc ?? 0);
  }

  async days(appIds: readonly string[], since: number, until: number): Promise<UsageDayRow[]> {
    if (appIds.length === 0) return [];
    const rows = await this.sql<{ app_id: string; day: string; n: string; i: string; o: string; mc: string }[]>`
      SELECT app_id, at / 86400 AS day, count(*) AS n, sum(input_tokens) AS i, sum(output_tokens) AS o, sum(millicredits) AS mc
      FROM usage_entries
      WHERE app_id = ANY(${appIds as string[]}) AND at >= ${since * 86_400} AND at < ${(until + 1) * 86_400}
      GROUP BY app_id, at / 86400
      ORDER BY day, app_id`;
    return rows.map((r) => ({
      app_id: r.app_id,
      day: Number(r.day),
      requests: Number(r.n),
      input_tokens: Number(r.i),
      output_tokens: Number(r.o),
      millicredits: Number(r.mc),
    }));
  }

  async close(): Promise<void> {}
}
