// D-157's refused requests on PostgreSQL: one row per (app, UTC day, reason) holding its count, raised
// by an upsert of the counts an instance gathered (at most once every FLUSH_MS, src/store/refusals.ts),
// so that a flood of refusals costs the database one statement every few seconds. Every instance reads
// the same sums, plus its own counts not yet written. The file store's twin is src/store/file/refusals.ts.
import type { Sql } from 'postgres';
import { addRows, inSpan, RefusalBuffer, type RefusalLedger, type RefusalReason, type RefusedDayRow, todayOf } from '../refusals.ts';

export const REFUSALS_MIGRATION = {
  version: 13,
  name: 'refused requests counted',
  sql: `
    -- D-157: requests refused for credits, a rate limit or the storage quota, per app, UTC day and reason.
    CREATE TABLE usage_refusals (
      app_id text NOT NULL,
      day integer NOT NULL,
      reason text NOT NULL,
      n bigint NOT NULL,
      PRIMARY KEY (app_id, day, reason)
    );
  `,
};

export class PgRefusals implements RefusalLedger {
  private readonly buffer: RefusalBuffer;

  constructor(
    private readonly sql: Sql,
    warn: (message: string) => void,
  ) {
    this.buffer = new RefusalBuffer(
      (rows) => this.write(rows),
      (err) => warn(`refused-request counts not written (${(err as Error).message}); they are lost`),
    );
  }

  count(appId: string, reason: RefusalReason): void {
    this.buffer.add(appId, reason, todayOf());
  }

  async days(appIds: readonly string[], since: number, until: number): Promise<RefusedDayRow[]> {
    if (appIds.length === 0) return [];
    const rows = await this.sql<{ app_id: string; day: number; reason: RefusalReason; n: string }[]>`
      SELECT app_id, day, reason, n FROM usage_refusals
      WHERE app_id = ANY(${appIds as string[]}) AND day >= ${since} AND day <= ${until}`;
    const all = new Map<string, RefusedDayRow>();
    addRows(
      all,
      rows.map((r) => ({ ...r, n: Number(r.n) })),
    );
    addRows(all, this.buffer.unwritten());
    return inSpan(all.values(), appIds, since, until);
  }

  async close(): Promise<void> {
    await this.buffer.flush();
  }

  private async write(rows: RefusedDayRow[]): Promise<void> {
    await this.sql`
      INSERT INTO usage_refusals (app_id, day, reason, n)
      SELECT * FROM unnest(${rows.map((r) => r.app_id)}::text[], ${rows.map((r) => r.day)}::integer[],
                           ${rows.map((r) => r.reason)}::text[], ${rows.map((r) => r.n)}::bigint[])
      ON CONFLICT (app_id, day, reason) DO UPDATE SET n = usage_refusals.n + EXCLUDED.n`;
  }
}
