// The real entry point as a process (long tier: it starts servers one after another): the banner,
// exit codes, the access log, and SIGTERM under load.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { describe, test } from 'node:test';
import { APP, KEY, startTestServer, tempDir } from '../support/helpers.ts';
import { postSse } from '../support/sse-client.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Child {
  proc: ChildProcess;
  stdout: string[];
  stderr: string;
  exit: Promise<number | null>;
}

function startMain(args: string[], opts: { env?: Record<string, string>; uid?: number } = {}): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(opts.uid === undefined ? {} : { uid: opts.uid, gid: opts.uid }),
  });
  const child: Child = { proc, stdout: [], stderr: '', exit: once(proc, 'exit').then(([code]) => code as number | null) };
  readline.createInterface({ input: proc.stdout! }).on('line', (l) => child.stdout.push(l));
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (child.stderr += d));
  return child;
}

/** Resolves with the base URL once the banner is out. */
function banner(child: Child): Promise<string> {
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: child.proc.stdout! });
    rl.on('line', (l) => {
      const m = /^Parley listening on (http:\/\/\S+\/v1)$/.exec(l);
      if (m) resolve(m[1]!);
    });
    void child.exit.then((code) => reject(new Error(`exited ${code} before listening: ${child.stderr}`)));
  });
}

