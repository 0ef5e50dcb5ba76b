// HTTP edges where a request is ambiguous or a connection outlives its answer: two
// Authorization headers, a late 408 after the answer, an Idempotency-Key fingerprint of a
// percent-encoded path, and the history's timestamps under concurrent sends.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { KEY, startTestServer, type TestServer } from './support/helpers.ts';
import { rawRequest } from './support/raw-http.ts';

let s: TestServer;
before(async () => {
  // Started with short timeouts, for node's check of them every 150 ms; then the defaults, but for
  // the tests that wait them out (shortTimeouts): an ordinary request on a loaded machine can pause
  // past 300 ms (one here was answered 408 during a loaded npm test).
  s = await startTestServer({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
  setTimeouts(10_000, 30_000);
});
after(() => s.close());

function setTimeouts(headersMs: number, requestMs: number): void {
  s.http.server.headersTimeout = headersMs;
  s.http.server.requestTimeout = requestMs;
}

/** 300 ms for the headers and 600 ms for the whole request, for the tests of a describe that wait them out. */
function shortTimeouts(): void {
  before(() => setTimeouts(300, 600));
  after(() => setTimeouts(10_000, 30_000));
}

const port = () => new URL(s.baseUrl).port as unknown as number;

describe('two Authorization headers', () => {
  test('are refused with a 400 error object naming the header, whichever comes first, and change nothing', async () => {
    for (const order of [
      [`Bearer ${KEY}`, 'Bearer sk_live_wrong'],
      ['Bearer sk_live_wrong', `Bearer ${KEY}`],
      [`Bearer ${KEY}`, `Bearer ${KEY}`],
    ]) {
      const r = await rawRequest(port(), 'POST', '/v1/apps/app_demo/conversations', {
        headers: { authorization: order, 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(r.status, 400, JSON.stringify(order));
      assert.deepEqual(r.json, {
        error: {
          type: 'invalid_request_error',
          code: 'invalid_value',
          param: 'Authorization',
          message: 'Send the Authorization header once: this request carries several.',
        },
      });
    }
    const list = await s.call('GET', '/apps/app_demo/conversations');
    assert.deepEqual(list.body.data, []);
  });

  test('one Authorization header still works', async () => {
    const r = await rawRequest(port(), 'GET', '/v1/apps/app_demo/config', { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(r.status, 200);
  });
});

describe('nothing is written on a connection after its answer but its close', () => {
  shortTimeouts();

  test('a GET whose chunked body trickles gets its 200, then the connection closes without an unrequested 408', async () => {
    const socket = net.connect(port(), '127.0.0.1');
    await once(socket, 'connect');
    let received = '';
    socket.setEncoding('utf8').on('data', (d: string) => (received += d));
    socket.write(
      `GET /v1/apps/app_demo/config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n`,
    );
    // The body never ends: the server's request timeout (600 ms here) ends the connection.
    await once(socket, 'close');
    const answers = received.match(/HTTP\/1\.1 \d{3}/g) ?? [];
    assert.deepEqual(answers, ['HTTP/1.1 200'], received);
  });

  test('a request whose headers never end still gets its 408 (nothing was answered yet)', async () => {
    const socket = net.connect(port(), '127.0.0.1');
    await once(socket, 'connect');
    let received = '';
    socket.setEncoding('utf8').on('data', (d: string) => (received += d));
    socket.write('GET /v1/apps/app_demo/config HTTP/1.1\r\nHost: x\r\n');
    await once(socket, 'close');
    assert.match(received, /^HTTP\/1\.1 408 /);
    assert.equal(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)).error.code, 'request_timeout');
  });
});

describe('a connection closed with input unread: a lingering close, not a reset', () => {
  shortTimeouts();

  /** The code of the server's next client error on `socket`'s connection (node's request timeout, here). */
  function timeoutOf(socket: net.Socket): Promise<string | undefined> {
    return new Promise((resolve) => {
      const onError = (err: NodeJS.ErrnoException, peer: net.Socket) => {
        if (peer.remotePort !== socket.localPort) return;
        s.http.server.off('clientError', onError);
        resolve(err.code);
      };
      // First, to see the socket before any listener closes it.
      s.http.server.prependListener('clientError', onError);
    });
  }

  /** Sends `body` after the headers, reading nothing until the write is done (or failed). */
  async function sendWhole(head: string, body: Buffer): Promise<{ received: string; writeError?: string; readError?: string }> {
    const socket = net.connect(port(), '127.0.0.1');
    const out: { received: string; writeError?: string; readError?: string } = { received: '' };
    socket.on('error', (e: NodeJS.ErrnoException) => (out.readError ??= e.code));
    await once(socket, 'connect');
    socket.setEncoding('utf8').on('data', (d: string) => (out.received += d));
    socket.pause();
    socket.write(head);
    await new Promise<void>((resolve) =>
      socket.write(body, (err) => {
        if (err) out.writeError = (err as NodeJS.ErrnoException).code;
        resolve();
      }),
    );
    socket.resume();
    socket.end();
    await new Promise((resolve) => socket.on('close', resolve));
    return out;
  }

  /**
   * Sends the headers and `first`, waits for node's request timeout on the socket, then sends `rest`
   * and ends; half open, so that the server's FIN (its answer is out) does not end this side's body early.
   */
  async function sendAcrossTimeout(head: string, first: Buffer, rest: Buffer) {
    const socket = net.connect({ port: port(), host: '127.0.0.1', allowHalfOpen: true });
    const out: { received: string; writeError?: string; readError?: string; timedOut?: string } = { received: '' };
    socket.on('error', (e: NodeJS.ErrnoException) => (out.readError ??= e.code));
    await once(socket, 'connect');
    const timedOut = timeoutOf(socket);
    socket.setEncoding('utf8').on('data', (d: string) => (out.received += d));
    socket.write(head);
    socket.write(first);
    out.timedOut = await timedOut;
    await new Promise<void>((resolve) =>
      socket.write(rest, (err) => {
        if (err) out.writeError = (err as NodeJS.ErrnoException).code;
        resolve();
      }),
    );
    socket.end();
    await once(socket, 'close');
    return out;
  }

  /** A chunked body of `n` chunks of 64 KiB, with its last chunk. */
  function chunkedBody(n: number): Buffer[] {
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const parts: Buffer[] = [];
    for (let i = 0; i < n; i++) parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n'));
    parts.push(Buffer.from('0\r\n\r\n'));
    return parts;
  }

  test('a 413 while the client is still sending: its whole body is taken in, then a clean end with the answer intact', async () => {
    const body = Buffer.alloc(4 * 1024 * 1024, 0x61);
    const r = await sendWhole(
      `POST /v1/apps/app_demo/conversations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      body,
    );
    assert.deepEqual([r.writeError, r.readError], [undefined, undefined], 'no reset');
    assert.match(r.received, /^HTTP\/1\.1 413 /);
    assert.match(r.received, /\r\nconnection: close\r\n/i);
    assert.equal(JSON.parse(r.received.slice(r.received.indexOf('\r\n\r\n') + 4)).error.code, 'body_too_large');
  });

  test("node's request timeout during a linger leaves the connection to the linger: the rest of the body is taken in, no reset", async () => {
    // The server times a request out at 600 ms here, before the linger's 2 s is up: a client still
    // sending the body of its 413 then (a loaded machine is enough) must not be reset.
    const body = Buffer.alloc(2 * 1024 * 1024, 0x61);
    const out = await sendAcrossTimeout(
      `POST /v1/apps/app_demo/conversations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      body.subarray(0, 1024),
      body.subarray(1024),
    );
    assert.equal(out.timedOut, 'ERR_HTTP_REQUEST_TIMEOUT');
    assert.deepEqual([out.writeError, out.readError], [undefined, undefined], 'no reset');
    assert.match(out.received, /^HTTP\/1\.1 413 /);
    assert.equal(JSON.parse(out.received.slice(out.received.indexOf('\r\n\r\n') + 4)).error.code, 'body_too_large');
  });

  test("node's request timeout while an answered request's body still drains: a lingering close, not a reset", async () => {
    // A body no handler reads, of unknown length: drained after the answer up to the cap, then lingered
    // on. The request times out (600 ms here) while it drains, as on a loaded machine.
    const parts = chunkedBody(24);
    const out = await sendAcrossTimeout(
      `GET /v1/apps/app_demo/config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nTransfer-Encoding: chunked\r\n\r\n`,
      parts[0]!,
      Buffer.concat(parts.slice(1)),
    );
    assert.equal(out.timedOut, 'ERR_HTTP_REQUEST_TIMEOUT');
    assert.deepEqual([out.writeError, out.readError], [undefined, undefined], 'no reset');
    assert.match(out.received, /^HTTP\/1\.1 200 /);
  });

  test('a body no handler reads, over the cap and chunked: drained, answered, then closed without a reset', async () => {
    const parts = chunkedBody(40);
    const r = await sendWhole(
      `GET /v1/apps/app_demo/config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nTransfer-Encoding: chunked\r\n\r\n`,
      Buffer.concat(parts),
    );
    assert.deepEqual([r.writeError, r.readError], [undefined, undefined], 'no reset');
    assert.match(r.received, /^HTTP\/1\.1 200 /);
  });
});

describe('Idempotency-Key fingerprint', () => {
  test('a percent-encoded path is the same request as its plain form: replayed, not 422', async () => {
    const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': 'edge-encoded-path-1' };
    const first = await rawRequest(port(), 'POST', '/v1/apps/app_demo/conversations', { headers, body: '{"title":"once"}' });
    assert.equal(first.status, 200);
    const again = await rawRequest(port(), 'POST', '/v1/apps/%61pp_demo/conversations', { headers, body: '{"title":"once"}' });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json.id, first.json.id);
  });
});

describe('§4.3 items sorted chronologically', () => {
  test('an exchange stamped before the last saved one lands with the last time, never going backwards', async () => {
    const c = await s.call('POST', '/apps/app_demo/conversations', {});
    const conv = `/apps/app_demo/conversations/${c.body.id}`;
    assert.equal((await s.call('POST', conv, { message: { content: 'first' }, stream: false })).status, 200);
    const saved: Array<{ created_at: number }> = (await s.call('GET', conv)).body.items;
    const last = saved.at(-1)!.created_at;
    // As when two sends overlap: this one's request started (and was stamped) before the first was saved.
    const early = last - 5;
    const record = await s.store.saveResponse({
      conversationId: c.body.id,
      items: [
        {
          id: 'msg_edge_user',
          type: 'message',
          role: 'user',
          content: [{ type: 'text', text: 'second' }],
          created_at: early,
          response_id: 'resp_edge',
        },
        {
          id: 'msg_edge_reply',
          type: 'message',
          role: 'assistant',
          content: [{ type: 'text', text: 'ok' }],
          created_at: last + 1,
          response_id: 'resp_edge',
        },
      ],
      response: { id: 'resp_edge', created_at: early, status: 'completed', usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } },
      apply: (r) => ({ ...r, message_count: r.message_count + 2 }),
    });
    assert.equal(record.message_count, 4);
    const items: Array<{ id: string; created_at: number }> = (await s.call('GET', conv)).body.items;
    assert.deepEqual(
      items.slice(-2).map((i) => [i.id, i.created_at]),
      [
        ['msg_edge_user', last],
        ['msg_edge_reply', last + 1],
      ],
    );
    for (let i = 1; i < items.length; i++) assert.ok(items[i]!.created_at >= items[i - 1]!.created_at, `item ${i}`);
  });
});
