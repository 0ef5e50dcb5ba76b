// A full disk during writes, and a data directory Parley cannot use at start-up.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import { ReferenceErrorBody } from '../../src/contract/index.ts';
import { startupReason } from '../../src/core/errors.ts';
import { APP, FIXTURES_DIR, startTestServer, tempDir, type TestServer } from '../support/helpers.ts';
import { injectDiskFault, type DiskFault } from '../support/faulty-fs.ts';
import { postSse, type SseResult } from '../support/sse-client.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const conv = `/apps/${APP}/conversations`;

async function state(s: TestServer) {
  return {
    list: (await s.call('GET', `${conv}?limit=100`)).body,
    metrics: (await s.call('GET', `/apps/${APP}/metrics`)).body,
  };
}

/** The writes a full disk must refuse; each returns the call's answer. */
function writes(s: TestServer, id: string) {
  return [
    () => s.call('POST', conv, { title: 'during the fault' }),
    () => s.call('PATCH', `${conv}/${id}`, { title: 'renamed during the fault' }),
    () => s.call('DELETE', `${conv}/${id}`),
    // Counted (D-23): here the count itself cannot be written, so the request fails before it starts.
    () => s.call('POST', `${conv}/${id}`, { message: { content: 'Hello during the fault' }, stream: false }),
  ];
}

describe('a full disk (fault injected at the fs layer: every write fails with ENOSPC)', () => {
  test('writes fail with 500 internal_error, reads keep working, and it all recovers when space returns', async () => {
    const fault = await injectDiskFault();
    const s = await startTestServer();
    try {
      const keep = (await s.call('POST', conv, { title: 'before' })).body;
      const before = await state(s);

      fault.full = true;
      for (const w of writes(s, keep.id)) {
        const r = await w();
        assert.equal(r.status, 500, JSON.stringify(r.body));
        ReferenceErrorBody.parse(r.body);
        assert.equal(r.body.error.type, 'internal_error');
        assert.doesNotMatch(r.body.error.message, /ENOSPC|\/tmp|\.jsonl/, 'no internals in the answer');
        assert.match(r.body.error.message, new RegExp(r.headers.get('x-request-id')!));
        // Reads are served meanwhile, and show nothing of the failed write.
        assert.deepEqual(await state(s), before);
        assert.equal((await s.call('GET', `${conv}/${keep.id}`)).body.title, 'before');
      }
      assert.ok(fault.refused >= 3);

      fault.full = false;
      const created = await s.call('POST', conv, { title: 'after' });
      assert.equal(created.status, 200);
      assert.equal((await s.call('PATCH', `${conv}/${keep.id}`, { title: 'renamed after' })).status, 200);
      const now = await state(s);
      assert.equal(now.metrics.total_conversations, before.metrics.total_conversations + 1);

      // What a restart reads back is exactly what was acknowledged.
      await s.close();
      const again = await startTestServer({ dataDir: s.dataDir });
      try {
        assert.deepEqual(await state(again), now);
        assert.equal((await again.call('GET', `${conv}/${keep.id}`)).body.title, 'renamed after');
      } finally {
        await again.close();
      }
    } finally {
      fault.full = false;
      fault.restore();
      await s.close();
    }
  });
});

