// What grows as a server keeps sending on PostgreSQL, pass after pass:
// `node --import tsx bench/lab/pg-send-passes.ts [passes] [sends] [connections] [conversations]`
// (default 6 passes of 1,000 non-streamed sends, 10 at a time, over 200 conversations: the probe of
// bench/log.md). Parley runs in this process on the benchmark's PostgreSQL (bench/pg.ts);
// each pass prints the wall time and PostgreSQL's CPU per send, then each statement of the live
// responses' tables (pg_stat_statements: calls per send, mean execution, shared buffers touched per
// call), the tables' live and dead row versions and autovacuum's runs, each index's scans and the
// entries they read per scan, and what the backends were waiting for (pg_stat_activity sampled every
// 20 ms). Environment: PASSES_AUTOVACUUM=off turns autovacuum off for the two tables (the growth
// without it); PASSES_SQL runs SQL on the database before the passes (a scratch experiment);
// PASSES_TRACK=all counts nested statements too (a foreign key's checks), PASSES_MATCH the statements
// shown (a regular expression); PASSES_EXPLAIN_MS=n logs the plans of the last pass's statements
// that took n ms or more, nested ones included (auto_explain), after the passes.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { explainAll, parleyOnPostgres, seedPostgres, startBenchPostgres } from '../pg.ts';

