// The crash window between saving the work and keeping its Idempotency-Key answer is closed: the
// work saves the key's claim in the same step of the store (the same journal record), so a disk
// fault (or a crash) right after the save, which loses the answer, never lets a keyed retry run the
// work again, even after a restart.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { injectDiskFault, type DiskFault } from '../support/faulty-fs.ts';
import { APP, ON_POSTGRES, startTestServer, tempDir, type TestServer } from '../support/helpers.ts';

/** These fault the data directory's files; on PostgreSQL the window is proven in test/proof/pg-shared.test.ts. */
const FILES_ONLY = { skip: ON_POSTGRES && 'the answers are rows on PostgreSQL (test/proof/pg-shared.test.ts)' };

const conv = `/apps/${APP}/conversations`;
const idem = (k: string) => ({ headers: { 'idempotency-key': `"${k}"` } });

/** Every file write fails from the moment `save` has resolved: the answer's segment is never written. */
function faultAfter<A extends unknown[], R>(fault: DiskFault, save: (...a: A) => Promise<R>): (...a: A) => Promise<R> {
  return async (...a) => {
    const r = await save(...a);
    fault.full = true;
    return r;
  };
}

async function segments(dir: string): Promise<string> {
  const d = path.join(dir, 'idempotency');
  const names = await fs.readdir(d).catch(() => [] as string[]);
  return (await Promise.all(names.map((n) => fs.readFile(path.join(d, n), 'utf8')))).join('');
}

/**
 * Runs `first` with a disk fault injected right after the work is saved, restarts on the same data
 * directory (what a crash at that moment leaves: the work, its claim, no answer), then `retry`.
 */
async function acrossTheWindow(
  arm: (s: TestServer, fault: DiskFault) => void,
  first: (s: TestServer) => Promise<void>,
  retry: (s: TestServer) => Promise<void>,
): Promise<void> {
  const dir = await tempDir();
  const fault = await injectDiskFault();
  let s: TestServer | undefined;
  try {
    s = await startTestServer({ dataDir: dir, rateLimiter: { take: () => ({}) } });
    arm(s, fault);
    await first(s);
    assert.ok(fault.refused > 0, 'the fault was met after the save');
    fault.full = false;
    assert.equal(await segments(dir), '', 'the answer never reached the disk');
    await s.close();
    s = await startTestServer({ dataDir: dir, rateLimiter: { take: () => ({}) } });
    await retry(s);
  } finally {
    fault.full = false;
    fault.restore();
    await s?.close();
  }
}