describe('a full disk when an exchange or a completion is saved (a rate limiter that counts nothing, so the save is the write that fails)', () => {
  let s: TestServer;
  let fault: DiskFault;
  before(async () => {
    fault = await injectDiskFault();
    s = await startTestServer({ rateLimiter: { take: () => ({}) } });
  });
  after(async () => {
    fault.full = false;
    fault.restore();
    await s.close();
  });
  afterEach(() => {
    fault.full = false;
  });

  /** What a failed save must leave untouched: the conversation, its file, the metrics, the usage. */
  async function snapshot(id: string) {
    return {
      conversation: (await s.call('GET', `/apps/app_stream/conversations/${id}`)).body,
      file: await s.store.readHistory(id),
      metrics: (await s.call('GET', '/apps/app_stream/metrics')).body,
      usage: await s.usage.of('app_stream'),
    };
  }

  /** D-5: a 500 with the error object, the request id and no internals. */
  function assertInternal(r: { status: number; headers: Headers; body: any }) {
    assert.equal(r.status, 500, JSON.stringify(r.body));
    ReferenceErrorBody.parse(r.body);
    assert.deepEqual([r.body.error.type, r.body.error.code], ['internal_error', null]);
    assert.match(r.body.error.message, new RegExp(r.headers.get('x-request-id')!));
    assert.doesNotMatch(r.body.error.message, /ENOSPC|\/tmp|\.jsonl/);
  }

  test('send message, JSON: 500 internal_error (D-5, not a 200 failed response), and nothing saved', async () => {
    const { body: c } = await s.call('POST', '/apps/app_stream/conversations', {});
    const before = await snapshot(c.id);
    fault.full = true;
    const r = await s.call('POST', `/apps/app_stream/conversations/${c.id}`, {
      message: { content: 'Hello during the fault' },
      stream: false,
    });
    fault.full = false;
    assertInternal(r);
    assert.ok(fault.refused > 0);
    assert.deepEqual(await snapshot(c.id), before);
  });

  test('send message, stream: the response cannot even be begun (D-35), so a JSON 500 comes before any event; nothing saved', async () => {
    const { body: c } = await s.call('POST', '/apps/app_stream/conversations', {});
    const before = await snapshot(c.id);
    fault.full = true;
    const r = await s.call('POST', `/apps/app_stream/conversations/${c.id}`, {
      message: { content: 'Hello during the fault' },
      stream: true,
    });
    fault.full = false;
    // D-17: what fails before the first event is a plain error object (the stream's own failure after
    // its 200, a save that fails at the end, is proven in test/engine.test.ts).
    assertInternal(r);
    assert.equal(r.headers.get('content-type')?.startsWith('application/json'), true);
    assert.deepEqual(await snapshot(c.id), before);
  });

  test('completion: JSON 500; a stream ends with response.failed that speaks of the completion, not a conversation', async () => {
    const before = await s.usage.of('app_stream');
    fault.full = true;
    const json = await s.call('POST', '/apps/app_stream/completions', { prompt: 'Write a line during the fault' });
    const sse = await postSse(s.baseUrl, '/apps/app_stream/completions', { prompt: 'Write a line during the fault', stream: true });
    fault.full = false;
    assertInternal(json);
    assert.equal(sse.events.at(-1)!.event, 'response.failed');
    const error = sse.events.at(-1)!.data.error;
    assert.deepEqual([error.type, error.code], ['internal_error', 'internal_error']);
    assert.match(error.message, /completion could not be recorded/);
    assert.doesNotMatch(error.message, /conversation/);
    assert.deepEqual(await s.usage.of('app_stream'), before, 'no usage recorded');
  });

  test('an Idempotency-Key retry once space is back runs again and succeeds (a failure to save is not kept)', async () => {
    const { body: c } = await s.call('POST', '/apps/app_stream/conversations', {});
    const send = (stream: boolean, key: string) => {
      const body = { message: { content: `Keyed ${stream ? 'stream' : 'JSON'} message` }, stream };
      const headers = { 'idempotency-key': `"${key}"` };
      return stream
        ? postSse(s.baseUrl, `/apps/app_stream/conversations/${c.id}`, body, { headers })
        : s.call('POST', `/apps/app_stream/conversations/${c.id}`, body, { headers });
    };
    const key = `disk-${c.id}`;
    fault.full = true;
    const first = await send(false, `${key}-json`);
    const firstStream = await send(true, `${key}-sse`);
    fault.full = false;
    assert.equal(first.status, 500);
    // Refused before its first event (D-35: the response is begun in the store first).
    assert.equal((firstStream as SseResult).status, 500);

    const retry = (await send(false, `${key}-json`)) as { status: number; headers: Headers; body: any };
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get('idempotent-replayed'), null, 'ran again, not replayed');
    assert.equal(retry.body.status, 'completed');
    const retryStream = (await send(true, `${key}-sse`)) as SseResult;
    assert.equal(retryStream.headers.get('idempotent-replayed'), null, 'ran again, not replayed');
    assert.equal(retryStream.events.at(-1)!.event, 'response.completed');
    const items = (await s.call('GET', `/apps/app_stream/conversations/${c.id}`)).body.items;
    assert.deepEqual(
      items.map((i: any) => i.response_id),
      [retry.body.id, retry.body.id, retryStream.events[0]!.data.id, retryStream.events[0]!.data.id],
    );
    // From now on the successful answers are the ones kept.
    const replay = (await send(false, `${key}-json`)) as { status: number; headers: Headers; body: any };
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, retry.body);
  });
});

