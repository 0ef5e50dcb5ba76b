// D-151 as processes: where the optional dependency postgres.js did not install (played by a resolve
// hook, test/support/without-postgres.mjs, so that no node_modules is touched), the server runs on the
// data directory and the CLI's other commands run; chosen with DATABASE_URL, start-up and `parley db`
// end with exit 1 and a one-line reason naming what to install (README: a start-up failure exits 1).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import readline from 'node:readline';
import { test } from 'node:test';
import { APP, KEY, tempDir } from '../support/helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const WITHOUT_POSTGRES = path.join(ROOT, 'test/support/without-postgres.mjs');
// Nothing listens there, and without the driver nothing tries to connect.
const NO_DATABASE = 'postgres://parley@127.0.0.1:1/parley';
const REASON =
  /^[^\n]*needs postgres@\d+\.\d+\.\d+, an optional dependency of Parley that is not installed: install Parley with its optional dependencies \(npm install --include=optional\), or leave DATABASE_URL unset to use the data directory\n$/;

/** `node --import tsx` of `entry` without the driver; its exit code and output, or its first banner line. */
function run(entry: string, args: string[], env: Record<string, string> = {}) {
  const proc = spawn(process.execPath, ['--import', 'tsx', '--import', WITHOUT_POSTGRES, entry, ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exit = once(proc, 'exit').then(([code]) => ({ code: code as number | null, stdout, stderr }));
  return { proc, exit };
}

test('D-151: without the driver, the server on the data directory starts, answers and stops cleanly', { timeout: 60_000 }, async (t) => {
  const child = run('src/main.ts', ['--port', '0', '--data-dir', path.join(await tempDir(), 'data')]);
  t.after(() => child.proc.kill('SIGKILL'));
  const url = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.proc.stdout }).on('line', (l) => {
      const m = /^Parley listening on (http:\/\/\S+\/v1)$/.exec(l);
      if (m) resolve(m[1]!);
    });
    void child.exit.then((r) => reject(new Error(`exited ${r.code} before listening: ${r.stderr}`)));
  });
  const r = await fetch(`${url}/apps/${APP}/conversations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: '{}',
  });
  assert.equal(r.status, 200);
  assert.match(((await r.json()) as { id: string }).id, /^conv_/);
  child.proc.kill('SIGTERM');
  assert.equal((await child.exit).code, 0);
});

test('D-151: without the driver, DATABASE_URL exits 1 with a one-line reason naming what to install, no stack trace', {
  timeout: 60_000,
}, async () => {
  const r = await run('src/main.ts', ['--port', '0'], { DATABASE_URL: NO_DATABASE }).exit;
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /^parley: cannot start: the PostgreSQL store/);
  assert.match(r.stderr, REASON);
  assert.equal(r.stdout, '', 'no banner');
});

test('D-151: without the driver, the CLI exports a data directory, and `parley db status` exits 1 with the same reason', {
  timeout: 60_000,
}, async () => {
  const data = await tempDir();
  const exported = await run('cli/main.ts', ['data', 'export', '--data-dir', data]).exit;
  assert.equal(exported.code, 0, exported.stderr);
  assert.match(exported.stdout, /^\{"format":"parley-export"/);
  const status = await run('cli/main.ts', ['db', 'status'], { DATABASE_URL: NO_DATABASE }).exit;
  assert.equal(status.code, 1, status.stderr);
  assert.match(status.stderr, /^error: the PostgreSQL store/);
  assert.match(status.stderr, REASON);
});
