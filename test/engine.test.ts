// The embedded engine, engine selection, the runner's edge cases, and SSE backpressure.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, test } from 'node:test';
import { loadConfig, normalizeOllamaHost } from '../src/config.ts';
import { writeSseEvent } from '../src/http/sse.ts';
import { loadForms } from '../src/engines/forms.ts';
import { createEngine, ModelSpecError, parseModelSpec } from '../src/engines/index.ts';
import { loadKnowledgeBases, parseDocument } from '../src/engines/knowledge.ts';
import { LocalEngine } from '../src/engines/local.ts';
import { OllamaEngine } from '../src/engines/ollama.ts';
import type { ModelEngine, ModelEvent, ModelRequest } from '../src/engines/types.ts';
import { ResponseRun } from '../src/services/send/response-runner.ts';
import { knowledgeSearchSpec, runTool } from '../src/services/tools.ts';
import type { AppT } from '../src/core/tenants.ts';
import { FIXTURES_DIR, startTestServer } from './support/helpers.ts';

const forms = await loadForms(FIXTURES_DIR, ['contact', 'booking', 'feedback']);

function req(content: string, over: Partial<ModelRequest> = {}): ModelRequest {
  return {
    kind: 'response',
    agentName: 'Tester',
    instructions: '',
    metadata: {},
    messages: [{ role: 'user', content }],
    tools: [],
    fast: false,
    ...over,
  };
}

async function collect(it: AsyncIterable<ModelEvent>): Promise<ModelEvent[]> {
  const out: ModelEvent[] = [];
  for await (const e of it) out.push(e);
  return out;
}