describe('npm start (src/main.ts)', () => {
  test('with --port 0 the banner shows the real port, the demo app and key (redacted, D-94); --help prints usage', {
    timeout: 60_000,
  }, async (t) => {
    const child = startMain(['--port', '0', '--data-dir', await tempDir()]);
    // A failed assertion must not leave the server running: the file would then never end.
    t.after(() => child.proc.kill('SIGKILL'));
    const url = await banner(child);
    assert.match(url, /^http:\/\/127\.0\.0\.1:(\d+)\/v1$/);
    assert.notEqual(url, 'http://127.0.0.1:0/v1');
    const r = await fetch(`${url}/apps/${APP}/config`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(r.status, 200);
    await r.text();
    const out = child.stdout.join('\n');
    assert.ok(out.includes(`demo app id:     ${APP}`));
    assert.ok(out.includes(`demo secret key: sk_live_…${KEY.slice(-4)} `), out);
    assert.ok(!out.includes(KEY), 'the whole key is never in the banner');
    // The playground's URL (docs/widget.md), at the server's root.
    assert.ok(out.includes(`widget playground: ${url.replace(/v1$/, '')}`), out);
    child.proc.kill('SIGINT');
    assert.equal(await child.exit, 0);

    const help = startMain(['--help']);
    assert.equal(await help.exit, 0);
    assert.match(help.stdout.join('\n'), /--data-dir <dir>/);
  });

  test('a bad port exits 2 with the reason and the usage', { timeout: 60_000 }, async () => {
    const child = startMain(['--port', '99999']);
    assert.equal(await child.exit, 2);
    assert.match(child.stderr, /^parley: port must be an integer from 0 to 65535 \(got "99999"\)/);
    assert.match(child.stderr, /Usage:/);
    const env = startMain([], { env: { PORT: 'eighty' } });
    assert.equal(await env.exit, 2);
  });

  test('a port in use exits 1 with a one-line reason, and creates no data directory (D-113)', { timeout: 60_000 }, async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    try {
      const port = (blocker.address() as net.AddressInfo).port;
      const dataDir = path.join(await tempDir(), 'data');
      const child = startMain(['--port', String(port), '--data-dir', dataDir]);
      assert.equal(await child.exit, 1);
      assert.match(child.stderr, /^parley: cannot start: .*EADDRINUSE/);
      assert.doesNotMatch(child.stderr, /\n\s+at /, 'no stack trace');
      assert.equal(fsSync.existsSync(dataDir), false, `${dataDir} was created`);
    } finally {
      blocker.close();
    }
  });

  test('a data directory it may not write exits 1 naming the directory', { timeout: 60_000 }, async (t) => {
    const dir = await tempDir();
    const data = path.join(dir, 'data');
    await fs.mkdir(data);
    // Root writes anywhere whatever the mode, so as root the server runs as `nobody` instead,
    // which needs to be able to read the project.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) {
      const probe = spawnSync(
        process.execPath,
        ['-e', `require('fs').accessSync(${JSON.stringify(path.join(ROOT, 'node_modules/tsx/package.json'))})`],
        { uid: 65534, gid: 65534 },
      );
      if (probe.status !== 0) {
        t.skip('running as root and user nobody cannot read the project, so no honest unwritable directory');
        return;
      }
    }
    await fs.chmod(dir, 0o755);
    await fs.chmod(data, 0o555);
    try {
      const child = startMain(['--port', '0', '--data-dir', data], asRoot ? { uid: 65534 } : {});
      assert.equal(await child.exit, 1, child.stderr);
      assert.match(child.stderr, new RegExp(`^parley: cannot start: ${data}: is not writable \\(EACCES\\)`));
    } finally {
      await fs.chmod(data, 0o755);
    }
  });

  test('the access log is written asynchronously yet no line is lost on SIGTERM: one per request, then "stopped"', {
    timeout: 60_000,
  }, async () => {
    const dataDir = await tempDir();
    const child = startMain(['--port', '0', '--data-dir', dataDir], { env: { LOG_LEVEL: 'info' } });
    const stdoutClosed = once(child.proc.stdout!, 'close');
    const url = await banner(child);
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 40 }, async () => {
        const res = await fetch(`${url}/apps/${APP}/conversations?limit=1`, { headers: { authorization: `Bearer ${KEY}` } });
        assert.equal(res.status, 200);
        ids.push(res.headers.get('x-request-id')!);
        await res.arrayBuffer();
      }),
    );
    child.proc.kill('SIGTERM');
    assert.equal(await child.exit, 0, child.stderr);
    await stdoutClosed;
    const lines = child.stdout.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const requests = lines.filter((l) => l.msg === 'request');
    assert.deepEqual(requests.map((l) => l.req_id).sort(), [...ids].sort(), 'one line per request, none lost');
    for (const l of requests) {
      assert.equal(l.status, 200);
      assert.equal(typeof l.ms, 'number');
    }
    assert.equal(lines.at(-1)?.msg, 'stopped', 'the last line, logged just before exit, is flushed too');
  });

  test('SIGTERM during a burst of creates loses none that were answered 200, and exits 0', { timeout: 120_000 }, async () => {
    const dataDir = await tempDir();
    const child = startMain(['--port', '0', '--data-dir', dataDir]);
    const url = await banner(child);
    const answered: string[] = [];
    let signalled = false;
    let refusedAfterSignal = 0;
    let sixty!: () => void;
    const reachedSixty = new Promise<void>((resolve) => (sixty = resolve));
    const worker = async () => {
      for (;;) {
        let res: Response;
        try {
          res = await fetch(`${url}/apps/${APP}/conversations`, {
            method: 'POST',
            headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
            body: JSON.stringify({ title: 'burst' }),
          });
        } catch {
          // The server has gone: that is how the burst ends.
          assert.ok(signalled, 'no failure before SIGTERM');
          return;
        }
        const body = (await res.json()) as { id: string };
        if (res.status !== 200) {
          refusedAfterSignal++;
          continue;
        }
        answered.push(body.id);
        if (answered.length === 60) sixty();
      }
    };
    const burst = Promise.all(Array.from({ length: 8 }, worker));
    await reachedSixty;
    // A request that is certainly under way at SIGTERM: a slow stream (app_slow, 150 ms a chunk) whose
    // first event has arrived, with its ten chunks still to come; the signal is sent then, the burst
    // still running. (Had the stream opened before the burst, a slow burst could outlast it.)
    const slowConv = (
      (await (
        await fetch(`${url}/apps/app_slow/conversations`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body: '{}',
        })
      ).json()) as { id: string }
    ).id;
    let streamOpen!: () => void;
    const opened = new Promise<void>((resolve) => (streamOpen = resolve));
    const slow = postSse(
      url,
      `/apps/app_slow/conversations/${slowConv}`,
      { message: { content: 'thanks' }, stream: true },
      { onEvent: (e) => e.event === 'response.created' && streamOpen() },
    );
    await opened;
    signalled = true;
    child.proc.kill('SIGTERM');
    await burst;
    assert.equal(await child.exit, 0, child.stderr);
    assert.equal(refusedAfterSignal, 0, 'nothing answered with an error');
    assert.ok(answered.length >= 60);
    // The stream under way at SIGTERM was let finish, not cut off.
    const stream = await slow;
    assert.equal(stream.status, 200);
    assert.deepEqual(stream.events.at(-1)?.event, 'response.completed', 'the stream under way at SIGTERM ran to its end');

    const server = await startTestServer({ dataDir });
    try {
      for (const id of answered) assert.equal((await server.store.getConversation(id))?.title, 'burst', `${id} answered 200 and kept`);
      assert.equal((await server.call('GET', `/apps/${APP}/metrics`)).body.total_conversations >= answered.length, true);
    } finally {
      await server.close();
    }
  });
});
