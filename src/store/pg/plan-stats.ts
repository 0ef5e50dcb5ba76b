// D-114: PostgreSQL keeps a prepared statement's plan (and a foreign key's check) per connection until
// the table's statistics change. Planned while a table was nearly empty, a look-up by key is a
// sequential scan (cheaper than the index there) and stays one as the table grows, reading every page
// of it per call, until autovacuum analyzes the table: a minute at the soonest (`autovacuum_naptime`,
// a server-wide setting), more when its workers are busy. So every few seconds each instance compares
// the tables a send writes with the size their statistics were taken at, and analyzes those that have
// doubled since (SKIP_LOCKED: it never waits): the next call of each plan makes it again, at the
// table's size. A grown table is analyzed about log2(its size) times in its life, autovacuum's own
// analyses (every tenth grown) keeping it from doubling once it is large.
import type { Sql } from 'postgres';
import { Periodic } from '../../core/periodic.ts';

/** The tables a send reads or writes by key, growing with every send. */
export const GROWING = ['conversations', 'items', 'responses', 'live_responses', 'response_events'] as const;
/** How often each instance looks. */
export const PLAN_STATS_MS = 3_000;
/** Below this many pages a sequential scan costs about what the index does: left to autovacuum. */
const MIN_PAGES = 8;

export class PlanStats {
  private looking: Periodic | undefined;
  /** The size at which this instance last asked for each table's analysis: one refused (not the owner) is asked again at twice the size only. */
  private readonly asked = new Map<string, number>();

  constructor(
    private readonly sql: Sql,
    private readonly tables: readonly string[] = GROWING,
  ) {}

  open(): void {
    this.looking = new Periodic(() => this.check(), PLAN_STATS_MS);
  }

  async close(): Promise<void> {
    await this.looking?.stop();
  }

  /** One look: analyzes the tables grown to twice their analyzed size (MIN_PAGES at least); resolves with their names. */
  async check(): Promise<string[]> {
    const rows = await this.sql<{ name: string; analyzed: number; pages: number }[]>`
      SELECT c.relname::text AS name, c.relpages AS analyzed,
             (pg_relation_size(c.oid) / current_setting('block_size')::int)::int AS pages
      FROM pg_class c
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND c.relname::text = ANY(${this.sql.array([...this.tables])}::text[])`;
    const grown = rows.filter((r) => r.pages >= Math.max(MIN_PAGES, 2 * r.analyzed, 2 * (this.asked.get(r.name) ?? 0)));
    if (grown.length === 0) return [];
    for (const r of grown) this.asked.set(r.name, r.pages);
    await this.sql.unsafe(`ANALYZE (SKIP_LOCKED) ${grown.map((r) => `"${r.name}"`).join(', ')}`);
    return grown.map((r) => r.name);
  }
}
