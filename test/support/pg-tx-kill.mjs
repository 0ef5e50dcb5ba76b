// A child process for test/proof/pg-driver-faults.test.ts: postgres.js (its ESM entry, or with
// `cjs` its CommonJS one) under transactions whose backend is terminated (pg_terminate_backend).
// Unpatched 3.4.9 ends this process with an uncaught TypeError from `nextWrite`, or wedges the pool
// (porsager/postgres#1208). Prints one JSON line of what it saw; exits 0 once it ran through.
import { createRequire } from 'node:module';

const [url, entry] = process.argv.slice(2);
const postgres = entry === 'cjs' ? createRequire(import.meta.url)('postgres') : (await import('postgres')).default;

const sql = postgres(url, { max: 2, onnotice: () => {}, connect_timeout: 5, idle_timeout: 0 });
const killer = postgres(url, { max: 1, onnotice: () => {} });
const codeOf = (err) => (err ? String(err.code ?? err.message) : null);
const seen = {};

async function until(get) {
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    await new Promise((r) => setImmediate(r));
  }
}

await sql`CREATE TABLE IF NOT EXISTS marks (what text)`;

// 1. Terminated while a statement of the transaction runs: the transaction's caller gets the error,
// and the driver's own rollback (sent after the close) must not crash the process.
{
  let pid;
  const tx = sql.begin(async (t) => {
    pid = (await t`SELECT pg_backend_pid() AS pid`)[0].pid;
    await t`INSERT INTO marks VALUES ('running')`;
    await t`SELECT pg_sleep(60)`;
  });
  const settled = tx.then(
    () => null,
    (err) => err,
  );
  await killer`SELECT pg_terminate_backend(${await until(() => pid)})`;
  seen.during = codeOf(await settled);
}

// 2. Terminated while the callback awaits other work: its later statement must not run on the
// connection's next session (another transaction's), and the transaction's caller gets the error.
{
  let pid;
  let release;
  const gate = new Promise((r) => (release = r));
  let late;
  const tx = sql.begin(async (t) => {
    pid = (await t`SELECT pg_backend_pid() AS pid`)[0].pid;
    await gate;
    try {
      await t`INSERT INTO marks VALUES ('late')`;
      late = 'ran';
    } catch (err) {
      late = codeOf(err);
      throw err;
    }
  });
  const settled = tx.then(
    () => null,
    (err) => err,
  );
  await killer`SELECT pg_terminate_backend(${await until(() => pid)})`;
  seen.idle = codeOf(await settled);
  // A new transaction may hold the reconnected connection meanwhile.
  const other = sql.begin(async (t) => {
    await t`INSERT INTO marks VALUES ('other')`;
    release();
    await until(() => late);
  });
  await other;
  seen.late = late;
}

// 3. The pool works again: statements and a transaction on both connections.
const rows = await Promise.all([1, 2, 3, 4].map((n) => sql`SELECT ${n}::int AS n`));
seen.after = rows.map((r) => r[0].n);
await sql.begin((t) => t`INSERT INTO marks VALUES ('after')`);
seen.marks = (await sql`SELECT what FROM marks ORDER BY what`).map((r) => r.what);
await Promise.all([sql.end({ timeout: 5 }), killer.end({ timeout: 5 })]);
console.log(JSON.stringify(seen));
