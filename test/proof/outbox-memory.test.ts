// D-167: the file store's outbox bounded in memory. A child process under a 256 MB heap
// (test/support/outbox-memory-child.ts) records 20,000 events with 16 KB bodies for one endpoint and
// delivers each to a receiver on loopback here; every event is kept (within D-87's retention). The
// heap used after a full GC, at a quarter and at the end, stays far below what the bodies alone take
// (320 MB: memory kept every body before D-167, and ran out). A second child opens the same directory
// under the same heap, finds every event, then prunes three quarters and compacts the file.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, test } from 'node:test';
import { NO_COVERAGE, tempDir } from '../support/helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CHILD = path.join(ROOT, 'test/support/outbox-memory-child.ts');
const HEAP_MB = 256;
const EVENTS = 20_000;
/** Dated 6 days back: the reopening child's prune (as two days later) lets them go. */
const OLD = 15_000;
const MB = 2 ** 20;
/** The heap after GC with every event kept: the index (a few hundred bytes an event), not the bodies. */
const HEAP_BOUND = 64 * MB;
/** Growth of that heap from a quarter of the deliveries to all of them. */
const GROWTH_BOUND = 24 * MB;

const cleanup: Array<() => unknown> = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

interface Sample {
  label: string;
  heapUsed: number;
  [k: string]: number | string;
}

/** Runs the child to its end; its samples by label. */
async function child(args: string[]): Promise<Map<string, Sample>> {
  const c = spawn(process.execPath, [`--max-old-space-size=${HEAP_MB}`, '--expose-gc', '--import', 'tsx', CHILD, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...NO_COVERAGE },
  });
  cleanup.push(() => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL'));
  let out = '';
  let err = '';
  c.stdout.on('data', (b: Buffer) => (out += b.toString()));
  c.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const [code, signal] = await new Promise<[number | null, string | null]>((r) => c.once('exit', (x, s) => r([x, s])));
  assert.equal(code, 0, `the child ended (${code ?? signal}): ${err.slice(-2000)}`);
  const samples = out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Sample);
  return new Map(samples.map((s) => [s.label, s]));
}

test(`D-167: ${EVENTS} events with 16 KB bodies delivered and kept under a ${HEAP_MB} MB heap: memory flat; a restart under the same heap reads them back`, {
  timeout: 900_000,
}, async () => {
  const received = new Set<string>();
  let short = 0;
  const receiver = http.createServer((req, res) => {
    let bytes = 0;
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      received.add(String(req.headers['webhook-id']));
      if (bytes < 16 * 1024) short++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  cleanup.push(() => new Promise((r) => receiver.close(r)));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const dataDir = await tempDir('parley-outbox-memory-');
  cleanup.push(() => fs.rm(dataDir, { recursive: true, force: true }));

  const run = await child(['deliver', dataDir, url, String(EVENTS), String(OLD)]);
  assert.equal(received.size, EVENTS, 'every event reached the receiver');
  assert.equal(short, 0, 'each with its whole body');
  const quarter = run.get('quarter')!;
  const end = run.get('delivered')!;
  const file = (await fs.stat(path.join(dataDir, 'webhooks.jsonl'))).size;
  assert.ok(file > EVENTS * 16 * 1024, `every body is in webhooks.jsonl (${(file / MB).toFixed(0)} MB)`);
  assert.ok(end.heapUsed < HEAP_BOUND, `heap after GC with ${EVENTS} events kept: ${(end.heapUsed / MB).toFixed(1)} MB`);
  assert.ok(
    end.heapUsed - quarter.heapUsed < GROWTH_BOUND,
    `heap from a quarter to all: ${(quarter.heapUsed / MB).toFixed(1)} → ${(end.heapUsed / MB).toFixed(1)} MB`,
  );

  const again = await child(['reopen', dataDir, String(EVENTS)]);
  const reopened = again.get('reopened')!;
  assert.deepEqual([reopened.known, reopened.due], [EVENTS, 0], 'every event read back, none left to deliver');
  assert.ok(Number(reopened.lastBody) > 16 * 1024, 'a body read back from the file');
  assert.ok(reopened.heapUsed < HEAP_BOUND, `heap after GC once reopened: ${(reopened.heapUsed / MB).toFixed(1)} MB`);
  const pruned = again.get('pruned')!;
  assert.deepEqual([pruned.kept, pruned.newestAttempts], [EVENTS - OLD, 1], 'the retention let the old go; the newest keeps its attempt');
  const compacted = (await fs.stat(path.join(dataDir, 'webhooks.jsonl'))).size;
  assert.ok(compacted < file / 3, `the file compacted after the prune: ${(file / MB).toFixed(0)} → ${(compacted / MB).toFixed(0)} MB`);
  assert.ok(pruned.heapUsed < HEAP_BOUND, `heap after GC once compacted: ${(pruned.heapUsed / MB).toFixed(1)} MB`);
});
