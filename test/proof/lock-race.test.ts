// D-25: servers started together on one data directory: exactly one takes the LOCK, every other is
// refused naming it, even when a stale LOCK (a dead pid) has to be taken over first. Separate
// processes, since a store opened twice in one process takes its own LOCK over.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../support/helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
// Opens the store, says how it went, and holds the LOCK until its stdin closes.
const OPENER = `
import { FileStore } from './src/store/file/file-store.ts';
const store = new FileStore({ dataDir: process.argv[1], warn: () => {} });
try {
  await store.open();
  process.stdout.write('ok\\n');
  process.stdin.resume();
  process.stdin.on('end', async () => { await store.close(); process.exit(0); });
} catch (err) {
  process.stdout.write('refused: ' + err.message + '\\n');
  process.exit(0);
}`;

test('four processes opening one data directory at once: exactly one holds it, the others are refused naming it', {
  timeout: 120_000,
}, async () => {
  for (const stale of [false, true]) {
    for (let round = 0; round < 3; round++) {
      const dir = await tempDir();
      // A LOCK of a process that has exited (its pid free): taken over by exactly one of them.
      if (stale) await fs.writeFile(path.join(dir, 'LOCK'), JSON.stringify({ pid: 2 ** 22 + 1, start: '1', boot: 'gone' }));
      const children = Array.from({ length: 4 }, () =>
        spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', OPENER, dir], {
          cwd: ROOT,
          stdio: ['pipe', 'pipe', 'inherit'],
        }),
      );
      try {
        const said = await Promise.all(
          children.map(
            (c) =>
              new Promise<string>((resolve) => {
                let out = '';
                c.stdout!.on('data', (d: Buffer) => {
                  out += d.toString();
                  if (out.endsWith('\n')) resolve(out.trim());
                });
              }),
          ),
        );
        assert.equal(said.filter((s) => s === 'ok').length, 1, said.join(' | '));
        const holder = children[said.indexOf('ok')]!.pid;
        for (const s of said.filter((x) => x !== 'ok'))
          assert.match(s, new RegExp(`^refused: .*in use by another Parley process \\(pid ${holder}\\)`));
        assert.equal(JSON.parse(await fs.readFile(path.join(dir, 'LOCK'), 'utf8')).pid, holder);
      } finally {
        for (const c of children) c.stdin!.end();
        await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined)));
      }
      await assert.rejects(fs.access(path.join(dir, 'LOCK')), 'the holder removed it on close');
    }
  }
});
