// The OpenAI-compatible engine (D-143, D-144) against a fake server on loopback speaking the real
// Chat Completions stream: text and tool calls split across chunks, usage, each failure mapped to its
// code, the key sent but never shown, and a stopped reply aborting its upstream request.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OpenAIEngine } from '../src/engines/openai.ts';
import type { ModelEvent } from '../src/engines/types.ts';
import { chunk, refusal, type FakeOpenAI, silent, sse, startFakeOpenAI, textChunks, toolChunks } from './support/fake-openai.ts';
import { startTestServer } from './support/helpers.ts';
import { collect, failure, request } from './support/model-events.ts';
import { postSse, shape, TOOL_THEN_TEXT } from './support/sse-client.ts';

const SECRET = 'sk-test-Zq81nVhS0c4u7LmR2bX9';

let fake: FakeOpenAI;
before(async () => {
  fake = await startFakeOpenAI();
});
after(() => fake.close());

const engine = (o: { apiKey?: string; timeoutMs?: number; baseUrl?: string } = {}) =>
  new OpenAIEngine({ baseUrl: o.baseUrl ?? fake.url, model: 'fake-model', apiKey: o.apiKey, timeoutMs: o.timeoutMs });

describe('OpenAI-compatible engine mapping (D-143)', () => {
  test('content deltas become text, usage is the server’s; the request streams with usage, no retries, no key header without a key', async () => {
    fake.script(sse(textChunks(['Hel', 'lo!'], [26, 9])));
    const events = await collect(engine().generate(request(), new AbortController().signal));
    assert.deepEqual(events, [
      { type: 'text', delta: 'Hel' },
      { type: 'text', delta: 'lo!' },
      { type: 'done', usage: { input_tokens: 26, output_tokens: 9 } },
    ]);
    const seen = fake.requests.at(-1)!;
    assert.equal(seen.path, '/v1/chat/completions');
    assert.deepEqual([seen.body.model, seen.body.stream, seen.body.stream_options], ['fake-model', true, { include_usage: true }]);
    assert.equal(seen.headers.authorization, undefined);
    assert.equal(seen.body.messages[0].role, 'system');
    assert.match(seen.body.messages[0].content, /^You are Librarian\.\n\nAnswer from the knowledge base\./);
    assert.match(seen.body.messages[0].content, /"user_name": "Ada"/);
    assert.deepEqual(
      seen.body.tools.map((t: any) => [t.type, t.function.name]),
      [['function', 'knowledge_search']],
    );
  });

  test('a tool call whose arguments arrive in pieces becomes one call; its result goes back as a tool turn with its id', async () => {
    fake.script(sse(toolChunks('knowledge_search', { query: 'rotate API key' })));
    const events = await collect(engine({ apiKey: SECRET }).generate(request(), new AbortController().signal));
    assert.deepEqual(events, [
      { type: 'tool_call', call: { name: 'knowledge_search', arguments: '{"query":"rotate API key"}' } },
      { type: 'done', usage: { input_tokens: 30, output_tokens: 8 } },
    ]);
    assert.equal(fake.requests.at(-1)!.headers.authorization, `Bearer ${SECRET}`);
    fake.script(sse(textChunks(['Done.'])));
    await collect(
      engine().generate(
        request({
          messages: [
            { role: 'user', content: 'q' },
            { role: 'assistant', content: '', tool_calls: [{ call_id: 'call_1', name: 'knowledge_search', arguments: '{"query":"k"}' }] },
            { role: 'tool', name: 'knowledge_search', call_id: 'call_1', content: '{"results":[]}' },
          ],
        }),
        new AbortController().signal,
      ),
    );
    assert.deepEqual(fake.requests.at(-1)!.body.messages.slice(2), [
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'knowledge_search', arguments: '{"query":"k"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"results":[]}' },
    ]);
  });

  test('without a usage chunk the usage is estimated, never zero', async () => {
    fake.script(sse([chunk.role(), chunk.text('Some answer'), chunk.finish('stop')]));
    const events = await collect(engine().generate(request(), new AbortController().signal));
    const done = events.at(-1) as Extract<ModelEvent, { type: 'done' }>;
    assert.ok(done.usage.input_tokens > 0 && done.usage.output_tokens > 0);
  });

  test('each failure has its code (D-144); the key appears in none of them', async () => {
    const cases: Array<[string, () => void, string, RegExp?]> = [
      ['401', () => fake.script(refusal(401, `Incorrect API key provided: ${SECRET}`)), 'model_unauthorized', /OPENAI_API_KEY/],
      ['404', () => fake.script(refusal(404, `The model fake-model does not exist (${SECRET})`)), 'model_not_found', /fake-model/],
      ['429', () => fake.script(refusal(429, 'Rate limit reached', { 'retry-after': '17' })), 'model_busy', /retry after 17 s/],
      ['500', () => fake.script(refusal(500, 'The server had an error')), 'model_error', /HTTP 500/],
      ['503', () => fake.script(refusal(503, 'overloaded')), 'model_error'],
      [
        'cut',
        () => fake.script(sse([chunk.role(), chunk.text('Part')], { cut: true, gapMs: 5 })),
        'model_error',
        /lost during the generation/,
      ],
      ['no finish', () => fake.script(sse([chunk.role(), chunk.text('Part')], { done: false })), 'model_error', /ended the stream/],
    ];
    for (const [name, arrange, code, message] of cases) {
      arrange();
      const err = await failure(collect(engine({ apiKey: SECRET }).generate(request(), new AbortController().signal)));
      assert.equal(err.code, code, name);
      if (message) assert.match(err.message, message, name);
      assert.ok(!err.message.includes(SECRET), `${name}: the key is not in the message`);
    }
    fake.script(silent);
    const slow = await failure(collect(engine({ timeoutMs: 100 }).generate(request(), new AbortController().signal)));
    assert.equal(slow.code, 'model_timeout');
    const closed = await startFakeOpenAI();
    await closed.close();
    const gone = await failure(collect(engine({ baseUrl: closed.url }).generate(request(), new AbortController().signal)));
    assert.equal(gone.code, 'model_unreachable');
  });

  test('aborting the caller signal ends the upstream request (D-19)', async () => {
    fake.script(sse([chunk.role(), chunk.text('first')], { hang: true }));
    const ctrl = new AbortController();
    const seen: ModelEvent[] = [];
    await assert.rejects(
      (async () => {
        for await (const e of engine().generate(request(), ctrl.signal)) {
          seen.push(e);
          ctrl.abort(new Error('client disconnected'));
        }
      })(),
    );
    assert.deepEqual(seen, [{ type: 'text', delta: 'first' }]);
    await fake.requests.at(-1)!.closed;
  });
});