const [passesText = '6', sendsText = '1000', connectionsText = '10', conversationsText = '200'] = process.argv.slice(2);
const PASSES = Number(passesText);
const SENDS = Number(sendsText);
const CONNECTIONS = Number(connectionsText);
const APP = 'app_demo';
const AUTH = { authorization: 'Bearer sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3', 'content-type': 'application/json' };
const TABLES = ['live_responses', 'response_events'];

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-pg-passes-'));
const EXPLAIN_MS = process.env.PASSES_EXPLAIN_MS;
const logLines: string[] = [];
const pg = await startBenchPostgres(EXPLAIN_MS ? (line) => logLines.push(line) : undefined);
try {
  const url = await pg.database('probe_passes');
  const ids = await seedPostgres(url, APP, Number(conversationsText));
  const admin = postgres(pg.adminUrl, { max: 1, onnotice: () => {} });
  const db = postgres(url, { max: 1, onnotice: () => {} });
  if (process.env.PASSES_AUTOVACUUM === 'off') for (const t of TABLES) await db.unsafe(`ALTER TABLE ${t} SET (autovacuum_enabled = off)`);
  if (process.env.PASSES_SQL) await db.unsafe(process.env.PASSES_SQL);
  await admin.unsafe(`ALTER SYSTEM SET pg_stat_statements.track = '${process.env.PASSES_TRACK ?? 'top'}'`);
  await admin`SELECT pg_reload_conf()`;
  const parley = await parleyOnPostgres(url, tmp);
  try {
    let next = 0;
    const base = `http://127.0.0.1:${parley.port}/v1/apps/${APP}`;
    const send = async () => {
      const id = ids[next++ % ids.length]!;
      const res = await fetch(`${base}/conversations/${id}`, {
        method: 'POST',
        headers: AUTH,
        body: JSON.stringify({ message: { content: 'What are the opening hours of the Montreal office?' }, stream: false }),
      });
      await res.text();
      if (!res.ok) throw new Error(`send: ${res.status}`);
    };
    const run = async (n: number) => {
      let left = n;
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (left-- > 0) await send();
        }),
      );
    };
    await run(20);
    const dbName = new URL(url).pathname.slice(1);
    for (let pass = 1; pass <= PASSES; pass++) {
      await admin`SELECT pg_stat_statements_reset()`;
      if (EXPLAIN_MS && pass === PASSES) {
        await admin.unsafe(`ALTER SYSTEM SET auto_explain.log_nested_statements = on`);
        await explainAll(pg.adminUrl, Number(EXPLAIN_MS));
      }
      const idx0 = await indexStats(db);
      // What the backends of this database wait for, sampled from another connection.
      const waits = new Map<string, number>();
      let sampling = true;
      const sampler = (async () => {
        const s = postgres(pg.adminUrl, { max: 1, onnotice: () => {} });
        try {
          while (sampling) {
            const rows = await s<{ w: string }[]>`
              SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') || '  ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 50) AS w
              FROM pg_stat_activity WHERE datname = ${dbName} AND state = 'active' AND pid <> pg_backend_pid()`;
            for (const r of rows) waits.set(r.w, (waits.get(r.w) ?? 0) + 1);
            await new Promise((r) => setTimeout(r, 20));
          }
        } finally {
          await s.end();
        }
      })();
      const pg0 = await pg.cpuUs();
      const t0 = performance.now();
      await run(SENDS);
      const ms = performance.now() - t0;
      const pgCpu = (await pg.cpuUs()) - pg0;
      sampling = false;
      await sampler;
      console.log(
        `pass ${pass}: ${(ms / SENDS).toFixed(2)} ms per send (wall ÷ sends, ${CONNECTIONS} at a time); PostgreSQL CPU per send ${(pgCpu / SENDS).toFixed(0)} µs`,
      );
      const statements = await admin<{ query: string; calls: string; mean: number; blks: string }[]>`
        SELECT s.query, s.calls, s.mean_exec_time AS mean, (s.shared_blks_hit + s.shared_blks_read) AS blks
        FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = ${dbName} AND s.query ~ ${process.env.PASSES_MATCH ?? 'live_responses|response_events'} ORDER BY s.total_exec_time DESC`;
      for (const s of statements)
        console.log(
          `  ${(Number(s.calls) / SENDS).toFixed(2)}×  ${(s.mean * 1000).toFixed(0)} µs  ${(Number(s.blks) / Number(s.calls)).toFixed(1)} buffers  ${s.query.replace(/\s+/g, ' ').slice(0, 110)}`,
        );
      const tables = await db<
        { relname: string; live: string; dead: string; hot: string; upd: string; av: string; an: string; pages: string }[]
      >`
        SELECT relname, n_live_tup AS live, n_dead_tup AS dead, n_tup_hot_upd AS hot, n_tup_upd AS upd, autovacuum_count AS av, autoanalyze_count + analyze_count AS an,
               pg_relation_size(relid) / 8192 AS pages
        FROM pg_stat_user_tables WHERE relname IN ('live_responses', 'response_events') ORDER BY relname`;
      for (const t of tables)
        console.log(
          `  table ${t.relname}: ${t.live} live, ${t.dead} dead, ${t.pages} pages, updates ${t.upd} (HOT ${t.hot}), autovacuums ${t.av}, analyses ${t.an}`,
        );
      const idx1 = await indexStats(db);
      for (const [name, after] of idx1) {
        const before = idx0.get(name) ?? { scans: 0, read: 0, fetched: 0, pages: 0 };
        const scans = after.scans - before.scans;
        if (scans === 0) continue;
        console.log(
          `  index ${name}: ${scans} scans, ${((after.read - before.read) / scans).toFixed(1)} entries read and ${((after.fetched - before.fetched) / scans).toFixed(2)} rows fetched per scan, ${after.pages} pages`,
        );
      }
      const total = [...waits.values()].reduce((a, b) => a + b, 0);
      for (const [w, n] of [...waits].sort((a, b) => b[1] - a[1]).slice(0, 8))
        console.log(`  wait ${((n / total) * 100).toFixed(0)}%  ${w}`);
    }
    if (EXPLAIN_MS) console.log(logLines.join('\n'));
  } finally {
    await parley.close();
    await db.end();
    await admin.end();
  }
} finally {
  await pg.stop();
  await fs.rm(tmp, { recursive: true, force: true });
}

async function indexStats(db: postgres.Sql) {
  // pg_stat_* lag behind by up to a flush; a fresh snapshot is asked for.
  await db`SELECT pg_stat_clear_snapshot()`;
  const rows = await db<{ name: string; scans: string; read: string; fetched: string; pages: string }[]>`
    SELECT indexrelname AS name, idx_scan AS scans, idx_tup_read AS read, idx_tup_fetch AS fetched, pg_relation_size(indexrelid) / 8192 AS pages
    FROM pg_stat_user_indexes WHERE relname IN ('live_responses', 'response_events', 'conversations', 'responses', 'items')`;
  return new Map(
    rows.map((r) => [r.name, { scans: Number(r.scans), read: Number(r.read), fetched: Number(r.fetched), pages: Number(r.pages) }]),
  );
}