describe('D-94: a full disk while a reply streams (the fault comes after response.created)', () => {
  const stream = (s: TestServer, fault: DiskFault, conversation: string) =>
    postSse(
      s.baseUrl,
      `/apps/app_stream/conversations/${conversation}`,
      { message: { content: 'Tell me about pricing' }, stream: true },
      { onEvent: (e) => e.event === 'response.created' && (fault.full = true) },
    );

  /** What the look-up and the events endpoint say of a response whose save failed: failed, with the stream's error. */
  async function assertToldFailed(s: TestServer, sse: SseResult) {
    const id = sse.events[0]!.data.id as string;
    const told = sse.events.at(-1)!;
    const looked = await s.call('GET', `/apps/app_stream/responses/${id}`);
    assert.equal(looked.status, 200);
    assert.equal(looked.body.status, 'failed', JSON.stringify(looked.body).slice(0, 300));
    assert.deepEqual(looked.body.error, told.data.error);
    const replay = await s.call('GET', `/apps/app_stream/responses/${id}/events`);
    assert.equal(replay.status, 200);
    const last = String(replay.body).trim().split('\n\n').at(-1)!;
    assert.match(last, /^id: (\d+)\nevent: response\.failed\ndata: /);
    const data = JSON.parse(last.split('\ndata: ')[1]!);
    assert.equal(data.sequence_number, told.data.sequence_number, 'numbered as first sent');
    assert.deepEqual(data.error, told.data.error);
  }

  /** The conversation as served: nothing of the exchange the client was told failed. */
  async function assertNotThere(s: TestServer, conversation: string, id: string) {
    const c = (await s.call('GET', `/apps/app_stream/conversations/${conversation}`)).body;
    assert.deepEqual(
      c.items.filter((i: { response_id?: string }) => i.response_id === id),
      [],
      'the exchange the client was told was not saved is not in the history',
    );
    assert.equal(c.items.length, 0);
  }

  for (const when of ['space returns before the restart', 'the disk is still full at the restart'] as const) {
    test(`the look-up and the events endpoint say failed with its code; ${when}: it never appears in the history`, async () => {
      const fault = await injectDiskFault();
      let s = await startTestServer({ rateLimiter: { take: () => ({}) } });
      try {
        const { body: c } = await s.call('POST', '/apps/app_stream/conversations', {});
        const sse = await stream(s, fault, c.id);
        assert.ok(fault.refused > 0, 'the fault was met');
        const told = sse.events.at(-1)!;
        assert.equal(told.event, 'response.failed');
        assert.deepEqual([told.data.error.type, told.data.error.code], ['internal_error', 'internal_error']);
        assert.match(told.data.error.message, /not added to the conversation/);
        const id = sse.events[0]!.data.id as string;
        // While the disk is still full, and once space is back.
        await assertToldFailed(s, sse);
        await assertNotThere(s, c.id, id);
        if (when === 'space returns before the restart') fault.full = false;
        await assertToldFailed(s, sse);
        await s.close();
        fault.full = false;
        s = await startTestServer({ dataDir: s.dataDir, rateLimiter: { take: () => ({}) } });
        await assertNotThere(s, c.id, id);
        const looked = await s.call('GET', `/apps/app_stream/responses/${id}`);
        assert.equal(looked.body.status, 'failed');
        // Its ending reached the disk once space was back: the same answers as before the restart.
        if (when === 'space returns before the restart') await assertToldFailed(s, sse);
        // A new message runs and is saved as usual.
        const next = await s.call('POST', `/apps/app_stream/conversations/${c.id}`, { message: { content: 'Hello again' }, stream: false });
        assert.equal(next.body.status, 'completed');
      } finally {
        fault.full = false;
        fault.restore();
        await s.close();
      }
    });
  }

  test('an exchange whose history line landed but whose journal line failed is taken back: never served, not after a restart either', async () => {
    const fault = await injectDiskFault();
    let s = await startTestServer({ rateLimiter: { take: () => ({}) } });
    try {
      const { body: c } = await s.call('POST', `/apps/${APP}/conversations`, {});
      const journal = path.join(s.dataDir, 'conversations.jsonl');
      // The intent and the history line go through; the journal's next line (the exchange's `done`) fails.
      let historyWritten = false;
      fault.only = (file) => {
        if (file.endsWith(`${c.id}.jsonl`)) historyWritten = true;
        return historyWritten && file === journal;
      };
      fault.full = true;
      const r = await postSse(s.baseUrl, `${conv}/${c.id}`, { message: { content: 'Hello during the fault' }, stream: true });
      fault.full = false;
      fault.only = undefined;
      assert.ok(historyWritten && fault.refused > 0, 'the fault was met after the history line');
      assert.equal(r.events.at(-1)!.event, 'response.failed');
      assert.match(r.events.at(-1)!.data.error.message, /not added to the conversation/);
      const id = r.events[0]!.data.id as string;
      const read = async (server: TestServer) => {
        const got = (await server.call('GET', `${conv}/${c.id}`)).body;
        return { items: got.items.length, metrics: (await server.call('GET', `/apps/${APP}/metrics`)).body.total_messages };
      };
      assert.deepEqual(await read(s), { items: 0, metrics: 0 });
      await s.close();
      s = await startTestServer({ dataDir: s.dataDir, rateLimiter: { take: () => ({}) } });
      assert.deepEqual(await read(s), { items: 0, metrics: 0 }, 'start-up does not settle it as saved');
      const looked = await s.call('GET', `/apps/${APP}/responses/${id}`);
      assert.equal(looked.body.status, 'failed', JSON.stringify(looked.body));
    } finally {
      fault.full = false;
      fault.restore();
      await s.close();
    }
  });
});