describe('embedded engine', () => {
  test('deterministic: the same input gives the same events', async () => {
    const e = new LocalEngine({ forms });
    const r = req('Recommend a good book about sailing', { metadata: { user_name: 'Ada' } });
    const a = await collect(e.generate(r, new AbortController().signal));
    const b = await collect(e.generate(r, new AbortController().signal));
    assert.deepEqual(a, b);
    assert.deepEqual(a.at(-1)!.type, 'done');
  });

  test('user_name greets the first reply of a conversation only, whether or not a tool ran first', async () => {
    const e = new LocalEngine({ forms });
    const text = async (r: ModelRequest) =>
      (await collect(e.generate(r, new AbortController().signal))).flatMap((x) => (x.type === 'text' ? [x.delta] : [])).join('');
    const metadata = { user_name: 'Ada' };
    assert.match(await text(req('Recommend a good book about sailing', { metadata })), /^Hi Ada! /);
    const later = [
      { role: 'user' as const, content: 'Recommend a good book about sailing' },
      { role: 'assistant' as const, content: 'You asked about recommend, good, book.' },
      { role: 'user' as const, content: 'And one about the sea?' },
    ];
    assert.match(await text(req('', { metadata, messages: later })), /^You asked about/);
    // After a knowledge_search turn, the answer greets only on the first reply too.
    const tool = (history: ModelRequest['messages']) => [
      ...history,
      {
        role: 'assistant' as const,
        content: '',
        tool_calls: [{ call_id: 'call_1', name: 'knowledge_search' as const, arguments: '{"query":"x"}' }],
      },
      { role: 'tool' as const, name: 'knowledge_search', call_id: 'call_1', content: '{"query":"x","results":[]}' },
    ];
    assert.match(await text(req('', { metadata, messages: tool([{ role: 'user', content: 'x?' }]) })), /^Hi Ada! I found nothing/);
    assert.match(await text(req('', { metadata, messages: tool(later) })), /^I found nothing/);
  });

  test('chunk_chars splits text into fixed-size deltas (by characters, not UTF-16 units)', async () => {
    const e = new LocalEngine({ forms, testing: { chunk_chars: 4 } });
    const events = await collect(e.generate(req('hello 😀😀'), new AbortController().signal));
    const deltas = events.flatMap((x) => (x.type === 'text' ? [x.delta] : []));
    assert.ok(deltas.slice(0, -1).every((d) => Array.from(d).length === 4));
    assert.match(deltas.join(''), /^Hello! I'm Tester\./);
  });

  test('thanks and completions get their own answers', async () => {
    const e = new LocalEngine({ forms });
    const thanks = await collect(e.generate(req('Thanks a lot'), new AbortController().signal));
    assert.match((thanks[0] as any).delta + (thanks[1] as any).delta, /^You're welcome/);
    const draft = await collect(
      e.generate(req('Write a short welcome note for new hikers', { kind: 'completion' }), new AbortController().signal),
    );
    const text = draft.flatMap((x) => (x.type === 'text' ? [x.delta] : [])).join('');
    // A writing request is written, not searched for (test/engine-intents.test.ts has the paraphrases).
    assert.match(text, /^Here is a suggestion: “Welcome aboard!/);
    const other = await collect(
      e.generate(req('Summarise the history of sailing ships', { kind: 'completion' }), new AbortController().signal),
    );
    assert.match(
      other.flatMap((x) => (x.type === 'text' ? [x.delta] : [])).join(''),
      /^Here is a short draft about history, sailing, ships\./,
    );
  });

  test('titles: greeting, keywords, empty', async () => {
    const e = new LocalEngine({ forms });
    assert.deepEqual(await e.title({ firstMessage: 'Hello!', reply: '' }), { 'en-ca': 'Greetings', 'fr-ca': 'Salutations' });
    assert.deepEqual(await e.title({ firstMessage: '?!', reply: '' }), { 'en-ca': 'New conversation', 'fr-ca': 'Nouvelle conversation' });
    assert.deepEqual(await e.title({ firstMessage: 'I want to give feedback', reply: '' }), {
      'en-ca': 'Share your feedback',
      'fr-ca': 'Donnez votre avis',
    });
  });

  test('an aborted signal stops it at once', async () => {
    const ctrl = new AbortController();
    ctrl.abort();
    await assert.rejects(collect(new LocalEngine({ forms }).generate(req('Hi'), ctrl.signal)));
  });
});

describe('engine selection', () => {
  const OLLAMA = 'http://127.0.0.1:11434';
  const app = (model: string, testing?: unknown) => ({ id: 'app_x', agent: { model, forms: [], testing } }) as unknown as AppT;

  test('local, ollama:<model>, PARLEY_MODEL override, mistakes', () => {
    assert.deepEqual(parseModelSpec('ollama:qwen3:4b'), { kind: 'ollama', model: 'qwen3:4b' });
    assert.throws(() => parseModelSpec('gpt-4'), ModelSpecError);
    assert.throws(() => parseModelSpec('ollama:'), ModelSpecError);
    assert.deepEqual(parseModelSpec('openai:qwen3'), { kind: 'openai', model: 'qwen3' });
    // D-143: no default address for an OpenAI-compatible server.
    assert.throws(() => createEngine(app('openai:qwen3'), { forms, ollamaHost: OLLAMA }), /needs OPENAI_BASE_URL/);
    assert.ok(createEngine(app('local'), { forms, ollamaHost: OLLAMA }) instanceof LocalEngine);
    const o = createEngine(app('local'), { forms, override: 'ollama:llama3.2', ollamaHost: OLLAMA });
    assert.ok(o instanceof OllamaEngine);
    assert.equal(o.id, 'ollama:llama3.2');
    assert.throws(() => createEngine(app('local', { latency_ms: -1 }), { forms, ollamaHost: OLLAMA }), /agent\.testing\.latency_ms/);
  });

  test('a bad model in the fixtures stops start-up with a clear message', async () => {
    await assert.rejects(startTestServer({ model: 'nonsense' }), /model must be "local", "ollama:<model>" or "openai:<model>"/);
  });

  test('PARLEY_MODEL and OLLAMA_HOST from the environment', () => {
    const c = loadConfig([], { PARLEY_MODEL: 'ollama:qwen3', OLLAMA_HOST: 'gpu-box' });
    assert.deepEqual([c.model, c.ollamaHost], ['ollama:qwen3', 'http://gpu-box:11434']);
    assert.deepEqual([loadConfig([], {}).model, loadConfig([], {}).ollamaHost], [null, 'http://127.0.0.1:11434']);
    assert.equal(normalizeOllamaHost('https://ollama.example.com'), 'https://ollama.example.com');
    assert.equal(normalizeOllamaHost('http://10.0.0.2:8080/'), 'http://10.0.0.2:8080');
  });
});

describe('knowledge base', () => {
  test('front matter, title and one passage per section', () => {
    const { doc, sections } = parseDocument(
      'x.md',
      '---\ntitle: Refunds\ntitle_fr: Remboursements\n---\nIntro text.\n\n## Delays\nFive days.\n',
    );
    assert.deepEqual(doc, { file: 'x.md', title: 'Refunds', title_fr: 'Remboursements' });
    assert.deepEqual(sections, [
      { heading: 'Refunds', text: 'Intro text.' },
      { heading: 'Delays', text: 'Five days.' },
    ]);
  });

  test('BM25 search ranks the right document first; stop words alone match nothing', async () => {
    const kb = (await loadKnowledgeBases(FIXTURES_DIR, ['demo'])).get('demo')!;
    assert.equal(kb.search('publishable key widget')[0]!.document, 'api-keys.md');
    assert.equal(kb.search('how long are conversations kept')[0]!.document, 'data-retention.md');
    assert.deepEqual(kb.search('what is it about'), []);
    await assert.rejects(loadKnowledgeBases(FIXTURES_DIR, ['missing']), /knowledge base "missing" cannot be read/);
  });

  test('tool calls with bad arguments get an error the model can read', () => {
    const box = { specs: [knowledgeSearchSpec()], knowledge: undefined, forms: new Map() };
    assert.match(runTool(box, 'render_form', '{}').content, /no tool named render_form/);
    assert.match(runTool(box, 'knowledge_search', '[1]').content, /must be a JSON object/);
    assert.match(runTool(box, 'knowledge_search', '{"query":" "}').content, /non-empty/);
    assert.deepEqual(JSON.parse(runTool(box, 'knowledge_search', '{"query":"x"}').content), { query: 'x', results: [] });
  });
});

describe('response runner', () => {
  const fake = (events: ModelEvent[]): ModelEngine => ({
    id: 'fake',
    async *generate() {
      yield* events;
    },
    async title() {
      return { 'en-ca': 'x', 'fr-ca': 'x' };
    },
  });
  const run = (engine: ModelEngine, kind: 'response' | 'completion', onUnexpected?: (e: unknown) => void, finish = async () => {}) =>
    new ResponseRun({
      id: 'resp_1',
      kind,
      conversationId: 'conv_1',
      engine,
      request: req('Hi'),
      tools: { specs: [], knowledge: undefined, forms: new Map() },
      signal: new AbortController().signal,
      finish,
      onUnexpected,
    });

  test('an error event fails the response with its code', async () => {
    const r = run(
      fake([
        { type: 'text', delta: 'a' },
        { type: 'error', code: 'model_busy', message: 'busy' },
      ]),
      'response',
    );
    const events = [];
    for await (const e of r.events()) events.push(e);
    assert.deepEqual(
      events.map((e) => e.event),
      ['response.created', 'response.output_text.delta', 'response.failed'],
    );
    assert.deepEqual(r.error, { type: 'model_error', code: 'model_busy', message: 'busy' });
  });

  test('a completion with no text still reports its (empty) text; a bug is internal_error and reported', async () => {
    const r = run(fake([{ type: 'done', usage: { input_tokens: 1, output_tokens: 0 } }]), 'completion');
    const events = [];
    for await (const e of r.events()) events.push(e);
    assert.deepEqual(
      events.map((e) => e.event),
      ['response.created', 'response.output_text.done', 'response.completed'],
    );
    assert.equal(r.text, '');
    const seen: unknown[] = [];
    const broken: ModelEngine = {
      ...fake([]),
      generate: () => ({ [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error('bug')) }) }),
    };
    const b = run(broken, 'response', (e) => seen.push(e));
    for await (const _ of b.events());
    assert.equal(b.error!.code, 'internal_error');
    assert.doesNotMatch(b.error!.message, /bug/);
    assert.equal(seen.length, 1);
  });

  test('a response that cannot be saved ends with response.failed, never response.completed', async () => {
    const seen: unknown[] = [];
    const r = run(
      fake([{ type: 'text', delta: 'a' }]),
      'response',
      (e) => seen.push(e),
      async () => {
        throw new Error('ENOSPC');
      },
    );
    const events = [];
    for await (const e of r.events()) events.push(e);
    assert.equal(events.at(-1)!.event, 'response.failed');
    assert.equal(r.error!.code, 'internal_error');
    assert.equal(seen.length, 1);
    // Marked unsaved (JSON mode answers 500, D-5), and the event reports no usage for what was not kept.
    assert.equal(r.unsaved, true);
    assert.equal('usage' in events.at(-1)!.data, false);
  });
});

