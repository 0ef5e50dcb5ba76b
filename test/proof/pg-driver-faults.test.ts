// D-90: postgres.js 3.4.9 patched at install (scripts/patch-postgres.mjs, porsager/postgres#1208). A
// transaction whose backend is terminated (pg_terminate_backend) on a real PostgreSQL, in a child
// process so that a driver that ends its process (unpatched: an uncaught TypeError from `nextWrite`)
// fails this test rather than ending the runner: the process lives on, the transaction's caller gets
// the error, a statement its callback sends after the close runs nowhere, and the pool works again.
// Through both entry points of the package: ESM (src/) and CommonJS (cjs/src/).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const CHILD = path.join(ROOT, 'test', 'support', 'pg-tx-kill.mjs');

function run(url: string, entry: 'esm' | 'cjs'): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, url, entry], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b));
    child.stderr.on('data', (b: Buffer) => (stderr += b));
    // A wedged pool never ends by itself: its CONNECT_TIMEOUTs go on for ever.
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('postgres.js under a terminated transaction (D-90)', () => {
  test('the installed driver carries the patch, in both entry points', async () => {
    for (const sub of ['src', 'cjs/src'])
      for (const name of ['connection.js', 'index.js']) {
        const text = await fs.readFile(path.join(ROOT, 'node_modules', 'postgres', sub, name), 'utf8');
        assert.match(text, /^\/\/ Patched by parley/, `${sub}/${name} is patched (npm ci runs scripts/patch-postgres.mjs)`);
      }
  });

  for (const entry of ['esm', 'cjs'] as const) {
    test(`${entry}: the process survives, the caller gets the error, a late statement runs nowhere, the pool works again`, async () => {
      const url = await freshDatabase();
      const r = await run(url, entry);
      assert.equal(r.code, 0, `the child ran through (exit ${r.code}); stderr:\n${r.stderr}`);
      const seen = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
      // 57P01: the server's "terminating connection due to administrator command", or the driver's close.
      assert.ok(['57P01', 'CONNECTION_CLOSED', 'ECONNRESET'].includes(seen.during as string), `terminated mid-statement: ${seen.during}`);
      assert.ok(['57P01', 'CONNECTION_CLOSED', 'ECONNRESET'].includes(seen.idle as string), `terminated between statements: ${seen.idle}`);
      assert.notEqual(seen.late, 'ran', 'the statement sent after the close did not run');
      assert.deepEqual(seen.after, [1, 2, 3, 4]);
      // Only what committed: neither the terminated transactions' rows nor the late one.
      assert.deepEqual(seen.marks, ['after', 'other']);
    });
  }
});
