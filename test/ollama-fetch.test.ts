// The Ollama engine's default fetch (src/engines/ollama-fetch.ts) against a loopback server speaking
// Ollama's NDJSON: lines reach the engine as they are sent, errors map as with WHATWG fetch, and an
// abort ends the upstream request. msw cannot see it (undici's `request`), so a real server it is.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Agent } from 'undici';
import { OllamaEngine } from '../src/engines/ollama.ts';
import { patientFetch } from '../src/engines/ollama-fetch.ts';
import { ModelError, type ModelRequest } from '../src/engines/types.ts';

const line = (content: string, done = false) =>
  `${JSON.stringify({ model: 'm', created_at: '2025-01-01T00:00:00Z', message: { role: 'assistant', content }, done, ...(done ? { prompt_eval_count: 3, eval_count: 2 } : {}) })}\n`;

/** What the handler of the next request does; `closed` resolves when its connection's request ends. */
let handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = () => {};
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c));
  req.on('end', () => {
    (req as http.IncomingMessage & { text?: string }).text = body;
    handler(req, res);
  });
});
let host = '';
before(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  host = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const request = (): ModelRequest => ({
  kind: 'response',
  agentName: 'A',
  instructions: 'Be brief.',
  metadata: {},
  messages: [{ role: 'user', content: 'Hi' }],
  tools: [],
  fast: true,
});

describe('patientFetch (the Ollama engine default)', () => {
  test('each NDJSON line reaches the engine while Ollama is still generating', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let sent = '';
    handler = (req, res) => {
      sent = (req as http.IncomingMessage & { text?: string }).text ?? '';
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(line('Hel'));
      void held.then(() => {
        res.write(line('lo'));
        res.end(line('', true));
      });
    };
    const engine = new OllamaEngine({ host, model: 'm' });
    const it = engine.generate(request(), new AbortController().signal)[Symbol.asyncIterator]();
    // The first delta arrives although the server holds back the rest of the reply.
    assert.deepEqual((await it.next()).value, { type: 'text', delta: 'Hel' });
    assert.equal(JSON.parse(sent).model, 'm');
    assert.equal(JSON.parse(sent).stream, true);
    release();
    const rest = [];
    for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value);
    assert.deepEqual(rest, [
      { type: 'text', delta: 'lo' },
      { type: 'done', usage: { input_tokens: 3, output_tokens: 2 } },
    ]);
  });

  test('Ollama refusing a model is model_not_found; a closed port is model_unreachable', async () => {
    handler = (_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'model "m" not found, try pulling it first' }));
    };
    const engine = new OllamaEngine({ host, model: 'm' });
    const failure = async (e: OllamaEngine) => {
      try {
        for await (const _ of e.generate(request(), new AbortController().signal));
      } catch (err) {
        return err as ModelError;
      }
      assert.fail('expected a failure');
    };
    const notFound = await failure(engine);
    assert.ok(notFound instanceof ModelError);
    assert.equal(notFound.code, 'model_not_found');
    assert.match(notFound.message, /not found, try pulling it first/);

    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const unreachable = await failure(new OllamaEngine({ host: `http://127.0.0.1:${port}`, model: 'm' }));
    assert.equal(unreachable.code, 'model_unreachable');
  });

  test('a connection cut in the middle of the reply fails the generation with model_error, not model_unreachable', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(line('partial'), () => res.socket?.destroy());
    };
    const events: unknown[] = [];
    const err = await (async () => {
      try {
        for await (const e of new OllamaEngine({ host, model: 'm' }).generate(request(), new AbortController().signal)) events.push(e);
      } catch (e) {
        return e as ModelError;
      }
    })();
    assert.deepEqual(events, [{ type: 'text', delta: 'partial' }]);
    assert.ok(err instanceof ModelError);
    // Ollama was reached and answering: not "unreachable, start it with ollama serve".
    assert.equal(err.code, 'model_error');
    assert.match(err.message, /connection to Ollama at http:\/\/127\.0\.0\.1:\d+ was lost during the generation/);
    assert.doesNotMatch(err.message, /ollama serve/);
  });

  test('aborting the signal ends the upstream request at once', async () => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((r) => (upstreamClosed = r));
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(line('one'));
      res.on('close', upstreamClosed);
    };
    const ac = new AbortController();
    const seen: unknown[] = [];
    const reason = new Error('client disconnected');
    const err = await (async () => {
      try {
        for await (const e of new OllamaEngine({ host, model: 'm' }).generate(request(), ac.signal)) {
          seen.push(e);
          ac.abort(reason);
        }
      } catch (e) {
        return e;
      }
    })();
    assert.equal(err, reason);
    assert.deepEqual(seen, [{ type: 'text', delta: 'one' }]);
    await closed;
  });

  test('each request has its own abort: of two concurrent generations on one engine, aborting one leaves the other streaming to the end', async () => {
    const upstream = new Map<string, { res: http.ServerResponse; closed: Promise<void> }>();
    let bothArrived!: () => void;
    const arrived = new Promise<void>((r) => (bothArrived = r));
    handler = (req, res) => {
      const who = JSON.parse((req as http.IncomingMessage & { text?: string }).text ?? '{}').messages.at(-1).content as string;
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(line(`${who}-1`));
      upstream.set(who, { res, closed: new Promise((r) => res.on('close', r)) });
      if (upstream.size === 2) bothArrived();
    };
    const engine = new OllamaEngine({ host, model: 'm' });
    const ask = (who: string) => ({ ...request(), messages: [{ role: 'user' as const, content: who }] });
    const a = new AbortController();
    const itA = engine.generate(ask('A'), a.signal)[Symbol.asyncIterator]();
    const itB = engine.generate(ask('B'), new AbortController().signal)[Symbol.asyncIterator]();
    assert.deepEqual((await itA.next()).value, { type: 'text', delta: 'A-1' });
    assert.deepEqual((await itB.next()).value, { type: 'text', delta: 'B-1' });
    await arrived;

    const reason = new Error('client A disconnected');
    a.abort(reason);
    await assert.rejects(itA.next(), (err) => err === reason);
    await upstream.get('A')!.closed; // A's request to Ollama is gone…
    const b = upstream.get('B')!;
    assert.equal(b.res.destroyed, false, "…and B's is not");
    b.res.write(line('B-2'));
    b.res.end(line('', true));
    const rest = [];
    for (let r = await itB.next(); !r.done; r = await itB.next()) rest.push(r.value);
    assert.deepEqual(rest, [
      { type: 'text', delta: 'B-2' },
      { type: 'done', usage: { input_tokens: 3, output_tokens: 2 } },
    ]);
  });

  // The timeout only bounds a broken build (the generation would then wait for headers forever).
  test('an abort before Ollama has sent its headers cancels the upstream request', { timeout: 30_000 }, async () => {
    let arrived!: () => void;
    const atOllama = new Promise<void>((r) => (arrived = r));
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((r) => (upstreamClosed = r));
    handler = (_req, res) => {
      // Loading the model: no answer yet.
      res.on('close', upstreamClosed);
      arrived();
    };
    const ac = new AbortController();
    const reason = new Error('client disconnected');
    const generation = (async () => {
      for await (const _ of new OllamaEngine({ host, model: 'm' }).generate(request(), ac.signal));
    })();
    await atOllama;
    ac.abort(reason);
    await assert.rejects(generation, (err) => err === reason);
    await closed;
  });

  test('no time limit on the response headers or the body: its connection pool is built with both limits off', async () => {
    const built: Agent.Options[] = [];
    let dispatched = 0;
    const f = patientFetch((options) => {
      built.push(options);
      const agent = new Agent(options);
      const dispatch = agent.dispatch.bind(agent);
      agent.dispatch = (opts, handler) => {
        dispatched++;
        return dispatch(opts, handler);
      };
      return agent;
    });
    // undici's defaults (300 s each) would end a long model load or a long silent think.
    assert.deepEqual(built, [{ headersTimeout: 0, bodyTimeout: 0 }]);
    handler = (_req, res) => res.end('{}');
    // Both paths (undici's request for a string body, its fetch for the rest) use that pool.
    await (await f(`${host}/a`, { method: 'POST', body: '{}' })).text();
    await (await f(`${host}/b`, { method: 'POST', body: new TextEncoder().encode('{}') })).text();
    assert.equal(dispatched, 2);
  });

  test('behaves as fetch for the rest: headers, null-body statuses, other bodies', async () => {
    const f = patientFetch();
    handler = (req, res) => {
      if (req.url === '/empty') {
        res.writeHead(204, { 'x-a': '1' });
        return res.end();
      }
      res.writeHead(200, [
        ['content-type', 'application/json'],
        ['set-cookie', 'a=1'],
        ['set-cookie', 'b=2'],
        ['x-seen', String(req.headers['x-sent'])],
      ]);
      res.end(JSON.stringify({ method: req.method, body: (req as http.IncomingMessage & { text?: string }).text }));
    };
    const r = await f(`${host}/json`, { method: 'POST', body: 'x', headers: new Headers({ 'x-sent': 'yes' }) });
    assert.equal(r.status, 200);
    assert.equal(r.statusText, 'OK');
    assert.equal(r.headers.get('x-seen'), 'yes');
    assert.deepEqual(r.headers.getSetCookie(), ['a=1', 'b=2']);
    assert.deepEqual(await r.json(), { method: 'POST', body: 'x' });
    const empty = await f(new URL(`${host}/empty`));
    assert.equal(empty.status, 204);
    assert.equal(empty.body, null);
    assert.equal(empty.headers.get('x-a'), '1');
    // A body other than a string takes undici's own fetch, with the same result.
    const viaBytes = await f(`${host}/json`, { method: 'POST', body: new TextEncoder().encode('z') });
    assert.deepEqual(await viaBytes.json(), { method: 'POST', body: 'z' });
  });
});