describe('response runner limits', () => {
  test('a model that keeps calling tools is offered none on the last round and must answer', async () => {
    const offered: number[] = [];
    const looping: ModelEngine = {
      id: 'loop',
      async *generate(r) {
        offered.push(r.tools.length);
        if (r.tools.length) yield { type: 'tool_call', call: { name: 'knowledge_search', arguments: '{"query":"again"}' } };
        else yield { type: 'text', delta: 'Fine, here is my answer.' };
        yield { type: 'done', usage: { input_tokens: 1, output_tokens: 1 } };
      },
      async title() {
        return { 'en-ca': 'x', 'fr-ca': 'x' };
      },
    };
    const r = new ResponseRun({
      id: 'resp_1',
      kind: 'response',
      conversationId: 'conv_1',
      engine: looping,
      request: req('Hi', { tools: [knowledgeSearchSpec()] }),
      tools: { specs: [knowledgeSearchSpec()], knowledge: undefined, forms: new Map() },
      signal: new AbortController().signal,
      finish: async () => {},
    });
    for await (const _ of r.events());
    assert.deepEqual(offered, [1, 1, 1, 0]);
    assert.deepEqual(
      r.output.map((i) => i.type),
      ['function_call', 'function_call', 'function_call', 'message'],
    );
    assert.deepEqual(r.usage, { input_tokens: 4, output_tokens: 4, total_tokens: 8 });
  });
});

describe('SSE backpressure', () => {
  test('waits for drain when the socket buffer is full', async () => {
    const res = Object.assign(new EventEmitter(), { destroyed: false, writableEnded: false, chunks: [] as string[] }) as any;
    res.write = (c: string) => {
      res.chunks.push(c);
      return false;
    };
    let resolved = false;
    const p = writeSseEvent(res as ServerResponse, {
      event: 'response.completed',
      data: { type: 'response.completed', sequence_number: 0, id: 'r', status: 'completed' },
    }).then(() => (resolved = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(resolved, false);
    res.emit('drain');
    await p;
    assert.equal(res.chunks.length, 1);
    // A closed socket releases the writer too, and later writes are no-ops.
    const q = writeSseEvent(res as ServerResponse, {
      event: 'response.completed',
      data: { type: 'response.completed', sequence_number: 1, id: 'r', status: 'completed' },
    });
    res.emit('close');
    await q;
    res.destroyed = true;
    await writeSseEvent(res as ServerResponse, {
      event: 'response.completed',
      data: { type: 'response.completed', sequence_number: 2, id: 'r', status: 'completed' },
    });
    assert.equal(res.chunks.length, 2);
  });
});
