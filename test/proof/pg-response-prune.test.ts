// D-93 on PostgreSQL: the response rows are bounded by the retentions, not by the history. Past D-36's
// hour a response's events are deleted and what it was asked emptied (its row stays for the look-up);
// past the look-up's retention (RESPONSE_LOOKUP_RETENTION_MS) its row goes. Pruned in bounded batches,
// by two instances at once: each row pruned once, running responses and the hour's untouched.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import postgres from 'postgres';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { RESPONSE_LOOKUP_RETENTION_MS } from '../../src/store/types.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

const HOUR = 3_600_000;
/** More than two of the prune's batches (1,000 rows each), fewer than one prune's work. */
const PAST_HOUR = 2_500;
const PAST_RETENTION = 1_200;
const METADATA = JSON.stringify({ note: 'x'.repeat(16 * 1024) });

test('D-93: PostgreSQL prunes ended responses in bounded batches, two instances at once: events and input past the hour, rows past the retention; the look-up answers until the retention, to the millisecond', async (t) => {
  const url = await freshDatabase();
  const stores = [new PgStore({ url, max: 3 }), new PgStore({ url, max: 3 })];
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    for (const s of stores) await s.open();
    const now = Date.now();
    const input = JSON.stringify({ content: 'hello', metadata: JSON.parse(METADATA) });
    // Rows written directly: ended two hours ago, ended past the retention, ended within the hour, running.
    const seed = async (prefix: string, n: number, endedAt: number | null) => {
      await sql`
        INSERT INTO live_responses (id, app_id, conversation_id, created_at, input, owner, lease_until, ended_at)
        SELECT ${prefix} || g, 'app_demo', 'conv_' || ${prefix} || g, ${Math.floor(now / 1000)}::bigint, ${input}, 'gone',
               ${now + HOUR}::bigint, ${endedAt}::bigint
        FROM generate_series(1, ${n}) g`;
      await sql`
        INSERT INTO response_events (response_id, seq, body)
        SELECT ${prefix} || g, s, '{"event":"response.output_text.delta","data":{"delta":"hi"}}'
        FROM generate_series(1, ${n}) g, generate_series(0, 2) s`;
    };
    await seed('resp_past', PAST_HOUR, now - 2 * HOUR);
    await seed('resp_gone', PAST_RETENTION, now - RESPONSE_LOOKUP_RETENTION_MS - HOUR);
    await seed('resp_hour', 10, now - HOUR / 2);
    await seed('resp_run', 3, null);

    // Before any prune: the look-up already applies the retention, to the millisecond.
    assert.equal(await stores[0]!.responses.trace('resp_gone1'), undefined, 'past the retention: not found (a 404)');
    assert.equal((await stores[0]!.responses.trace('resp_past1'))?.events, null, 'past the hour: found, its events expired');

    const [a, b] = await Promise.all(stores.map((s) => s.responses.prune()));
    t.diagnostic(`instance 1 pruned ${JSON.stringify(a)}, instance 2 ${JSON.stringify(b)}`);
    assert.equal(a!.emptied + b!.emptied, PAST_HOUR + PAST_RETENTION, 'each row past the hour emptied once, whoever did it');
    assert.equal(a!.deleted + b!.deleted, PAST_RETENTION, 'each row past the retention deleted once');

    const count = async (q: postgres.PendingQuery<postgres.Row[]>) => Number((await q)[0]!.n);
    assert.equal(await count(sql`SELECT count(*) AS n FROM live_responses WHERE id LIKE 'resp_gone%'`), 0);
    assert.equal(await count(sql`SELECT count(*) AS n FROM response_events WHERE response_id LIKE 'resp_gone%'`), 0);
    assert.equal(await count(sql`SELECT count(*) AS n FROM live_responses WHERE id LIKE 'resp_past%' AND input = ''`), PAST_HOUR);
    assert.equal(await count(sql`SELECT count(*) AS n FROM response_events WHERE response_id LIKE 'resp_past%'`), 0);
    // The hour's and the running ones untouched: their input (D-38 saves a running one from it) and events.
    assert.equal(await count(sql`SELECT count(*) AS n FROM live_responses WHERE id ~ '^resp_(hour|run)' AND input = ${input}`), 13);
    assert.equal(await count(sql`SELECT count(*) AS n FROM response_events WHERE response_id ~ '^resp_(hour|run)'`), 39);

    // The look-up past the hour still answers where the response belongs (D-36); one of the hour has its events.
    const past = await stores[1]!.responses.trace('resp_past7');
    assert.deepEqual(past, {
      start: { id: 'resp_past7', app_id: 'app_demo', conversation_id: 'conv_resp_past7', created_at: Math.floor(now / 1000) },
      events: null,
      ended: true,
    });
    assert.equal((await stores[1]!.responses.trace('resp_hour3'))?.events?.length, 3);

    // What is left of a response past the hour: its row without its input, about the size of a past-index line.
    const [row] = await sql`SELECT avg(pg_column_size(r.*))::int AS n FROM live_responses r WHERE id LIKE 'resp_past%'`;
    t.diagnostic(`a row past the hour: ${row!.n} bytes (its input was ${Buffer.byteLength(input)})`);
    assert.ok(row!.n < 200, `${row!.n} bytes a row`);
    // A second prune finds nothing more to do.
    assert.deepEqual(await stores[0]!.responses.prune(), { emptied: 0, deleted: 0 });
  } finally {
    await sql.end();
    for (const s of stores) await s.close().catch(() => {});
  }
});
