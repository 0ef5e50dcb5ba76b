// D-26: shutdown always ends. The real server process (src/main.ts) with its stdout a pipe that
// nobody reads any more, or whose reader is gone, still exits on SIGTERM; a second SIGTERM ends it
// at once while in-flight work would otherwise hold it for the grace period.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fsSync from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { test } from 'node:test';
import { FIXTURES_DIR, KEY, tempDir } from '../support/helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const HAS_MKFIFO = spawnSync('mkfifo', ['--version']).error === undefined;

/** `signal`: the test's own, so that a test that times out (the bug) kills the server instead of waiting on it. */
function startServer(dataDir: string, stdout: number | 'pipe', signal: AbortSignal): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--port', '0', '--data-dir', dataDir, '--fixtures', FIXTURES_DIR], {
    cwd: ROOT,
    signal,
    killSignal: 'SIGKILL',
    env: { ...process.env, LOG_LEVEL: 'info' },
    stdio: ['ignore', stdout, 'pipe'],
  });
}

function lines(input: NodeJS.ReadableStream, onLine: (l: string) => void): void {
  readline.createInterface({ input }).on('line', onLine);
}

/** Requests whose access-log lines (each with its 7 KB path) overfill a pipe's 64 KiB. */
async function logMuch(url: string): Promise<void> {
  const long = `/apps/app_demo/${'x'.repeat(7_000)}`;
  for (let i = 0; i < 16; i++) {
    const res = await fetch(url + long);
    assert.equal(res.status, 404);
    await res.arrayBuffer();
  }
}

for (const reader of ['stops reading', 'is gone'] as const) {
  test(`SIGTERM ends the server when its stdout is a pipe whose reader ${reader}`, { timeout: 30_000 }, async (t) => {
    if (!HAS_MKFIFO) return t.skip('needs mkfifo');
    const dir = await tempDir();
    const fifo = path.join(dir, 'stdout');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    const nonBlockingRead = fsSync.constants.O_RDONLY | fsSync.constants.O_NONBLOCK;
    // `banner` reads up to the banner; `idle`, if kept, holds the pipe open without ever reading.
    const bannerFd = fsSync.openSync(fifo, nonBlockingRead);
    const idleFd = reader === 'stops reading' ? fsSync.openSync(fifo, nonBlockingRead) : undefined;
    const writeFd = fsSync.openSync(fifo, 'w');
    const child = startServer(path.join(dir, 'data'), writeFd, t.signal);
    fsSync.closeSync(writeFd);
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', () => {}); // the abort of a timed-out test
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    const banner = new net.Socket({ fd: bannerFd, readable: true, writable: false });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        lines(banner, (l) => {
          const m = /^Parley listening on (http:\/\/\S+\/v1)$/.exec(l);
          if (m) resolve(m[1]!);
        });
        void exited.then(() => reject(new Error(`exited before listening: ${stderr}`)));
      });
      banner.destroy();
      await logMuch(url);
      child.kill('SIGTERM');
      const [code, signal] = await exited;
      assert.deepEqual([code, signal], [0, null], `a graceful exit (stderr: ${stderr})`);
    } finally {
      child.kill('SIGKILL');
      banner.destroy();
      if (idleFd !== undefined) fsSync.closeSync(idleFd);
    }
  });
}

test('a second SIGTERM ends the server at once, while a request would hold the first for the grace period', {
  timeout: 30_000,
}, async (t) => {
  const child = startServer(await tempDir(), 'pipe', t.signal);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.on('error', () => {}); // the abort of a timed-out test
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let shuttingDown!: () => void;
  const shutdownLogged = new Promise<void>((resolve) => (shuttingDown = resolve));
  const url = await new Promise<string>((resolve, reject) => {
    lines(child.stdout!, (l) => {
      const m = /^Parley listening on (http:\/\/\S+\/v1)$/.exec(l);
      if (m) resolve(m[1]!);
      if (l.includes('shutting down')) shuttingDown();
    });
    void exited.then(() => reject(new Error(`exited before listening: ${stderr}`)));
  });
  const { port } = new URL(url);
  // A request in flight that never ends: authenticated, so that its handler reads the body, which never
  // arrives in full (without a key it is answered 401 at once, and nothing would hold the first shutdown).
  const socket = net.connect(Number(port), '127.0.0.1');
  try {
    await once(socket, 'connect');
    socket.on('error', () => {});
    // `100 Continue` comes once the server has the request in hand: only then is it surely in flight.
    const continued = new Promise<void>((resolve) =>
      socket.setEncoding('utf8').on('data', (d: string) => d.includes('100 Continue') && resolve()),
    );
    socket.write(
      `POST /v1/apps/app_demo/conversations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n`,
    );
    await continued;
    socket.write('{"ti');
    child.kill('SIGTERM');
    await shutdownLogged;
    child.kill('SIGTERM');
    const [code, signal] = await exited;
    assert.deepEqual([code, signal], [143, null], 'exit 128 + SIGTERM, at once: the first shutdown would have waited for the request');
  } finally {
    socket.destroy();
    child.kill('SIGKILL');
  }
});
