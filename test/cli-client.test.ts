// The CLI's typed client against a loopback stand-in for *another* implementation: extensions, odd
// framing, broken streams and error shapes the reference server never produces.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { AbortedError, ApiError, ConnectionError, InvalidResponseError, ParleyClient, TimeoutError } from '../cli/client.ts';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;
let handler: Handler;
let server: http.Server;
let baseUrl: string;
before(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d)).on('end', () => handler(req, res, body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

const KEY = 'sk_live_test_0123456789abcdef0123456789abcdef';
const client = (timeoutMs = 5_000) => new ParleyClient({ baseUrl, apiKey: KEY, appId: 'app_x', timeoutMs });

const created = { id: 'r1', object: 'response', status: 'in_progress', conversation_id: 'c1' };
function sse(res: http.ServerResponse, chunks: string[], opts: { end?: boolean } = {}) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const c of chunks) res.write(c);
  if (opts.end !== false) res.end();
}

describe('client', { concurrency: false }, () => {
  test('a stream with comments, an extension event, extra fields and split UTF-8 parses in order', async () => {
    const text = 'héllo ✓';
    const frame = `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'x', delta: text, output_index: 0, content_index: 0, extra: 1 })}\n\n`;
    const bytes = Buffer.from(frame);
    const cut = bytes.indexOf(Buffer.from('✓')) + 1; // inside the multi-byte character
    handler = (req, res, body) => {
      assert.equal(req.headers.authorization, `Bearer ${KEY}`);
      assert.deepEqual(JSON.parse(body), { message: { content: 'hi' }, stream: true });
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      res.write(`: keep-alive\n\nevent: response.created\ndata: ${JSON.stringify(created)}\n\n`);
      res.write('event: response.vendor_extension\ndata: {"anything":true}\n\n');
      res.write(bytes.subarray(0, cut));
      res.write(bytes.subarray(cut));
      res.end(`event: response.completed\ndata: {"id":"r1","status":"completed"}\n\n`);
    };
    const reply = await client().sendMessage('c1', { message: { content: 'hi' }, stream: true });
    assert.equal(reply.kind, 'stream');
    if (reply.kind !== 'stream') return;
    const events = [];
    for await (const e of reply.stream) events.push(e);
    assert.deepEqual(
      events.map((e) => e.event),
      ['response.created', 'response.output_text.delta', 'response.completed'],
    );
    assert.equal((events[1]!.data as { delta: string }).delta, text);

    const again = await client().sendMessage('c1', { message: { content: 'hi' }, stream: true });
    if (again.kind !== 'stream') return assert.fail('expected a stream');
    const names = [];
    for await (const e of again.stream.all()) names.push(e.event);
    assert.deepEqual(names, ['response.created', 'response.vendor_extension', 'response.output_text.delta', 'response.completed']);
  });

  test('the same call gives a JSON response when the server answers JSON (app default)', async () => {
    const response = {
      id: 'r2',
      object: 'response',
      created_at: 1,
      conversation_id: 'c1',
      output: [],
      status: 'completed',
      vendor: { x: 1 },
    };
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(response));
    };
    const reply = await client().sendMessage('c1', { message: { content: 'hi' } });
    assert.equal(reply.kind, 'response');
    if (reply.kind === 'response') {
      assert.deepEqual(reply.response.data, response);
      assert.equal(reply.response.raw, JSON.stringify(response));
    }
  });

  test('a stream that stops before its last event is a ConnectionError', async () => {
    handler = (_req, res) => sse(res, [`event: response.created\ndata: ${JSON.stringify(created)}\n\n`]);
    const s = await client().streamCompletion({ prompt: 'x' });
    await assert.rejects(async () => {
      for await (const _ of s);
    }, ConnectionError);
  });

  test('a stream that goes silent is a TimeoutError; an aborted one an AbortedError', async () => {
    handler = (_req, res) => sse(res, [`event: response.created\ndata: ${JSON.stringify(created)}\n\n`], { end: false });
    const s = await client(200).streamCompletion({ prompt: 'x' });
    await assert.rejects(async () => {
      for await (const _ of s);
    }, TimeoutError);

    const ac = new AbortController();
    const s2 = await client().streamCompletion({ prompt: 'x' }, { signal: ac.signal });
    await assert.rejects(async () => {
      for await (const _ of s2) ac.abort();
    }, AbortedError);
  });

  test('errors: the error object becomes ApiError; a non-JSON error page keeps its status', async () => {
    handler = (_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
      res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit_exceeded' } }));
    };
    const e = await client()
      .getMetrics()
      .catch((err: unknown) => err);
    assert.ok(e instanceof ApiError);
    assert.deepEqual(
      [e.status, e.type, e.message, e.param, e.code, e.headers['retry-after']],
      [429, 'rate_limit_exceeded', 'slow down', null, null, '7'],
    );

    handler = (_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body>Bad gateway</body></html>');
    };
    const e2 = await client()
      .getConfig()
      .catch((err: unknown) => err);
    assert.ok(e2 instanceof ApiError);
    assert.equal(e2.status, 502);
    assert.match(e2.message, /Bad gateway/);
  });

  test('a 200 the client can use but the interface does not describe is reported through onDeviation, once', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ total_conversations: 'many' }));
    };
    const deviations: string[] = [];
    const c = new ParleyClient({ baseUrl, apiKey: KEY, appId: 'app_x', onDeviation: (m) => deviations.push(m) });
    assert.deepEqual((await c.getMetrics()).data, { total_conversations: 'many' });
    await c.getMetrics();
    assert.equal(deviations.length, 1);
    assert.match(deviations[0]!, /^the answer of GET .*\/apps\/app_x\/metrics does not match the interface: total_conversations: /);
    await c.close();
  });

  test('a response is read with the §2.3 defaults; one without an id is an InvalidResponseError', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'r1', created_at: 1, conversation_id: 'c1' }));
    };
    const reply = await client().sendMessage('c1', { message: { content: 'hi' }, stream: false });
    assert.equal(reply.kind, 'response');
    if (reply.kind === 'response')
      assert.deepEqual([reply.response.data.object, reply.response.data.output, reply.response.data.status], ['response', [], 'completed']);

    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'response', output: [] }));
    };
    await assert.rejects(client().sendMessage('c1', { message: { content: 'hi' }, stream: false }), InvalidResponseError);
  });

  test('listAllConversations follows last_id until has_more is false (D-12)', async () => {
    const conv = (id: string) => ({ id, object: 'conversation', created_at: 1, title: null, generated_title: {} });
    const pages: Record<string, unknown> = {
      '': { object: 'list', data: [conv('a'), conv('b')], first_id: 'a', last_id: 'b', has_more: true },
      b: { object: 'list', data: [conv('c')], first_id: 'c', last_id: 'c', has_more: false },
    };
    const seen: string[] = [];
    handler = (req, res) => {
      const url = new URL(req.url!, 'http://x');
      seen.push(url.search);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(pages[url.searchParams.get('after') ?? '']));
    };
    const ids: string[] = [];
    for await (const page of client().listAllConversations({ limit: 2, order: 'asc' })) ids.push(...page.data.data.map((c) => c.id));
    assert.deepEqual(ids, ['a', 'b', 'c']);
    assert.deepEqual(seen, ['?limit=2&order=asc', '?limit=2&order=asc&after=b']);
  });
});
