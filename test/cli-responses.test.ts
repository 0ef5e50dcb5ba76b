// Resumable responses in the CLI (docs/responses.md): `parley responses get|events|cancel`, the typed
// client's three calls, and a stream that resumes by itself when it drops (behind a proxy that cuts it).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ParleyClient, type ClientStreamEvent } from '../cli/client.ts';
import { KEY, startTestServer, type TestServer } from './support/helpers.ts';
import { runCli, serverEnv, startCli, waitFor } from './support/cli-helpers.ts';

/** A proxy that cuts the first stream of send message after `cutAfter` events; everything else passes. */
async function startCuttingProxy(upstream: string, cutAfter: number): Promise<{ baseUrl: string; cuts: number; close(): Promise<void> }> {
  const state = { cuts: 0 };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers[k] = v;
    const up = await fetch(upstream.replace(/\/v1$/, '') + req.url, {
      method: req.method,
      headers,
      body: req.method === 'GET' ? undefined : body,
    });
    const out: Record<string, string> = {};
    up.headers.forEach((v, k) => {
      if (!['content-length', 'transfer-encoding', 'connection'].includes(k)) out[k] = v;
    });
    res.writeHead(up.status, out);
    res.flushHeaders();
    const cut =
      req.method === 'POST' &&
      /\/conversations\/[^/]+$/.test(req.url ?? '') &&
      state.cuts === 0 &&
      (up.headers.get('content-type') ?? '').startsWith('text/event-stream');
    let text = '';
    for await (const c of up.body as unknown as AsyncIterable<Uint8Array>) {
      text += Buffer.from(c).toString();
      if (cut) {
        const blocks = text.split('\n\n');
        if (blocks.length > cutAfter) {
          state.cuts++;
          // Cut once the events before the cut have left.
          res.write(`${blocks.slice(0, cutAfter).join('\n\n')}\n\n`, () => res.socket?.destroy());
          return;
        }
        continue;
      }
      res.write(c);
    }
    if (cut && !res.destroyed) res.write(text);
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    get cuts() {
      return state.cuts;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('resumable responses in the CLI', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  const newConv = async (app: string) => (await s.call('POST', `/apps/${app}/conversations`, {})).body.id as string;

  test('the typed client: a dropped stream resumes by itself, gapless, to the same final text', async () => {
    const proxy = await startCuttingProxy(s.baseUrl, 3);
    const client = new ParleyClient({ baseUrl: proxy.baseUrl, apiKey: KEY, appId: 'app_stream', timeoutMs: 10_000 });
    try {
      const c = await newConv('app_stream');
      const reply = await client.sendMessage(c, { message: { role: 'user', content: 'Tell me about the sea' }, stream: true });
      assert.equal(reply.kind, 'stream');
      if (reply.kind !== 'stream') return;
      const events: ClientStreamEvent[] = [];
      for await (const e of reply.stream) events.push(e);
      assert.equal(proxy.cuts, 1, 'the proxy cut the stream');
      assert.equal(reply.stream.resumes, 1);
      assert.deepEqual(
        events.map((e) => (e.data as { sequence_number: number }).sequence_number),
        events.map((_, i) => i),
      );
      assert.equal(events.at(-1)!.event, 'response.completed');
      const id = reply.stream.responseId!;
      const text = events.flatMap((e) => (e.event === 'response.output_text.delta' ? [e.data.delta] : [])).join('');
      const got = await client.getResponse(id);
      assert.equal(got.data.status, 'completed');
      assert.equal((got.data.output[0] as { content: Array<{ text: string }> }).content[0]!.text, text);
      // The three calls: the events after 2, and a cancel of a finished reply (unchanged).
      const rest: ClientStreamEvent[] = [];
      for await (const e of await client.streamResponseEvents(id, 2)) rest.push(e);
      assert.deepEqual(
        rest.map((e) => e.raw),
        events.slice(3).map((e) => e.raw),
      );
      assert.equal((await client.cancelResponse(id)).data.status, 'completed');
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  test('parley send resumes by itself when its stream drops, and says so on stderr', async () => {
    const proxy = await startCuttingProxy(s.baseUrl, 2);
    try {
      const c = await newConv('app_stream');
      const r = await runCli(['send', c, 'Tell me about the sea', '--stream'], { env: serverEnv(proxy.baseUrl, 'app_stream') });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /the stream dropped; resuming resp_\w+ after event 1/);
      const id = /\[completed (resp_\w+)\]/.exec(r.stderr)![1]!;
      const saved = (await s.call('GET', `/apps/app_stream/responses/${id}`)).body;
      assert.equal(r.stdout.trim(), saved.output[0].content[0].text.trim());
    } finally {
      await proxy.close();
    }
  });

  test('parley send --verbose names the reply as its headers arrive, so that it can be cancelled while it runs', async () => {
    const c = await newConv('app_slow');
    const env = serverEnv(s.baseUrl, 'app_slow');
    const send = startCli(['send', c, 'Tell me everything about rate limits and billing', '--stream', '--verbose'], { env });
    let stderr = '';
    send.stderr.on('data', (d: string) => (stderr += d));
    // The first words of the reply: its id was on stderr before them.
    await waitFor(send.stdout, /\S/);
    const id = /^< parley-response-id: (resp_\w+)$/m.exec(stderr)?.[1];
    assert.ok(id, `no response id before the reply's text:\n${stderr}`);
    assert.match(stderr, /^< 200 .*\n< parley-response-id: /m, 'said with the status line, not at the end');
    const cancel = await runCli(['responses', 'cancel', id], { env });
    assert.equal(cancel.code, 0, cancel.stderr);
    const r = await send.done;
    assert.equal(r.code, 1, 'the reply ended cancelled');
    assert.match(r.stderr, new RegExp(`^error: response ${id} failed: .*\\(code: cancelled\\)$`, 'm'));
  });

  test('parley responses get|events|cancel', async () => {
    const c = await newConv('app_stream');
    const sent = await s.call('POST', `/apps/app_stream/conversations/${c}`, { message: { content: 'Hello' }, stream: false });
    const id = sent.body.id as string;
    const env = serverEnv(s.baseUrl, 'app_stream');
    const got = await runCli(['responses', 'get', id, '--json'], { env });
    assert.equal(got.code, 0, got.stderr);
    assert.equal(JSON.parse(got.stdout).id, id);
    const events = await runCli(['responses', 'events', id, '--starting-after', '1', '--json'], { env });
    assert.equal(events.code, 0, events.stderr);
    const lines = events.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(lines[0].sequence_number, 2);
    assert.equal(lines.at(-1).type, 'response.completed');
    const cancelled = await runCli(['responses', 'cancel', id], { env });
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.match(cancelled.stderr, new RegExp(`\\[completed ${id}\\]`));
    const missing = await runCli(['responses', 'get', 'resp_missing'], { env });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not_found/);
  });
});
