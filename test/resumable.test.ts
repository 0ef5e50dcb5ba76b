// Resumable responses (docs/responses.md, D-30…D-39): a reply outlives its connection, is looked up,
// resumed from any event, cancelled, and is saved however it ends (a shutdown, a crash).
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createParser } from 'eventsource-parser';
import { FIXTURES_DIR, KEY, OTHER_TEAM_KEY, startTestServer, tempDir, type TestServer } from './support/helpers.ts';
import { outputFromEvents, postSse, type ParsedEvent } from './support/sse-client.ts';

interface IdEvent extends ParsedEvent {
  id: string | undefined;
}

/** GETs an event stream (the resume endpoint), with each event's `id:`; or the JSON error. */
async function getSse(
  url: string,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
  onEvent?: (e: IdEvent) => void,
): Promise<{ status: number; events: IdEvent[]; text: string; json?: any }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${KEY}`, ...headers }, signal });
  if (!res.headers.get('content-type')?.startsWith('text/event-stream'))
    return { status: res.status, events: [], text: '', json: await res.json() };
  const events: IdEvent[] = [];
  let text = '';
  const parser = createParser({
    onEvent: (e) => {
      const parsed = { event: e.event ?? 'message', data: JSON.parse(e.data), id: e.id };
      events.push(parsed);
      onEvent?.(parsed);
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body!) {
      const s = decoder.decode(chunk as Uint8Array, { stream: true });
      text += s;
      parser.feed(s);
    }
  } catch (err) {
    if (!signal?.aborted) throw err;
  }
  return { status: res.status, events, text };
}

const textOf = (output: any[]) =>
  output
    .filter((i) => i.type === 'message')
    .map((i) => i.content[0].text)
    .join('');
const strip = (e: ParsedEvent) => ({ event: e.event, data: e.data });

describe('resumable responses', () => {
  let s: TestServer;
  before(async () => {
    // Replies still running at the end are interrupted at once rather than waited for.
    s = await startTestServer({ shutdownGraceMs: 0 });
  });
  after(() => s.close());
  const conv = async (app: string) => (await s.call('POST', `/apps/${app}/conversations`, {})).body.id as string;
  const responses = (app: string) => `${s.baseUrl}/apps/${app}/responses`;

  test('D-31: send message names its response in a header, in both modes', async () => {
    const c = await conv('app_stream');
    const json = await s.call('POST', `/apps/app_stream/conversations/${c}`, { message: { content: 'Hello' }, stream: false });
    assert.equal(json.headers.get('parley-response-id'), json.body.id);
    const stream = await postSse(s.baseUrl, `/apps/app_stream/conversations/${c}`, { message: { content: 'Hello again' }, stream: true });
    assert.equal(stream.headers.get('parley-response-id'), stream.events[0]!.data.id);
  });

  test('D-32: a finished stream resumes from every cut point with exactly the unseen events, same payloads and numbers, with id lines', async () => {
    const c = await conv('app_knowledge');
    const first = await postSse(s.baseUrl, `/apps/app_knowledge/conversations/${c}`, {
      message: { content: 'How do refunds work?' },
      stream: true,
    });
    const all = first.events;
    const id = all[0]!.data.id;
    assert.equal(all.at(-1)!.event, 'response.completed');
    // D-35 revised: `response.created`, kept with the begin, is the stream's first event, once, number 0 (and so in every resume below).
    assert.deepEqual(
      all.flatMap((e, i) => (e.event === 'response.created' ? [[i, e.data.sequence_number]] : [])),
      [[0, 0]],
    );
    for (const cut of [-1, 0, 1, Math.floor(all.length / 2), all.length - 2, all.length - 1]) {
      const r = await getSse(`${responses('app_knowledge')}/${id}/events?starting_after=${cut}`);
      assert.equal(r.status, 200);
      assert.deepEqual(r.events.map(strip), all.slice(cut + 1), `after ${cut}`);
      assert.deepEqual(
        r.events.map((e) => e.id),
        all.slice(cut + 1).map((e) => String(e.data.sequence_number)),
      );
    }
    // Last-Event-ID, as an EventSource sends it on reconnecting, wins over the query.
    const viaHeader = await getSse(`${responses('app_knowledge')}/${id}/events?starting_after=0`, { 'last-event-id': '2' });
    assert.deepEqual(viaHeader.events.map(strip), all.slice(3));
    // Each event is the interface's two lines plus its id line.
    assert.match(viaHeader.text, /^id: 3\nevent: [a-z_.]+\ndata: \{.*\}\n\n/);
    const bad = await getSse(`${responses('app_knowledge')}/${id}/events?starting_after=x`);
    assert.deepEqual([bad.status, bad.json.error.code, bad.json.error.param], [400, 'invalid_value', 'starting_after']);
  });

  test('a stream cut mid-reply is resumed from another connection to the same final text, and the reply is saved whole (D-34)', async () => {
    const c = await conv('app_slow');
    const ctrl = new AbortController();
    const seen: ParsedEvent[] = [];
    const cut = await postSse(
      s.baseUrl,
      `/apps/app_slow/conversations/${c}`,
      { message: { content: 'Hello there' } },
      {
        signal: ctrl.signal,
        onEvent: (e) => {
          seen.push(e);
          if (e.event === 'response.output_text.delta') ctrl.abort();
        },
      },
    );
    const id = cut.headers.get('parley-response-id')!;
    const during = await s.call('GET', `/apps/app_slow/responses/${id}`);
    assert.equal(during.status, 200);
    assert.ok(['in_progress', 'completed'].includes(during.body.status));
    const rest = await getSse(`${responses('app_slow')}/${id}/events?starting_after=${seen.at(-1)!.data.sequence_number}`);
    const events = [...seen, ...rest.events.map(strip)];
    assert.deepEqual(
      events.map((e) => e.data.sequence_number),
      events.map((_, i) => i),
      'no gap, no repeat',
    );
    assert.equal(events.at(-1)!.event, 'response.completed');
    const done = await s.call('GET', `/apps/app_slow/responses/${id}`);
    assert.equal(done.body.status, 'completed');
    assert.equal(textOf(done.body.output), textOf(outputFromEvents(events)));
    const history = (await s.call('GET', `/apps/app_slow/conversations/${c}`)).body.items;
    assert.equal(textOf(history.filter((i: any) => i.role === 'assistant')), textOf(done.body.output));
    assert.equal(history.at(-1).status, undefined, 'a completed reply carries no status (D-39)');
  });

  test('a cut before the first event: the header names the response, and a resume from -1 gives every event', async () => {
    const c = await conv('app_slow');
    const ctrl = new AbortController();
    const res = await fetch(`${s.baseUrl}/apps/app_slow/conversations/${c}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: { content: 'Hello there' } }),
      signal: ctrl.signal,
    });
    const id = res.headers.get('parley-response-id')!;
    ctrl.abort();
    const all = await getSse(`${responses('app_slow')}/${id}/events`);
    assert.equal(all.events[0]!.event, 'response.created');
    assert.equal(all.events[0]!.data.id, id);
    assert.equal(all.events.at(-1)!.event, 'response.completed');
  });

  for (const [app, content, at] of [
    ['app_knowledge', 'How do refunds work?', 'response.function_call.start'],
    ['app_genui', 'I would like to book an appointment for Friday', 'response.data_spec'],
  ] as const) {
    test(`a disconnect at ${at} (${app}): the reply runs on, and the resume gives the rest`, async () => {
      const c = await conv(app);
      const ctrl = new AbortController();
      const seen: ParsedEvent[] = [];
      const cut = await postSse(
        s.baseUrl,
        `/apps/${app}/conversations/${c}`,
        { message: { content }, stream: true },
        {
          signal: ctrl.signal,
          onEvent: (e) => {
            if (ctrl.signal.aborted) return;
            seen.push(e);
            if (e.event === at) ctrl.abort();
          },
        },
      );
      assert.equal(seen.at(-1)!.event, at);
      const id = cut.headers.get('parley-response-id')!;
      const rest = await getSse(`${responses(app)}/${id}/events?starting_after=${seen.at(-1)!.data.sequence_number}`);
      const events = [...seen, ...rest.events.map(strip)];
      assert.equal(events.at(-1)!.event, 'response.completed');
      const done = (await s.call('GET', `/apps/${app}/responses/${id}`)).body;
      assert.deepEqual(done.output, outputFromEvents(events));
    });
  }

  test('D-33: a cancel from a third connection ends the reply failed/cancelled, ends every open stream, keeps the partial output', async () => {
    const c = await conv('app_slow');
    const ctrl = new AbortController();
    let id = '';
    let cutAt = -1;
    // The first connection: cut at the first delta.
    await postSse(
      s.baseUrl,
      `/apps/app_slow/conversations/${c}`,
      { message: { content: 'Tell me a long story about the sea' } },
      {
        signal: ctrl.signal,
        onEvent: (e) => {
          if (e.event === 'response.created') id = e.data.id;
          if (e.event === 'response.output_text.delta' && !ctrl.signal.aborted) {
            cutAt = e.data.sequence_number;
            ctrl.abort();
          }
        },
      },
    );
    // The second: a resume that is open when the cancel comes (it has taken an event).
    let resumedOne!: () => void;
    const resuming = new Promise<void>((r) => (resumedOne = r));
    const resume = getSse(`${responses('app_slow')}/${id}/events?starting_after=${cutAt}`, {}, undefined, () => resumedOne());
    await resuming;
    // The third: the cancel.
    const cancelled = await s.call('POST', `/apps/app_slow/responses/${id}/cancel`);
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.status, 'failed');
    assert.deepEqual([cancelled.body.error.type, cancelled.body.error.code], ['request_aborted', 'cancelled']);
    assert.ok(textOf(cancelled.body.output).length > 0, 'the partial output is kept');
    const r = await resume;
    assert.equal(r.events.at(-1)!.event, 'response.failed');
    assert.equal(r.events.at(-1)!.data.error.code, 'cancelled');
    // Read back with its status, in the look-up and in the history (D-39).
    assert.deepEqual((await s.call('GET', `/apps/app_slow/responses/${id}`)).body, cancelled.body);
    const items = (await s.call('GET', `/apps/app_slow/conversations/${c}`)).body.items;
    assert.deepEqual(
      items.map((i: any) => [i.role, i.status]),
      [
        ['user', undefined],
        ['assistant', 'incomplete'],
      ],
    );
    // Cancelling a finished response changes nothing and returns it.
    const again = await s.call('POST', `/apps/app_slow/responses/${id}/cancel`);
    assert.deepEqual(again.body, cancelled.body);
    const done = await s.call('POST', `/apps/app_stream/conversations/${await conv('app_stream')}`, {
      message: { content: 'Hi' },
      stream: false,
    });
    const kept = await s.call('POST', `/apps/app_stream/responses/${done.body.id}/cancel`);
    assert.equal(kept.body.status, 'completed');
  });

  test("404 for an unknown response, another app's and another team's; the key goes in the header only", async () => {
    const c = await conv('app_stream');
    const r = await s.call('POST', `/apps/app_stream/conversations/${c}`, { message: { content: 'Hi' }, stream: false });
    const id = r.body.id;
    for (const [p, key] of [
      [`/apps/app_stream/responses/resp_unknown`, KEY],
      [`/apps/app_demo/responses/${id}`, KEY],
      [`/apps/app_other/responses/${id}`, OTHER_TEAM_KEY],
      [`/apps/app_demo/responses/${id}/events`, KEY],
      [`/apps/app_demo/responses/${id}/cancel`, KEY],
    ] as const) {
      const method = p.endsWith('/cancel') ? 'POST' : 'GET';
      const got = await s.call(method, p, undefined, { key });
      assert.equal(got.status, 404, `${method} ${p}`);
      assert.equal(got.body.error.type, 'not_found');
    }
    // Another team's key does not reach the app at all.
    assert.notEqual((await s.call('GET', `/apps/app_stream/responses/${id}`, undefined, { key: OTHER_TEAM_KEY })).status, 200);
    // No key in a query string: the endpoint asks for the Authorization header.
    const res = await fetch(`${s.baseUrl}/apps/app_stream/responses/${id}?api_key=${KEY}`);
    assert.equal(res.status, 401);
  });

  test('D-37: messages wait in line behind the running reply; past the line, a 409 names it', async () => {
    const c = await conv('app_slow');
    const ctrl = new AbortController();
    let runningId = '';
    await postSse(
      s.baseUrl,
      `/apps/app_slow/conversations/${c}`,
      { message: { content: 'Tell me a long story about the sea' } },
      {
        signal: ctrl.signal,
        onEvent: (e) => {
          runningId = e.data.id;
          ctrl.abort();
        },
      },
    );
    const waiters = Array.from({ length: 8 }, () => new AbortController());
    let full!: () => void;
    const lineFull = new Promise<void>((r) => (full = r));
    const onWaiting = (w: { conversation_id: string; waiting: number }) => w.conversation_id === c && w.waiting === 8 && full();
    s.responses.events.on('waiting', onWaiting);
    const waiting = waiters.map((w) =>
      fetch(`${s.baseUrl}/apps/app_slow/conversations/${c}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: { content: 'And then?' }, stream: false }),
        signal: w.signal,
      }).catch(() => undefined),
    );
    await lineFull;
    s.responses.events.off('waiting', onWaiting);
    const refused = await s.call('POST', `/apps/app_slow/conversations/${c}`, { message: { content: 'One too many' }, stream: false });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, 'conversation_busy');
    assert.equal(refused.headers.get('parley-response-id'), runningId);
    assert.ok(refused.body.error.message.includes(runningId));
    // Clients that leave the line begin nothing.
    for (const w of waiters) w.abort();
    await Promise.all(waiting);
    await s.call('POST', `/apps/app_slow/responses/${runningId}/cancel`);
    const next = await s.call('POST', `/apps/app_slow/conversations/${c}`, { message: { content: 'Hello' }, stream: false });
    assert.equal(next.status, 200);
    const file = await s.store.readHistory(c);
    assert.equal(file.responses.length, 2);
  });
});

describe('resumable responses across a shutdown, a crash and the retention', () => {
  test('D-38: a graceful shutdown saves a running reply failed/interrupted after its grace', async () => {
    const dataDir = await tempDir();
    const s = await startTestServer({ dataDir, shutdownGraceMs: 1 });
    let id = '';
    let c = '';
    try {
      c = (await s.call('POST', '/apps/app_slow/conversations', {})).body.id;
      const ctrl = new AbortController();
      await postSse(
        s.baseUrl,
        `/apps/app_slow/conversations/${c}`,
        { message: { content: 'Tell me a long story about the sea' } },
        {
          signal: ctrl.signal,
          onEvent: (e) => {
            if (e.event === 'response.output_text.delta') ctrl.abort();
            id = e.data.id ?? id;
          },
        },
      );
    } finally {
      await s.close();
    }
    const again = await startTestServer({ dataDir });
    try {
      const r = (await again.call('GET', `/apps/app_slow/responses/${id}`)).body;
      assert.deepEqual([r.status, r.error?.code, r.error?.type], ['failed', 'interrupted', 'server_error']);
      const items = (await again.call('GET', `/apps/app_slow/conversations/${c}`)).body.items;
      assert.equal(items.at(-1).status, 'incomplete');
    } finally {
      await again.close();
    }
  });

  test('D-38: after a crash (the data directory as a kill -9 leaves it), start-up saves the reply interrupted with what it produced', async () => {
    const s = await startTestServer({ shutdownGraceMs: 0 });
    const copy = await tempDir();
    let id = '';
    let c = '';
    try {
      c = (await s.call('POST', '/apps/app_slow/conversations', {})).body.id;
      const ctrl = new AbortController();
      let deltas = 0;
      await postSse(
        s.baseUrl,
        `/apps/app_slow/conversations/${c}`,
        { message: { content: 'Tell me a long story about the sea' } },
        {
          signal: ctrl.signal,
          onEvent: (e) => {
            id = e.data.id ?? id;
            if (e.event === 'response.output_text.delta' && ++deltas === 2) ctrl.abort();
          },
        },
      );
      // The reply is still running: its data as a crash now would leave it.
      await fs.cp(s.dataDir, copy, { recursive: true });
      await fs.rm(path.join(copy, 'LOCK'), { force: true });
    } finally {
      await s.close();
    }
    const after = await startTestServer({ dataDir: copy });
    try {
      const r = (await after.call('GET', `/apps/app_slow/responses/${id}`)).body;
      assert.deepEqual([r.status, r.error?.code], ['failed', 'interrupted']);
      assert.ok(textOf(r.output).length > 0, 'what the events show it produced is kept');
      const conv = (await after.call('GET', `/apps/app_slow/conversations/${c}`)).body;
      assert.deepEqual(
        conv.items.map((i: any) => [i.role, i.status]),
        [
          ['user', undefined],
          ['assistant', 'incomplete'],
        ],
      );
      assert.equal(textOf(conv.items.slice(1)), textOf(r.output));
      const events = await getSse(`${after.baseUrl}/apps/app_slow/responses/${id}/events`);
      assert.equal(events.events.at(-1)!.event, 'response.failed');
      // The conversation takes new messages: nothing is left running.
      assert.equal(
        (await after.call('POST', `/apps/app_slow/conversations/${c}`, { message: { content: 'Hi' }, stream: false })).status,
        200,
      );
    } finally {
      await after.close();
    }
  });

  test('D-36: past the retention, a resume answers 410 response_events_expired; the look-up still answers', async () => {
    const s = await startTestServer({ responseEventsTtlMs: 0 });
    try {
      const c = (await s.call('POST', '/apps/app_stream/conversations', {})).body.id;
      const sent = await s.call('POST', `/apps/app_stream/conversations/${c}`, { message: { content: 'Hello' }, stream: false });
      const r = await getSse(`${s.baseUrl}/apps/app_stream/responses/${sent.body.id}/events`);
      assert.deepEqual([r.status, r.json.error.code, r.json.error.type], [410, 'response_events_expired', 'invalid_request_error']);
      const got = await s.call('GET', `/apps/app_stream/responses/${sent.body.id}`);
      const { usage: _u, ...want } = sent.body;
      const { usage: _g, ...have } = got.body;
      assert.deepEqual(have, want);
    } finally {
      await s.close();
    }
  });

  test("D-34: a reply still running at its app's max_duration_seconds is stopped and saved failed/response_timeout", async () => {
    const fixturesDir = await tempDir();
    await fs.cp(FIXTURES_DIR, fixturesDir, { recursive: true });
    const file = path.join(fixturesDir, 'fixtures.json');
    const fixtures = JSON.parse(await fs.readFile(file, 'utf8'));
    fixtures.apps.find((a: any) => a.id === 'app_slow').responses.max_duration_seconds = 1;
    await fs.writeFile(file, JSON.stringify(fixtures));
    const s = await startTestServer({ fixturesDir });
    try {
      const c = (await s.call('POST', '/apps/app_slow/conversations', {})).body.id;
      // A long story takes app_slow many seconds (150 ms per 6 characters).
      const r = await s.call('POST', `/apps/app_slow/conversations/${c}`, {
        message: { content: 'Tell me a long story about the sea' },
        stream: false,
      });
      assert.equal(r.status, 200);
      assert.deepEqual([r.body.status, r.body.error.type, r.body.error.code], ['failed', 'request_aborted', 'response_timeout']);
      assert.ok(textOf(r.body.output).length > 0, 'what it produced in its time is kept');
      assert.equal((await s.call('GET', `/apps/app_slow/responses/${r.body.id}`)).body.error.code, 'response_timeout');
    } finally {
      await s.close();
    }
  });
});