describe('D-94: a full disk at start-up names the file that could not be written', () => {
  const cases: Array<[string, (dir: string) => Promise<void>]> = [
    ['LOCK', async () => {}],
    ['widget-secret', async () => {}],
    // A last line that lacks only its newline: start-up writes it.
    [
      'conversations.jsonl',
      async (dir) => {
        const seed = await startTestServer({ dataDir: dir });
        await seed.call('POST', conv, { title: 'kept' });
        await seed.close();
        const file = path.join(dir, 'conversations.jsonl');
        await fs.writeFile(file, (await fs.readFile(file, 'utf8')).trimEnd());
      },
    ],
  ];
  for (const [name, prepare] of cases) {
    test(name, async () => {
      const dir = await tempDir();
      await prepare(dir);
      const fault = await injectDiskFault();
      try {
        fault.only = (file) => file.startsWith(path.join(dir, name));
        fault.full = true;
        const err = await startTestServer({ dataDir: dir }).then(
          (s) => s.close().then(() => assert.fail('started on a full disk')),
          (e: unknown) => e,
        );
        assert.ok(fault.refused > 0, 'the fault was met');
        assert.equal(
          startupReason(err),
          `${path.join(dir, name)}: no space left on the device (ENOSPC); free some space, or choose another --data-dir`,
        );
        // Once space is back, it starts (a failed write left nothing half done behind).
        fault.full = false;
        const s = await startTestServer({ dataDir: dir });
        await s.close();
      } finally {
        fault.full = false;
        fault.restore();
      }
    });
  }
});

describe('a really full disk (a 1 MiB tmpfs; needs root and mount, skipped otherwise)', () => {
  test('writes fail with 500 once the space is gone, nothing unacknowledged survives, and writes resume when space returns', async (t) => {
    const dir = await tempDir('parley-full-');
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' });
    } catch {
      return t.skip('mounting a tmpfs needs root (the fault-injection test above covers the same paths)');
    }
    const data = path.join(dir, 'data');
    let s: TestServer | undefined;
    try {
      s = await startTestServer({ dataDir: data });
      const acked = new Set<string>();
      for (let i = 0; i < 3; i++) acked.add((await s.call('POST', conv, { title: `ok ${i}` })).body.id);
      // Fill the disk; the journal's last page may still hold a few lines, so write until refused.
      await fs
        .writeFile(path.join(dir, 'filler'), Buffer.alloc(2 * 1024 * 1024))
        .catch((err: NodeJS.ErrnoException) => assert.equal(err.code, 'ENOSPC'));
      let refused = 0;
      for (let i = 0; i < 200 && refused === 0; i++) {
        const r = await s.call('POST', conv, { title: `fill ${i}`, metadata: { pad: 'x'.repeat(2_000) } });
        if (r.status === 200) acked.add(r.body.id);
        else {
          assert.equal(r.status, 500);
          assert.equal(r.body.error.type, 'internal_error');
          refused++;
        }
      }
      assert.equal(refused, 1, 'a write was refused once the disk was full');
      const list = await s.call('GET', `${conv}?limit=100`);
      assert.equal(list.status, 200, 'reads are served on a full disk');
      assert.deepEqual(new Set(list.body.data.map((c: { id: string }) => c.id)), acked);

      await fs.rm(path.join(dir, 'filler'));
      const after = await s.call('POST', conv, { title: 'space is back' });
      assert.equal(after.status, 200);
      acked.add(after.body.id);
      await s.close();
      s = await startTestServer({ dataDir: data });
      const again = await s.call('GET', `${conv}?limit=100`);
      assert.deepEqual(
        new Set(again.body.data.map((c: { id: string }) => c.id)),
        acked,
        'a restart reads back exactly what was acknowledged',
      );
    } finally {
      await s?.close();
      execFileSync('umount', [dir], { stdio: 'ignore' });
    }
  });
});

