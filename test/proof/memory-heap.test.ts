// D-93: memory bounded by design, under a small heap. A server process on the file store with
// `--max-old-space-size=256` takes 3,000 sends, each with 16 KB of metadata (the largest allowed, in the
// shape that costs most as parsed objects); its resident memory after send 3,000 is at most 40 MB above
// that after send 1,000 (nothing of an ended response stays in memory), and a restart on the same data
// (every response still within D-36's hour) completes under the same heap and still finds them.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { largestMetadata } from '../../bench/bounds.ts';
import { FIXTURES_DIR, KEY, tempDir } from '../support/helpers.ts';
import { listening } from '../support/server-process.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const HEAP_MB = 256;
const SENDS = 3_000;
const CONVERSATIONS = 60;
const PARALLEL = 4;
const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

async function spawnServer(
  dataDir: string,
): Promise<{ child: ChildProcess; base: string; exited: Promise<number | null>; stderr: () => string }> {
  const child = spawn(
    process.execPath,
    [
      `--max-old-space-size=${HEAP_MB}`,
      '--import',
      'tsx',
      'src/main.ts',
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--fixtures',
      FIXTURES_DIR,
      '--log-level',
      'warn',
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const l = listening(child);
  return { child, base: await l.base, exited: l.exited, stderr: l.stderr };
}

/** Resident memory of a process (Linux /proc), in bytes. */
async function rssOf(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(status);
  if (!kb) throw new Error(`no VmRSS in /proc/${pid}/status: this proof needs Linux`);
  return Number(kb[1]) * 1024;
}

test(`${SENDS} sends with 16 KB metadata under a ${HEAP_MB} MB heap: memory stays flat, and a restart completes`, {
  timeout: 1_800_000,
}, async (t) => {
  // Resident memory is read from /proc: elsewhere this proof fails, saying so (rssOf).
  await rssOf(process.pid);
  const dataDir = await tempDir();
  const metadata = largestMetadata();
  let server = await spawnServer(dataDir);
  const ids: string[] = [];
  const rss: Record<number, number> = {};
  try {
    const convs: string[] = [];
    for (let i = 0; i < CONVERSATIONS; i++) {
      const r = await fetch(`${server.base}/apps/app_demo/conversations`, { method: 'POST', headers, body: '{}' });
      assert.equal(r.status, 200);
      convs.push(((await r.json()) as { id: string }).id);
    }
    let sent = 0;
    const body = (n: number) => JSON.stringify({ message: { content: `Message ${n}: hello` }, metadata, stream: false });
    // Each worker sends to its own conversations in turn (a conversation takes one message at a time, D-37).
    const worker = async (w: number) => {
      for (let k = 0; ; k++) {
        const n = sent++;
        if (n >= SENDS) return;
        const conv = convs[(w + k * PARALLEL) % CONVERSATIONS]!;
        const r = await fetch(`${server.base}/apps/app_demo/conversations/${conv}`, { method: 'POST', headers, body: body(n) });
        if (r.status !== 200) throw new Error(`send ${n}: ${r.status} ${await r.text()}`);
        ids.push(((await r.json()) as { id: string }).id);
        if (n + 1 === 1_000 || n + 1 === SENDS) rss[n + 1] = await rssOf(server.child.pid!);
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, (_, w) => worker(w)));
    const growth = rss[SENDS]! - rss[1_000]!;
    t.diagnostic(
      `resident memory after send 1,000: ${(rss[1_000]! / 2 ** 20).toFixed(1)} MB, after ${SENDS}: ${(rss[SENDS]! / 2 ** 20).toFixed(1)} MB`,
    );
    assert.ok(growth <= 40 * 2 ** 20, `resident memory grew by ${(growth / 2 ** 20).toFixed(1)} MB from send 1,000 to ${SENDS}`);
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0, server.stderr());
    // Every response is still within the hour (D-36): start-up has all of them to find.
    server = await spawnServer(dataDir);
    for (const id of [ids[0]!, ids.at(-1)!]) {
      const r = await fetch(`${server.base}/apps/app_demo/responses/${id}`, { headers });
      assert.equal(r.status, 200);
      assert.equal(((await r.json()) as { status: string }).status, 'completed');
      const events = await fetch(`${server.base}/apps/app_demo/responses/${id}/events`, { headers });
      assert.match(await events.text(), /event: response\.completed/);
    }
  } finally {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  }
});
