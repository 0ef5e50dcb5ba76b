// Abusive stream clients: a cap on open streams per app, many disconnects mid-stream, and a client that
// stops reading (backpressure keeps the server's buffer bounded whatever the stream's length).
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ReferenceErrorBody, type UnsequencedEvent } from '../src/contract/index.ts';
import { streamSse } from '../src/http/sse.ts';
import { MAX_STREAMS_PER_APP } from '../src/http/stream-gate.ts';
import { startTestServer, TARGET, type TestServer } from './support/helpers.ts';
import { walk } from './support/list-walk.ts';
import { postSse } from './support/sse-client.ts';

// The local engine pauses 150 ms per 6-character chunk; app_tethered detaches no reply (D-34's cap is
// 0), so a client that leaves stops its reply as D-19 first said, and each place frees at once.
const SLOW = 'app_tethered';
const CAP = 3;

let s: TestServer;
before(async () => {
  s = await startTestServer({ maxStreamsPerApp: CAP });
});
after(() => s.close());

/**
 * Resolves once `n` responses more have been saved. (`n` calls of `once` would all resolve on the
 * first one: each registers its own listener on the same emit.)
 */
function persistedCount(n: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const on = () => {
      if (++seen < n) return;
      s.responses.events.off('persisted', on);
      resolve();
    };
    s.responses.events.on('persisted', on);
  });
}

/**
 * Opens a stream on `app` and resolves once it answered 200 and sent response.created; anything else
 * (a 429 from the cap, an error) fails the test. `stop()` disconnects.
 */
async function openStream(app: string): Promise<{ stop: () => void; done: Promise<unknown> }> {
  const { body: conv } = await s.call('POST', `/apps/${app}/conversations`, {});
  const ctrl = new AbortController();
  let started!: (event: string) => void;
  const first = new Promise<string>((r) => (started = r));
  const done = postSse(
    s.baseUrl,
    `/apps/${app}/conversations/${conv.id}`,
    { message: { content: 'Tell me a long story about the sea' }, stream: true },
    { signal: ctrl.signal, onEvent: (e) => started(e.event) },
  );
  const opened = await Promise.race([first, done]);
  if (typeof opened !== 'string') assert.fail(`the stream did not open: ${opened.status} ${JSON.stringify(opened.json)}`);
  assert.equal(opened, 'response.created');
  return { stop: () => ctrl.abort(), done };
}

describe('open streams per app', () => {
  test(`the cap (default ${MAX_STREAMS_PER_APP}) gives 429 too_many_streams before anything is saved; other apps are not affected`, async () => {
    const open = await Promise.all(Array.from({ length: CAP }, () => openStream(SLOW)));
    const { body: conv } = await s.call('POST', `/apps/${SLOW}/conversations`, {});
    const refused = await s.call('POST', `/apps/${SLOW}/conversations/${conv.id}`, { message: { content: 'one too many' }, stream: true });
    assert.equal(refused.status, 429);
    ReferenceErrorBody.parse(refused.body);
    assert.deepEqual([refused.body.error.type, refused.body.error.code], ['rate_limit_exceeded', 'too_many_streams']);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.deepEqual((await s.store.readHistory(conv.id)).items, [], 'the refused request saved nothing');
    // JSON answers are not streams; completions streams share the cap.
    assert.equal((await s.call('POST', `/apps/${SLOW}/completions`, { prompt: 'hi', stream: true })).status, 429);
    // Another app streams as usual meanwhile.
    const other = await postSse(s.baseUrl, `/apps/${TARGET.apps.stream_default}/completions`, { prompt: 'Say hello', stream: true });
    assert.equal(other.status, 200);
    assert.equal(other.events.at(-1)?.event, 'response.completed');

    // Closing the streams frees their places.
    const persisted = persistedCount(open.length);
    for (const o of open) o.stop();
    await Promise.all(open.map((o) => o.done));
    await persisted;
    const againSaved = persistedCount(1);
    const again = await openStream(SLOW);
    again.stop();
    await again.done;
    await againSaved;
  });

  test('many clients disconnecting mid-stream: each response is saved as failed, and the server stays responsive', async () => {
    const N = 12;
    const persisted: Array<Promise<unknown>> = [];
    const convs: string[] = [];
    for (let round = 0; round < N / CAP; round++) {
      const batch = await Promise.all(Array.from({ length: CAP }, () => openStream(SLOW)));
      const saved = persistedCount(batch.length);
      for (const b of batch) b.stop();
      await Promise.all(batch.map((b) => b.done));
      persisted.push(saved);
      await saved;
      assert.equal((await s.call('GET', `/apps/${SLOW}/config`)).status, 200);
    }
    await Promise.all(persisted);
    for (const c of await walk(s.store, SLOW)) convs.push(c.id);
    let failed = 0;
    for (const id of convs) {
      for (const r of (await s.store.readHistory(id)).responses) if (r.error?.code === 'client_disconnected') failed++;
    }
    assert.ok(failed >= N, `${failed} responses saved as client_disconnected`);
  });
});

describe('a client that stops reading (backpressure)', () => {
  test('the writer never runs more than one event ahead of a full socket buffer, however long the stream', async () => {
    const EVENTS = 320;
    const CHUNK = 'x'.repeat(64 * 1024); // 320 × 64 KiB = 20 MiB, far more than socket buffers hold
    let pulls = 0;
    let maxBuffered = 0;
    let blocked!: () => void;
    const sawFull = new Promise<void>((r) => (blocked = r));
    const server = http.createServer((_req, res) => {
      const write = res.write.bind(res);
      res.write = ((chunk: string) => {
        const ok = write(chunk);
        if (!ok) blocked();
        return ok;
      }) as typeof res.write;
      async function* events(): AsyncGenerator<UnsequencedEvent> {
        for (let i = 0; i < EVENTS; i++) {
          pulls++;
          maxBuffered = Math.max(maxBuffered, res.writableLength);
          yield { event: 'response.output_text.delta', data: { delta: CHUNK, output_index: 0, content_index: 0 } } as UnsequencedEvent;
        }
      }
      void streamSse(res, events(), { keepAliveMs: 60_000 });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
      socket.pause(); // read nothing
      socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      await sawFull;
      const pulledWhileBlocked = pulls;
      assert.ok(pulledWhileBlocked < EVENTS, 'the producer was held back');
      // Now read everything: the stream completes, every byte arrives.
      let bytes = 0;
      let tail = '';
      await new Promise<void>((r) => {
        socket.on('data', (c: Buffer) => {
          bytes += c.length;
          tail = (tail + c.toString('latin1')).slice(-7);
          if (tail === '\r\n0\r\n\r\n') r(); // the last chunk of the chunked body
        });
        socket.resume();
      });
      socket.destroy();
      assert.equal(pulls, EVENTS);
      assert.ok(bytes > EVENTS * CHUNK.length);
      // What the server held in memory for this socket stayed near one event, not the stream's 20 MiB.
      assert.ok(maxBuffered <= 2 * (CHUNK.length + 200) + 16 * 1024, `buffered up to ${maxBuffered} bytes`);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
