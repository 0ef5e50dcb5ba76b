// D-38 with a real crash: a server process is killed with SIGKILL while a reply streams, then started
// again on the same data directory; the reply is saved `failed`, code `interrupted`, with what it had
// produced, and nothing stays in progress.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { FIXTURES_DIR, KEY, tempDir } from '../support/helpers.ts';
import { listening, replyUnderWay } from '../support/server-process.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

async function spawnServer(dataDir: string): Promise<{ child: ChildProcess; base: string; exited: Promise<number | null> }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/main.ts', '--port', '0', '--data-dir', dataDir, '--fixtures', FIXTURES_DIR, '--log-level', 'warn'],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const { base, exited } = listening(child);
  return { child, base: await base, exited };
}

const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

test('kill -9 during a streamed reply: start-up saves it interrupted with its partial output', { timeout: 60_000 }, async () => {
  const dataDir = await tempDir();
  const first = await spawnServer(dataDir);
  let id = '';
  let conv = '';
  try {
    conv = (
      (await (await fetch(`${first.base}/apps/app_slow/conversations`, { method: 'POST', headers, body: '{}' })).json()) as { id: string }
    ).id;
    const { reader, ...under } = await replyUnderWay(first.base, headers, conv);
    id = under.id;
    first.child.kill('SIGKILL');
    await first.exited;
    await reader.cancel().catch(() => {});
  } finally {
    if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
  }
  const again = await spawnServer(dataDir);
  try {
    const r = (await (await fetch(`${again.base}/apps/app_slow/responses/${id}`, { headers })).json()) as any;
    assert.deepEqual([r.status, r.error?.code], ['failed', 'interrupted']);
    assert.ok(r.output[0].content[0].text.length > 0);
    const items = ((await (await fetch(`${again.base}/apps/app_slow/conversations/${conv}`, { headers })).json()) as any).items;
    assert.deepEqual(
      items.map((i: any) => [i.role, i.status]),
      [
        ['user', undefined],
        ['assistant', 'incomplete'],
      ],
    );
    const events = await (await fetch(`${again.base}/apps/app_slow/responses/${id}/events`, { headers })).text();
    assert.match(events, /event: response\.failed\n.*"code":"interrupted"/);
  } finally {
    again.child.kill('SIGTERM');
    await again.exited;
  }
});
