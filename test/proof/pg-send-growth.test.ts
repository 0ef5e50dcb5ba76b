// D-114 on PostgreSQL: what made a send dearer the longer a server kept sending. A plan cached while
// a table looked empty (a sequential scan) is kept as the table grows, until its statistics change:
// Parley analyzes the tables a send grows once they have doubled, and the cached plans are made again.
// The events of a response are checked against its row by the statement that writes them, not once
// per event by a foreign key (whose checks ran such plans); the prune deletes a response's events
// with its row, as the foreign key's cascade did.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import postgres from 'postgres';
import { migrate } from '../../src/store/pg/migrate.ts';
import { PlanStats } from '../../src/store/pg/plan-stats.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import type { UnsequencedEvent } from '../../src/contract/index.ts';
import { freshDatabase, liveResponsesRead, usePostgres } from '../support/postgres.ts';

usePostgres();

const HOUR = 3_600_000;
const ev = (event: string, n: number) => ({ event, data: { n } }) as unknown as UnsequencedEvent;
const INPUT = JSON.stringify({ content: 'What are the opening hours of the Montreal office?', metadata: null });

test('D-114: a plan cached while live_responses was empty (a sequential scan) is made again once the table has doubled', async () => {
  const url = await freshDatabase();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const conn = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await migrate(sql);
    // Only this test's ANALYZE may change the statistics (autovacuum would, a minute on).
    await sql`ALTER TABLE live_responses SET (autovacuum_enabled = off)`;
    await sql`ANALYZE live_responses`;
    // One connection's prepared look-up by key, its plan kept (as a pool's connection keeps it).
    await conn`SET plan_cache_mode = force_generic_plan`;
    await conn.unsafe('PREPARE by_id(text) AS SELECT id, owner FROM live_responses WHERE id = $1');
    const plan = async () =>
      (await conn.unsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN EXECUTE by_id('resp_1')`)).map((r) => r['QUERY PLAN']).join('\n');
    assert.match(await plan(), /Seq Scan on live_responses/, 'planned on the empty table: a sequential scan');
    await sql`
      INSERT INTO live_responses (id, app_id, conversation_id, created_at, input, owner, lease_until, ended_at)
      SELECT 'resp_' || g, 'app_demo', 'conv_' || g, 1, ${INPUT}, 'gone', 0, 1 FROM generate_series(1, 5000) g`;
    assert.match(await plan(), /Seq Scan on live_responses/, 'the plan is kept as the table grows: every call reads it all');

    const stats = new PlanStats(sql);
    assert.deepEqual(await stats.check(), ['live_responses']);
    assert.match(await plan(), /Index Scan using live_responses_pkey/, 'made again at the table’s size');
    assert.deepEqual(await stats.check(), [], 'not analyzed again before it doubles');
  } finally {
    await conn.end();
    await sql.end();
  }
});

test('D-114: a response of 300 events, written in batches, reads its row once a batch, not once per event', async (t) => {
  const url = await freshDatabase();
  const first = new PgStore({ url, max: 2 });
  await first.open();
  await first.close();
  const before = await liveResponsesRead(url);
  const store = new PgStore({ url, max: 2 });
  await store.open();
  try {
    const r = store.responses;
    await r.begin(
      { id: 'resp_many', app_id: 'app_demo', conversation_id: 'conv_many', created_at: 1, input: { content: 'hi', metadata: null } },
      ev('response.created', 0),
    );
    const appends: Promise<void>[] = [];
    for (let i = 1; i <= 300; i++) appends.push(r.append('resp_many', ev('response.output_text.delta', i)));
    appends.push(r.append('resp_many', ev('response.completed', 301)));
    await Promise.all(appends);
    assert.equal((await r.trace('resp_many'))?.events?.length, 302);
  } finally {
    await store.close();
  }
  const read = (await liveResponsesRead(url)) - before;
  t.diagnostic(`302 events in batches of at most 100 read ${read} rows of live_responses`);
  assert.ok(read <= 20, `${read} rows of live_responses read for 302 events`);
});

test('D-114: a response deleted past the look-up’s retention takes its events along, even before D-36’s hour emptied it', async () => {
  const url = await freshDatabase();
  // The events kept longer than the look-up: a row past the retention still has its events and input.
  const store = new PgStore({ url, max: 2, responseEventsTtlMs: 2 * HOUR, responseRetentionMs: HOUR });
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await store.open();
    const endedAt = Date.now() - 1.5 * HOUR;
    await sql`
      INSERT INTO live_responses (id, app_id, conversation_id, created_at, input, owner, lease_until, ended_at)
      VALUES ('resp_old', 'app_demo', 'conv_old', 1, ${INPUT}, 'gone', 0, ${endedAt}), ('resp_new', 'app_demo', 'conv_new', 1, ${INPUT}, 'gone', 0, ${Date.now()})`;
    await sql`
      INSERT INTO response_events (response_id, seq, body)
      SELECT id, s, '{"event":"response.output_text.delta","data":{"delta":"hi"}}' FROM unnest(ARRAY['resp_old', 'resp_new']) id, generate_series(0, 2) s`;
    assert.deepEqual(await store.responses.prune(), { emptied: 0, deleted: 1 });
    const events = await sql<{ id: string; n: number }[]>`
      SELECT response_id AS id, count(*)::int AS n FROM response_events GROUP BY response_id ORDER BY response_id`;
    assert.deepEqual(
      events.map((e) => [e.id, e.n]),
      [['resp_new', 3]],
      'no event is left without its response',
    );
  } finally {
    await sql.end();
    await store.close();
  }
});