describe('Idempotency-Key: no crash between saving the work and keeping its answer runs the work twice', FILES_ONLY, () => {
  test('send message (JSON): the retry is 409 idempotency_replay_unavailable and the conversation keeps one exchange', async () => {
    let id = '';
    const body = { message: { content: 'What are credits?' } };
    await acrossTheWindow(
      (s, fault) => void (s.store.saveResponse = faultAfter(fault, s.store.saveResponse.bind(s.store))),
      async (s) => {
        id = (await s.call('POST', conv, {})).body.id;
        const r = await s.call('POST', `${conv}/${id}`, body, idem('window-json'));
        assert.equal(r.status, 200, 'the work was saved and answered');
      },
      async (s) => {
        const usage = await s.usage.of(APP);
        const again = await s.call('POST', `${conv}/${id}`, body, idem('window-json'));
        assert.equal(again.status, 409);
        assert.equal(again.body.error.code, 'idempotency_replay_unavailable');
        assert.equal(again.body.error.param, 'Idempotency-Key');
        assert.match(again.body.error.message, /lost in a crash/);
        assert.equal((await s.store.readHistory(id)).responses.length, 1, 'the exchange ran once');
        assert.deepEqual(await s.usage.of(APP), usage, 'no second usage');
        // The key still means that request: another body is 422, as before the crash.
        const other = await s.call('POST', `${conv}/${id}`, { message: { content: 'Something else' } }, idem('window-json'));
        assert.equal(other.status, 422);
      },
    );
  });

  test('send message (stream): the same', async () => {
    let id = '';
    const body = { message: { content: 'Hello there' }, stream: true };
    await acrossTheWindow(
      (s, fault) => void (s.store.saveResponse = faultAfter(fault, s.store.saveResponse.bind(s.store))),
      async (s) => {
        id = (await s.call('POST', conv, {})).body.id;
        const r = await s.call('POST', `${conv}/${id}`, body, idem('window-sse'));
        assert.equal(r.status, 200);
        assert.match(r.body, /event: response\.completed/);
      },
      async (s) => {
        const again = await s.call('POST', `${conv}/${id}`, body, idem('window-sse'));
        assert.equal(again.status, 409);
        assert.equal(again.body.error.code, 'idempotency_replay_unavailable');
        assert.equal((await s.store.readHistory(id)).responses.length, 1);
      },
    );
  });

  test('create conversation: the claim is in the record line itself', async () => {
    await acrossTheWindow(
      (s, fault) => void (s.store.putConversation = faultAfter(fault, s.store.putConversation.bind(s.store))),
      async (s) => assert.equal((await s.call('POST', conv, { title: 'once' }, idem('window-create'))).status, 200),
      async (s) => {
        assert.equal((await s.call('POST', conv, { title: 'once' }, idem('window-create'))).status, 409);
        assert.equal((await s.call('GET', `/apps/${APP}/metrics`)).body.total_conversations, 1);
      },
    );
  });

  test('completion: the claim is in its usage line', async () => {
    const body = { prompt: 'Summarise billing' };
    await acrossTheWindow(
      (s, fault) => void (s.usage.record = faultAfter(fault, s.usage.record.bind(s.usage))),
      async (s) => assert.equal((await s.call('POST', `/apps/${APP}/completions`, body, idem('window-cmpl'))).status, 200),
      async (s) => {
        const usage = await s.usage.of(APP);
        assert.equal((await s.call('POST', `/apps/${APP}/completions`, body, idem('window-cmpl'))).status, 409);
        assert.deepEqual(await s.usage.of(APP), usage, 'the completion did not run again');
      },
    );
  });

  test('the claim honoured at start-up is written to its segment: it outlives the journal that carried it', async () => {
    const dir = await tempDir();
    let s = await startTestServer({ dataDir: dir });
    const fault = await injectDiskFault();
    try {
      s.store.putConversation = faultAfter(fault, s.store.putConversation.bind(s.store));
      assert.equal((await s.call('POST', conv, { title: 'kept' }, idem('window-kept'))).status, 200);
      fault.full = false;
      await s.close();
      s = await startTestServer({ dataDir: dir });
      assert.match(await segments(dir), /"lost":true/);
    } finally {
      fault.full = false;
      fault.restore();
      await s.close();
    }
  });
});

describe('answers kept by the earlier version (the bytes of a stream, `cut` when the client left)', FILES_ONLY, () => {
  test('replay as the same events through the one writer, a cut one ending with response.failed client_disconnected', async () => {
    const { createHash } = await import('node:crypto');
    const { canonicalJson } = await import('../../src/pipeline/idempotency.ts');
    const sha = (x: string) => createHash('sha256').update(x, 'utf8').digest('base64url');
    const dir = await tempDir();
    const urlPath = `${conv}/conv_old`;
    const body = { message: { content: 'An old story' }, stream: true };
    const f = sha(`POST /v1${urlPath}\n${canonicalJson(body)}`);
    const created = {
      type: 'response.created',
      sequence_number: 0,
      id: 'resp_old',
      object: 'response',
      status: 'in_progress',
      conversation_id: 'conv_old',
    };
    const delta = { type: 'response.output_text.delta', sequence_number: 1, delta: 'Once', output_index: 0, content_index: 0 };
    const b = `event: response.created\ndata: ${JSON.stringify(created)}\n\nevent: response.output_text.delta\ndata: ${JSON.stringify(delta)}\n\n`;
    const at = Date.now();
    await fs.mkdir(path.join(dir, 'idempotency'), { recursive: true });
    await fs.writeFile(
      path.join(dir, 'idempotency', `${Math.floor(at / 3_600_000)}.jsonl`),
      `${JSON.stringify({ k: sha(`${APP}\0old-cut`), f, at, kind: 'sse', b, cut: true })}\n`,
    );
    const s = await startTestServer({ dataDir: dir });
    try {
      const r = await s.call('POST', urlPath, body, idem('old-cut'));
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('idempotent-replayed'), 'true');
      assert.ok(r.body.startsWith(b), 'the kept events, byte for byte');
      const failed = {
        type: 'response.failed',
        sequence_number: 2,
        id: 'resp_old',
        status: 'failed',
        error: {
          type: 'request_aborted',
          message: 'The client disconnected before the response was complete.',
          code: 'client_disconnected',
        },
      };
      assert.equal(r.body.slice(b.length), `event: response.failed\ndata: ${JSON.stringify(failed)}\n\n`);
    } finally {
      await s.close();
    }
  });
});