describe('D-94: starting on a really full disk (a 1 MiB tmpfs; needs root and mount, skipped otherwise)', () => {
  test('exit 1, one line naming the file that could not be written and why', async (t) => {
    const dir = await tempDir('parley-full-');
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' });
    } catch {
      return t.skip('mounting a tmpfs needs root (the fault-injection tests above name each file)');
    }
    try {
      const data = path.join(dir, 'data');
      const s = await startTestServer({ dataDir: data });
      await s.call('POST', conv, { title: 'before the disk filled' });
      await s.close();
      await fs
        .writeFile(path.join(dir, 'filler'), Buffer.alloc(2 * 1024 * 1024))
        .catch((err: NodeJS.ErrnoException) => assert.equal(err.code, 'ENOSPC'));
      const r = await start(data);
      assert.equal(r.code, 1, r.stdout);
      assert.equal(
        r.stderr,
        `parley: cannot start: ${path.join(data, 'LOCK')}: no space left on the device (ENOSPC); free some space, or choose another --data-dir\n`,
      );
    } finally {
      execFileSync('umount', [dir], { stdio: 'ignore' });
    }
  });
});

/** Runs the real entry point and returns its exit code and stderr. */
function start(dataDir: string): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/main.ts', '--port', '0', '--data-dir', dataDir, '--fixtures', FIXTURES_DIR, '--log-level', 'warn'],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
      if (stdout.includes('listening')) child.kill('SIGTERM'); // it started: not what these tests expect
    });
    child.on('exit', (code) => resolve({ code, stderr, stdout }));
  });
}

/** A directory writes really fail in: permission bits for an ordinary user, a read-only tmpfs for root. */
async function readOnlyDir(): Promise<{ dir: string; cleanup: () => Promise<void> } | string> {
  const dir = await tempDir('parley-ro-');
  if (process.getuid?.() !== 0) {
    await fs.chmod(dir, 0o555);
    return { dir, cleanup: () => fs.chmod(dir, 0o755) };
  }
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=64k', 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    return 'running as root without permission to mount a read-only tmpfs';
  }
  return {
    dir,
    cleanup: async () => {
      execFileSync('umount', [dir], { stdio: 'ignore' });
    },
  };
}

describe('a data directory that cannot be used at start-up: a clear message and a non-zero exit', () => {
  test('read-only', async (t) => {
    const ro = await readOnlyDir();
    if (typeof ro === 'string') return t.skip(ro);
    try {
      const r = await start(ro.dir);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^parley: cannot start: .* is not writable \((EROFS|EACCES)\)/);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    } finally {
      await ro.cleanup();
    }
  });

  test('missing (its parent folder does not exist either)', async () => {
    const r = await start(path.join(await tempDir(), 'no', 'such', 'dir'));
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^parley: cannot start: .*no\/such\/dir: does not exist, nor does its parent folder/);
  });

  test('a file where the directory should be', async () => {
    const file = path.join(await tempDir(), 'data');
    await fs.writeFile(file, 'not a directory');
    const r = await start(file);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /is not a directory/);
  });

  test('a missing data directory whose parent exists is created (npm start on a fresh checkout)', async () => {
    const dir = path.join(await tempDir(), 'data');
    const r = await start(dir);
    assert.match(r.stdout, /listening on/);
    assert.ok((await fs.stat(dir)).isDirectory());
  });
});
