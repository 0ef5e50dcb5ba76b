// Slow and abusive clients: a stalled header block or body is cut off with 408 and the error object
// (slowloris), and the server keeps answering everyone else meanwhile.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { APP, KEY, startTestServer, type TestServer } from '../support/helpers.ts';
import { postSse } from '../support/sse-client.ts';

let s: TestServer;
before(async () => {
  s = await startTestServer({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
});
after(() => s.close());

/** Opens a socket, writes `sent`, then waits (without writing more) until the server closes it. */
function stall(sent: string): { socket: net.Socket; answer: Promise<string> } {
  const socket = net.connect(s.port, '127.0.0.1');
  socket.write(sent);
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8'))));
  socket.on('error', () => {});
  return { socket, answer };
}

function assert408(answer: string): void {
  assert.match(answer, /^HTTP\/1\.1 408 /);
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
  assert.equal(body.error.code, 'request_timeout');
  assert.equal(body.error.type, 'invalid_request_error');
}

/**
 * Opens a socket, writes `head`, then one byte of `drip` at each timer tick, which the test stops as
 * soon as the server closes the socket: a client that is never quite silent (no idle timeout fires).
 */
function trickle(head: string, drip: (i: number) => string): { answer: Promise<string>; dripped: () => number } {
  const socket = net.connect(s.port, '127.0.0.1');
  socket.on('error', () => {});
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  let i = 0;
  let timer: NodeJS.Timeout | undefined;
  socket.once('connect', () => {
    socket.write(head);
    timer = setInterval(() => socket.write(drip(i++)), 5);
  });
  const answer = new Promise<string>((resolve) =>
    socket.on('close', () => {
      clearInterval(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    }),
  );
  return { answer, dripped: () => i };
}

// Each case waits out a server timeout: they wait together (none creates anything in another's app).
describe('slow clients', { concurrency: true }, () => {
  // The bound turns a server that never cuts the trickle off into a failure rather than a hang.
  test('headers trickled a byte at a time: 408 request_timeout, while another client is served', { timeout: 20_000 }, async () => {
    // A header line that never ends, one byte per tick: each byte is news, but the block never completes.
    const slow = trickle(`GET /v1/apps/${APP}/config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nX-Slow: `, () => 'a');
    assert.equal((await s.call('GET', `/apps/${APP}/config`)).status, 200);
    assert408(await slow.answer);
    assert.ok(slow.dripped() > 0, 'the trickle was under way');
  });

  test('a body trickled a byte at a time: 408, nothing created, while another client is served', { timeout: 20_000 }, async () => {
    const before = (await s.store.appCounters(APP)).conversations;
    const body = `{"title":"${'x'.repeat(100_000)}"}`;
    const slow = trickle(
      `POST /v1/apps/${APP}/conversations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      (i) => body[i] ?? '',
    );
    assert.equal((await s.call('GET', `/apps/${APP}/metrics`)).status, 200);
    assert408(await slow.answer);
    assert.ok(slow.dripped() > 0 && slow.dripped() < body.length, 'cut off mid-body');
    assert.equal((await s.store.appCounters(APP)).conversations, before);
  });

  test('headers that never finish: 408 request_timeout, socket closed (slowloris)', async () => {
    const { answer } = stall(`GET /v1/apps/${APP}/config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nX-Slow: `);
    assert408(await answer);
  });

  test('a body that never finishes: 408, and nothing is created', async () => {
    const before = (await s.store.appCounters(APP)).conversations;
    const { answer } = stall(
      `POST /v1/apps/${APP}/conversations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"title":`,
    );
    assert408(await answer);
    assert.equal((await s.store.appCounters(APP)).conversations, before);
  });

  test('the timeouts bound how long a request takes to arrive, not how long its answer streams', async () => {
    // app_slow pauses 150 ms per chunk: this stream lasts far longer than the 600 ms request timeout.
    const { body: conv } = await s.call('POST', '/apps/app_slow/conversations', {});
    const r = await postSse(s.baseUrl, `/apps/app_slow/conversations/${conv.id}`, { message: { content: 'Hello' }, stream: true });
    assert.equal(r.status, 200);
    // Five chunks or more, 150 ms apart: the stream outlived the request timeout.
    assert.ok(r.events.filter((e) => e.event === 'response.output_text.delta').length >= 5, `${r.events.length} events`);
    assert.equal(r.events.at(-1)!.event, 'response.completed');
  });

  test('fifty stalled sockets do not keep others waiting', async () => {
    const stalled = Array.from({ length: 50 }, () => stall(`GET /v1/apps/${APP}/config HTTP/1.1\r\nHost: x\r\n`));
    // While all fifty hold their sockets open, ordinary requests are served.
    for (let i = 0; i < 5; i++) assert.equal((await s.call('GET', `/apps/${APP}/config`)).status, 200);
    const answers = await Promise.all(stalled.map((x) => x.answer));
    for (const a of answers) assert408(a);
    assert.equal((await s.call('GET', `/apps/${APP}/metrics`)).status, 200);
  });
});
