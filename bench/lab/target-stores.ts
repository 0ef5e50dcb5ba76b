// `parley bench --target` (D-160) against Parley on each store in turn: `parley serve` on the file
// store, then on a durable embedded PostgreSQL (bench/pg.ts), each with the fixtures of
// fixtures/target.json; the CLI's own tables printed as it prints them. Extra arguments go to
// `parley bench` (`--rounds 5`, `--json`).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startBenchPostgres } from '../pg.ts';

const root = path.resolve(import.meta.dirname, '../..');
const cli = path.join(root, 'bin/parley.js');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** Resolves once the port accepts a connection (the server is listening). */
async function listening(port: number, proc: ChildProcess): Promise<void> {
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`parley serve exited with ${proc.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => c.end(() => resolve(true)));
      c.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function benchAgainst(label: string, serveArgs: string[], dir: string): Promise<void> {
  const port = await freePort();
  const server = spawn(
    process.execPath,
    [cli, 'serve', '--port', String(port), '--fixtures', path.join(root, 'fixtures'), '--log-level', 'warn', ...serveArgs],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  try {
    await listening(port, server);
    const target = JSON.parse(await fs.readFile(path.join(root, 'fixtures/target.json'), 'utf8')) as Record<string, unknown>;
    const file = path.join(dir, `target-${label}.json`);
    await fs.writeFile(file, JSON.stringify({ ...target, base_url: `http://127.0.0.1:${port}/v1` }));
    console.log(
      `\n## ${label} (load average before: ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')})\n`,
    );
    const bench = spawn(process.execPath, [cli, 'bench', '--target', file, ...process.argv.slice(2)], { stdio: 'inherit' });
    const code = await new Promise<number | null>((resolve) => bench.on('exit', resolve));
    console.log(
      `\n(exit ${code}; load average after: ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')})`,
    );
  } finally {
    if (server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((r) => server.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
  }
}

const stores = process.env.STORES?.split(',') ?? ['file', 'pg'];
const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-target-stores-'));
try {
  if (stores.includes('file')) await benchAgainst('file store', ['--data-dir', path.join(dir, 'data')], dir);
  if (!stores.includes('pg')) process.exit(0);
  console.log('\nstarting an embedded PostgreSQL');
  const pg = await startBenchPostgres();
  try {
    await benchAgainst('PostgreSQL', ['--database-url', await pg.database('target_bench')], dir);
  } finally {
    await pg.stop();
  }
} finally {
  await fs.rm(dir, { recursive: true, force: true });
}
