// D-93 on PostgreSQL: the ended responses' rows pruned (responses.ts runs it every minute), past D-36's
// hour to a row of ~150 bytes, past the look-up's retention to nothing.
import type { Sql } from 'postgres';

/** How many rows one statement touches at most. */
const PRUNE_BATCH = 1_000;
/** Batches per prune and step: a backlog (a long outage, an upgrade) is worked off over several prunes. */
const PRUNE_BATCHES = 20;

/**
 * D-93: ended responses pruned in bounded batches, each one statement: past D-36's hour, a response's
 * events are deleted and what it was asked emptied (its row stays ~150 bytes, for the look-up); past
 * the look-up's retention, its row goes. Rows another instance is pruning at the same moment are
 * skipped (SKIP LOCKED), so instances pruning together neither wait for nor repeat each other's work.
 * Resolves with how many rows each step touched.
 */
export async function pruneResponses(
  sql: Sql,
  now: () => number,
  ttlMs: number,
  retentionMs: number,
): Promise<{ emptied: number; deleted: number }> {
  const out = { emptied: 0, deleted: 0 };
  for (let i = 0; i < PRUNE_BATCHES; i++) {
    const rows = await sql`
      WITH old AS (SELECT id FROM live_responses WHERE input <> '' AND ended_at <= ${now() - ttlMs}
                   ORDER BY ended_at LIMIT ${PRUNE_BATCH} FOR UPDATE SKIP LOCKED),
      gone AS (DELETE FROM response_events e USING old WHERE e.response_id = old.id)
      UPDATE live_responses r SET input = '' FROM old WHERE r.id = old.id RETURNING 1`;
    out.emptied += rows.length;
    if (rows.length < PRUNE_BATCH) break;
  }
  for (let i = 0; i < PRUNE_BATCHES; i++) {
    // D-114: a row not yet emptied (another instance held it, or D-36's hour outlasts the retention) takes its events along.
    const rows = await sql`
      WITH gone AS (DELETE FROM live_responses WHERE id IN (
        SELECT id FROM live_responses WHERE ended_at <= ${now() - retentionMs}
        ORDER BY ended_at LIMIT ${PRUNE_BATCH} FOR UPDATE SKIP LOCKED) RETURNING id, input),
      e AS (DELETE FROM response_events e USING gone WHERE e.response_id = gone.id AND gone.input <> '')
      SELECT 1 FROM gone`;
    out.deleted += rows.length;
    if (rows.length < PRUNE_BATCH) break;
  }
  return out;
}
