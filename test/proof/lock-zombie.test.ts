// D-25 with a real process: a Parley killed with SIGKILL that is still a zombie does not block a restart
// on its data directory, and while it ran a second start was refused, naming it (test/startup.test.ts
// checks the LOCK's rules in-process).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline';
import { test } from 'node:test';
import { DataFileError } from '../../src/core/errors.ts';
import { procStat } from '../../src/store/file/dir-lock.ts';
import { APP, FIXTURES_DIR, KEY, startTestServer, tempDir } from '../support/helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const LINUX = fsSync.existsSync('/proc/self/stat');

test('a Parley killed with SIGKILL and still a zombie does not block a restart; while it ran, a second one was refused', {
  timeout: 60_000,
}, async (t) => {
  if (!LINUX) return t.skip('needs /proc to see a zombie');
  const dataDir = await tempDir();
  // The server runs in the background of a shell that then becomes `sleep`, which never reaps
  // its children: once killed, the server stays a zombie for as long as the test needs.
  const sh = spawn('sh', ['-c', '"$NODE" --import tsx src/main.ts --port 0 --data-dir "$DIR" --fixtures "$FIX" & exec sleep 120'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE: process.execPath, DIR: dataDir, FIX: FIXTURES_DIR, LOG_LEVEL: 'warn' },
  });
  let stderr = '';
  sh.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      readline.createInterface({ input: sh.stdout! }).on('line', (l) => {
        const m = /^Parley listening on (http:\/\/\S+\/v1)$/.exec(l);
        if (m) resolve(m[1]!);
      });
      sh.once('exit', () => reject(new Error(`exited before listening: ${stderr}`)));
    });
    const created = await fetch(`${url}/apps/${APP}/conversations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: '{"title":"kept"}',
    });
    assert.equal(created.status, 200);
    const { id } = (await created.json()) as { id: string };
    const holder = JSON.parse(await fs.readFile(path.join(dataDir, 'LOCK'), 'utf8')) as { pid: number };
    assert.notEqual(holder.pid, sh.pid, 'the LOCK names the server, not the shell');

    // A second Parley on the directory while the first runs is refused, naming it.
    const err = await startTestServer({ dataDir }).then(
      async (s) => {
        await s.close();
        assert.fail('a second Parley started on a directory in use');
      },
      (e: unknown) => e as Error,
    );
    assert.ok(err instanceof DataFileError);
    assert.match(err.message, new RegExp(`is in use by another Parley process \\(pid ${holder.pid}\\)`));

    process.kill(holder.pid, 'SIGKILL');
    // Waiting for the kernel to finish the kill: the state is read, not guessed from a delay.
    for (let st = procStat(holder.pid); st !== null && st?.state !== 'Z'; st = procStat(holder.pid))
      await new Promise((r) => setTimeout(r, 5));
    const server = await startTestServer({ dataDir });
    try {
      assert.equal(procStat(holder.pid)?.state, 'Z', 'the old process was still a zombie at the restart');
      assert.equal((await server.call('GET', `/apps/${APP}/conversations/${id}`)).body.title, 'kept');
    } finally {
      await server.close();
    }
  } finally {
    try {
      process.kill(-sh.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
});
