// D-35 (revised) with real crashes: the response files created ahead (`responses/running/*.spare`)
// lie around when a server is killed with SIGKILL. Start-up removes every spare never begun, finds a
// begun response also when a crash undid its rename (its start line names it), and never takes an
// empty or torn spare for a response (the begun one is saved `interrupted`, D-38); replies after the
// restart stream and are saved as before.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { FIXTURES_DIR, KEY, tempDir } from '../support/helpers.ts';
import { listening, replyUnderWay } from '../support/server-process.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

async function spawnServer(dataDir: string): Promise<{ child: ChildProcess; base: string; exited: Promise<number | null> }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/main.ts', '--port', '0', '--data-dir', dataDir, '--fixtures', FIXTURES_DIR, '--log-level', 'warn'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const { base, exited } = listening(child);
  return { child, base: await base, exited };
}

async function kill(s: { child: ChildProcess; exited: Promise<number | null> }): Promise<void> {
  if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  await s.exited;
}

const runningDir = (dataDir: string) => path.join(dataDir, 'responses', 'running');
const spares = async (dataDir: string) => (await fs.readdir(runningDir(dataDir))).filter((n) => n.endsWith('.spare')).sort();

async function json(base: string, p: string, init?: RequestInit): Promise<any> {
  return (await fetch(`${base}${p}`, { headers, ...init })).json();
}

test('kill -9 with response files created ahead lying around: start-up removes them and finds only begun responses', {
  timeout: 120_000,
}, async () => {
  const dataDir = await tempDir();
  // 1. Killed at once after start-up: only spares, never begun.
  const idle = await spawnServer(dataDir);
  const leftIdle = await spares(dataDir);
  await kill(idle);
  assert.ok(leftIdle.length > 0, 'the server creates its spares at start-up');

  // 2. Killed while a reply streams, its rename undone as a crash before the folder's sync may leave it.
  const first = await spawnServer(dataDir);
  let id = '';
  let conv = '';
  try {
    assert.deepEqual(
      (await spares(dataDir)).filter((n) => leftIdle.includes(n)),
      [],
      'the last process’s spares were removed',
    );
    conv = (await json(first.base, '/apps/app_slow/conversations', { method: 'POST', body: '{}' })).id;
    const { reader, ...under } = await replyUnderWay(first.base, headers, conv);
    id = under.id;
    await kill(first);
    await reader.cancel().catch(() => {});
  } finally {
    await kill(first);
  }
  const running = runningDir(dataDir);
  const leftStream = await spares(dataDir);
  assert.ok(leftStream.length > 0);
  await fs.rename(path.join(running, `${id}.jsonl`), path.join(running, 'rename-undone.spare'));
  // A spare whose start line was torn by the crash, and an empty one a crash left unsynced.
  await fs.writeFile(path.join(running, 'torn.spare'), '{"id":"resp_0123456789abcdef01234567","app_id":"app_sl');
  await fs.writeFile(path.join(running, 'empty.spare'), '');

  const again = await spawnServer(dataDir);
  try {
    const r = await json(again.base, `/apps/app_slow/responses/${id}`);
    assert.deepEqual([r.status, r.error?.code], ['failed', 'interrupted'], JSON.stringify(r));
    const items = (await json(again.base, `/apps/app_slow/conversations/${conv}`)).items;
    assert.deepEqual(
      items.map((i: any) => [i.role, i.status]),
      [
        ['user', undefined],
        ['assistant', 'incomplete'],
      ],
      'the one begun response saved once; no spare became a response',
    );
    assert.equal((await fetch(`${again.base}/apps/app_slow/responses/resp_0123456789abcdef01234567`, { headers })).status, 404);
    const now = await spares(dataDir);
    for (const gone of [...leftStream, 'rename-undone.spare', 'torn.spare', 'empty.spare']) assert.ok(!now.includes(gone), gone);
    assert.ok(!(await fs.readdir(running)).includes(`${id}.jsonl`), 'the interrupted response ended and moved on');
    // The next reply streams from a fresh spare and ends as usual.
    const next = await fetch(`${again.base}/apps/app_slow/conversations/${conv}`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ message: { content: 'Again, shorter' }, stream: false }),
    });
    assert.equal(next.status, 200);
    assert.equal(((await next.json()) as any).status, 'completed');
  } finally {
    again.child.kill('SIGTERM');
    await again.exited;
  }
  assert.deepEqual(await spares(dataDir), [], 'a clean stop removes its spares');
});
