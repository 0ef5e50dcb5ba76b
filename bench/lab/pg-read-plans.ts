// PostgreSQL's own time for the reads and the rename: `node --import tsx bench/lab/pg-read-plans.ts [conversations]`.
// One app of N conversations (bench/pg.ts, seeded by SQL) on the benchmark's PostgreSQL; each statement
// of src/store/pg/conversation-reads.ts, caught as the store sends it (postgres.js `debug`), prepared by
// name and executed 10 times, so that PostgreSQL has chosen its plan for later executions (custom or
// generic, as it does for the store's prepared statements), then EXPLAIN (ANALYZE, BUFFERS) of one more.
// The rename runs in a transaction rolled back.
import postgres from 'postgres';
import { getWithItems, listConversations, rename } from '../../src/store/pg/conversation-reads.ts';
import { seedPostgres, startBenchPostgres } from '../pg.ts';

const n = Number(process.argv[2] ?? '100000');
const APP = 'app_demo';
const UNDO = new Error('undo');
const pg = await startBenchPostgres();
try {
  const url = await pg.database('plans');
  const ids = await seedPostgres(url, APP, n);
  let caught: { text: string; params: unknown[] } | undefined;
  const spy = postgres(url, {
    max: 1,
    onnotice: () => {},
    debug: (_c: number, text: string, params: unknown[]) => {
      caught = { text, params };
    },
  });
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const mid = ids[Math.floor(ids.length / 2)]!;
  const cases: [string, () => Promise<unknown>][] = [
    ['get (record and items)', () => getWithItems(spy, mid)],
    [
      'list page of 20 after a cursor mid-list, newest first',
      () => listConversations(spy, APP, { direction: 'down', cursor: mid, limit: 20 }),
    ],
    [
      'list page of 20 after a cursor mid-list, oldest first',
      () => listConversations(spy, APP, { direction: 'up', cursor: mid, limit: 20 }),
    ],
    ['list page of 20, no cursor', () => listConversations(spy, APP, { direction: 'down', limit: 20 })],
    ['rename', () => rename(spy, APP, mid, 'Renamed')],
  ];
  for (const [name, run] of cases) {
    await run();
    const { text, params } = caught!;
    const args = params.map((p) => (p === null ? 'NULL' : typeof p === 'number' ? String(p) : `'${String(p).replace(/'/g, "''")}'`));
    await sql
      .begin(async (tx) => {
        await tx.unsafe(`PREPARE q AS ${text}`);
        for (let i = 0; i < 10; i++) await tx.unsafe(`EXECUTE q(${args.join(', ')})`);
        const plan = await tx.unsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE q(${args.join(', ')})`);
        console.log(`\n${name}:\n${plan.map((r) => `  ${r['QUERY PLAN']}`).join('\n')}`);
        // Rolled back: nothing the rename did is kept, and the prepared statement goes with the session's transaction.
        await tx.unsafe('DEALLOCATE q');
        throw UNDO;
      })
      .catch((err: unknown) => {
        if (err !== UNDO) throw err;
      });
  }
  await Promise.all([spy.end(), sql.end()]);
} finally {
  await pg.stop();
}