describe('Parley on an OpenAI-compatible server (PARLEY_MODEL=openai:<model>)', () => {
  test('§6 order: the tool call, then the text; usage from upstream; a cancel aborts the upstream request', async () => {
    const s = await startTestServer({ model: 'openai:fake-model', openaiBaseUrl: fake.url, openaiApiKey: SECRET });
    try {
      fake.script(
        sse(toolChunks('knowledge_search', { query: 'rotate API key' }, [100, 10])),
        sse(textChunks(['Create a new key, ', 'then revoke the old one (api-keys.md).'], [300, 20])),
        sse(textChunks(['{"en-ca":"Key rotation","fr-ca":"Rotation des clés"}'])),
      );
      const { body: conv } = await s.call('POST', '/apps/app_knowledge/conversations', {});
      const r = await postSse(s.baseUrl, `/apps/app_knowledge/conversations/${conv.id}`, {
        message: { content: 'How do I rotate my API key?' },
        stream: true,
      });
      assert.deepEqual(shape(r.events), TOOL_THEN_TEXT);
      assert.equal(
        r.events.find((e) => e.event === 'response.output_text.done')!.data.text,
        'Create a new key, then revoke the old one (api-keys.md).',
      );
      const completed = r.events.at(-1)!.data;
      assert.deepEqual(completed.usage, { input_tokens: 400, output_tokens: 30, total_tokens: 430 });
      const toolTurn = fake.requests.at(-2)!.body.messages.at(-1);
      assert.equal(toolTurn.role, 'tool');
      assert.match(toolTurn.content, /api-keys\.md/);

      // A cancel stops the reply and the request to the model with it.
      fake.script(sse([chunk.role(), chunk.text('Thinking about it')], { hang: true }));
      const before = fake.requests.length;
      let cancel: Promise<unknown> | undefined;
      let id = '';
      const cancelled = await postSse(
        s.baseUrl,
        `/apps/app_knowledge/conversations/${conv.id}`,
        { message: { content: 'And then?' }, stream: true },
        {
          onEvent: (e) => {
            if (e.event === 'response.created') id = e.data.id;
            if (e.event === 'response.output_text.delta' && !cancel) cancel = s.call('POST', `/apps/app_knowledge/responses/${id}/cancel`);
          },
        },
      );
      assert.equal(cancelled.events.at(-1)!.event, 'response.failed');
      assert.equal(cancelled.events.at(-1)!.data.error.code, 'cancelled');
      assert.equal(((await cancel) as { status: number }).status, 200);
      await fake.requests[before]!.closed;
    } finally {
      await s.close();
    }
  });

  test('openai:<model> without OPENAI_BASE_URL stops the start', async () => {
    await assert.rejects(startTestServer({ model: 'openai:fake-model' }), /OPENAI_BASE_URL/);
  });
});
