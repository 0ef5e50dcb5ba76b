// ResponseRun starts the model before `response.created` is consumed (a remote model's request is then
// on its way while the event is written), without changing the events or leaking the model's round.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ModelEngine, ModelEvent } from '../src/engines/types.ts';
import { ResponseRun } from '../src/services/response-runner.ts';

/** An engine that records when its generation starts and whether it was ended. */
function recordingEngine(events: ModelEvent[], hold?: Promise<void>) {
  const log: string[] = [];
  const engine: ModelEngine = {
    id: 'fake',
    async *generate() {
      log.push('generate');
      try {
        for (const e of events) {
          yield e;
          await hold;
        }
      } finally {
        log.push('ended');
      }
    },
    async title() {
      return { 'en-ca': 'x', 'fr-ca': 'x' };
    },
  };
  return { engine, log };
}

const run = (engine: ModelEngine) =>
  new ResponseRun({
    id: 'resp_1',
    kind: 'response',
    conversationId: 'conv_1',
    engine,
    request: {
      kind: 'response',
      agentName: 'T',
      instructions: '',
      metadata: {},
      messages: [{ role: 'user', content: 'Hi' }],
      tools: [],
      fast: false,
    },
    tools: { specs: [], knowledge: undefined, forms: new Map() },
    signal: new AbortController().signal,
    finish: async () => {},
  });

describe('ResponseRun: the model starts with the response', () => {
  test('the generation is under way when response.created is handed out; the events are unchanged', async () => {
    const { engine, log } = recordingEngine([
      { type: 'text', delta: 'Hel' },
      { type: 'text', delta: 'lo' },
      { type: 'done', usage: { input_tokens: 1, output_tokens: 2 } },
    ]);
    const it = run(engine).events();
    const created = await it.next();
    assert.equal(created.value?.event, 'response.created');
    assert.deepEqual(log, ['generate']);
    const rest: string[] = [];
    for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value.event);
    assert.deepEqual(rest, ['response.output_text.delta', 'response.output_text.delta', 'response.output_text.done', 'response.completed']);
    assert.deepEqual(log, ['generate', 'ended']);
  });

  test('a consumer that leaves at response.created, or in the middle, ends the model round', async () => {
    for (const leaveAfter of [1, 2]) {
      let release!: () => void;
      const hold = new Promise<void>((r) => (release = r));
      const { engine, log } = recordingEngine(
        [
          { type: 'text', delta: 'a' },
          { type: 'text', delta: 'b' },
        ],
        hold,
      );
      const it = run(engine).events();
      for (let i = 0; i < leaveAfter; i++) await it.next();
      const left = it.return(undefined);
      release();
      await left;
      // The engine's own cleanup ran (for Ollama: the request is aborted).
      await new Promise<void>((r) => setImmediate(r));
      assert.deepEqual(log, ['generate', 'ended'], `leaving after ${leaveAfter} event(s)`);
    }
  });

  test('a model failing before response.created is consumed still fails the response, after it', async () => {
    const engine: ModelEngine = {
      id: 'fake',
      // biome-ignore lint/correctness/useYield: a generator that fails before its first event is the case under test.
      async *generate() {
        throw Object.assign(new Error('boom'), { name: 'ModelError', code: 'model_error' });
      },
      async title() {
        return { 'en-ca': 'x', 'fr-ca': 'x' };
      },
    };
    const r = run(engine);
    const events: string[] = [];
    for await (const e of r.events()) events.push(e.event);
    assert.deepEqual(events, ['response.created', 'response.failed']);
    assert.equal(r.status, 'failed');
  });
});
