// The SSE writer (§6, D-16, D-18) and client disconnects (D-19).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { UnsequencedEvent } from '../src/contract/index.ts';
import { formatSseEvent, sequenced, streamSse } from '../src/http/sse.ts';
import { countTokens, estimateInputTokens } from '../src/engines/text.ts';
import { KEY, startTestServer, type TestServer } from './support/helpers.ts';
import { postSse } from './support/sse-client.ts';

describe('SSE framing', () => {
  test('event line, one data line of compact JSON, blank line', () => {
    const text = formatSseEvent({
      event: 'response.completed',
      data: { type: 'response.completed', sequence_number: 3, id: 'resp_1', status: 'completed' },
    });
    assert.equal(
      text,
      'event: response.completed\ndata: {"type":"response.completed","sequence_number":3,"id":"resp_1","status":"completed"}\n\n',
    );
    // A newline inside text stays escaped inside the one data line.
    const delta = formatSseEvent({
      event: 'response.output_text.delta',
      data: { type: 'response.output_text.delta', sequence_number: 1, delta: 'a\nb\r\n', output_index: 0, content_index: 0 },
    });
    assert.equal(delta.split('\n').length, 4);
  });

  test('sequenced stamps type and a gapless sequence number in order (D-16)', async () => {
    async function* events(): AsyncGenerator<UnsequencedEvent> {
      yield { event: 'response.created', data: { id: 'cmpl_1', object: 'completion', status: 'in_progress' } };
      yield { event: 'response.output_text.delta', data: { delta: 'x', output_index: 0, content_index: 0 } };
      yield { event: 'response.completed', data: { id: 'cmpl_1', status: 'completed' } };
    }
    const out = [];
    for await (const e of sequenced(events())) out.push(e);
    assert.deepEqual(
      out.map((e) => [e.event, e.data.type, e.data.sequence_number]),
      [
        ['response.created', 'response.created', 0],
        ['response.output_text.delta', 'response.output_text.delta', 1],
        ['response.completed', 'response.completed', 2],
      ],
    );
  });

  test('keep-alive comments while the producer is silent, then the events, then the connection ends (D-18)', async () => {
    let release!: () => void;
    const silent = new Promise<void>((r) => (release = r));
    const server = http.createServer((_req, res) => {
      async function* events(): AsyncGenerator<UnsequencedEvent> {
        yield { event: 'response.created', data: { id: 'cmpl_1', object: 'completion', status: 'in_progress' } };
        await silent;
        yield { event: 'response.completed', data: { id: 'cmpl_1', status: 'completed' } };
      }
      void streamSse(res, events(), { keepAliveMs: 5, headers: { 'x-extra': '1' } });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      assert.equal(res.headers.get('x-extra'), '1');
      assert.equal(res.headers.get('cache-control'), 'no-cache');
      let text = '';
      const decoder = new TextDecoder();
      for await (const chunk of res.body!) {
        text += decoder.decode(chunk as Uint8Array, { stream: true });
        // Waits on what the client sees, not on time: release the producer once a comment arrived.
        if (text.includes(': keep-alive\n\n')) release();
      }
      assert.match(text, /^event: response\.created\n.*\n\n(: keep-alive\n\n)+event: response\.completed\n/);
      assert.ok(text.endsWith('"status":"completed"}\n\n'));
    } finally {
      server.close();
    }
  });
});

describe('keep-alive comments through the server (D-18)', () => {
  test('app_slow: `: keep-alive` comments arrive between the events while the model is silent', async () => {
    // app_slow waits 150 ms before each chunk; a 20 ms interval fills each wait with comments.
    const s = await startTestServer({ keepAliveMs: 20 });
    try {
      const { body: conv } = await s.call('POST', '/apps/app_slow/conversations', {});
      const res = await fetch(`${s.baseUrl}/apps/app_slow/conversations/${conv.id}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: { content: 'Hi' } }),
      });
      const text = await res.text();
      // Between two deltas, comments only: `: keep-alive` then a blank line, never inside an event.
      assert.match(text, /event: response\.output_text\.delta\ndata: [^\n]+\n\n(: keep-alive\n\n)+event: response\.output_text\.delta\n/);
      // The events are unchanged by them: the same sequence and numbering as without.
      const events = text.split('\n\n').filter((b) => b.startsWith('event: '));
      assert.deepEqual(
        events.map((b) => JSON.parse(b.split('\n')[1]!.slice(6)).sequence_number),
        events.map((_, i) => i),
      );
      assert.match(events.at(-1)!, /^event: response\.completed\n/);
    } finally {
      await s.close();
    }
  });
});

describe('SSE headers', () => {
  test('a Connection: close set before the stream (a server shutting down) is kept; otherwise keep-alive', async () => {
    const server = http.createServer((req, res) => {
      if (req.url === '/closing') res.setHeader('connection', 'close');
      async function* events(): AsyncGenerator<UnsequencedEvent> {
        yield { event: 'response.completed', data: { id: 'cmpl_1', status: 'completed' } };
      }
      void streamSse(res, events());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    // node:http's client, which shows the Connection header as sent (fetch hides it).
    const connectionOf = (path: string) =>
      new Promise<string | undefined>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.headers.connection));
          })
          .on('error', reject);
      });
    try {
      assert.equal(await connectionOf('/closing'), 'close');
      assert.equal(await connectionOf('/'), 'keep-alive');
    } finally {
      server.close();
    }
  });
});

describe('client disconnect past the cap of detached replies (D-19 as revised by D-34)', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  test('app_tethered (max_detached 0): aborts the model and persists what was generated as failed / client_disconnected', async () => {
    const { body: conv } = await s.call('POST', '/apps/app_tethered/conversations', {});
    const persisted = once(s.responses.events, 'persisted');
    const ctrl = new AbortController();
    const first: string[] = [];
    await postSse(
      s.baseUrl,
      `/apps/app_tethered/conversations/${conv.id}`,
      { message: { content: 'Tell me a long story about the sea' } },
      {
        signal: ctrl.signal,
        onEvent: (e) => {
          if (e.event === 'response.output_text.delta') {
            first.push(e.data.delta);
            ctrl.abort();
          }
        },
      },
    );
    const [info] = await persisted;
    assert.deepEqual([info.conversation_id, info.status], [conv.id, 'failed']);
    const file = await s.store.readHistory(conv.id);
    assert.equal(file.responses.length, 1);
    assert.deepEqual(file.responses[0]!.error, {
      type: 'request_aborted',
      code: 'client_disconnected',
      message: 'The client disconnected before the response was complete.',
    });
    assert.deepEqual(
      file.items.map((i) => (i.type === 'message' ? i.role : i.type)),
      ['user', 'assistant'],
    );
    const kept = (file.items[1] as any).content[0].text as string;
    assert.ok(kept.startsWith(first[0]!));
    // The model stopped: far less than the whole reply was kept (app_slow streams 6 characters a chunk).
    assert.ok(kept.length < 60, `kept ${kept.length} characters`);
    // No `done` came: billed an estimate of the input and of what was generated before the disconnect.
    const input = estimateInputTokens({
      instructions: 'You are a helpful assistant.',
      metadata: {},
      messages: [{ role: 'user', content: 'Tell me a long story about the sea' }],
    });
    assert.deepEqual(file.responses[0]!.usage, {
      input_tokens: input,
      output_tokens: countTokens(kept),
      total_tokens: input + countTokens(kept),
    });
    assert.ok(countTokens(kept) > 0);
    // A failed first exchange gives no title yet (D-8).
    assert.deepEqual((await s.call('GET', `/apps/app_tethered/conversations/${conv.id}`)).body.generated_title, {});
  });
});
