// ResponseRun starts the model before `response.created` is consumed (a remote model's request is then
// on its way while the event is written), without changing the events or leaking the model's round.
// KeptEvents (D-100) hands a reply's events to the store without waiting for each, and to the answer
// only once kept, in order.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ModelEngine, ModelEvent } from '../src/engines/types.ts';
import type { UnsequencedEvent } from '../src/contract/index.ts';
import { KeptEvents } from '../src/services/send/kept-events.ts';
import { LiveEvents } from '../src/services/send/live-events.ts';
import { ResponseRun } from '../src/services/send/response-runner.ts';

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

describe('KeptEvents: the answer gets only kept events, in order (D-100, D-30)', () => {
  const ev = (n: number, event = 'response.output_text.delta') => ({ event, data: { n } }) as unknown as UnsequencedEvent;
  /** A store whose appends are settled by the test, in any order. */
  function heldStore() {
    const held: Array<{ e: UnsequencedEvent; ok: () => void; fail: (err: unknown) => void }> = [];
    const append = (e: UnsequencedEvent) =>
      new Promise<void>((ok, fail) => {
        held.push({ e, ok, fail });
      });
    return { held, append };
  }
  const seen = (live: LiveEvents) =>
    (live as unknown as { list: UnsequencedEvent[] }).list.map((e) => (e.data as unknown as { n: number }).n);

  test('an event kept before the one ahead of it waits for it; none reaches the answer unkept', async () => {
    const { held, append } = heldStore();
    const live = new LiveEvents();
    const kept = new KeptEvents({ append, live, unavailable: () => false, onUnavailable: () => assert.fail('not lost') });
    for (let n = 0; n < 3; n++) kept.add(ev(n), false);
    kept.add(ev(3, 'response.completed'), true);
    assert.equal(held.length, 4, 'every event is handed to the store at once');
    held[2]!.ok();
    held[1]!.ok();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(seen(live), [], 'events kept after one not yet kept wait for it');
    held[0]!.ok();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(seen(live), [0, 1, 2]);
    held[3]!.ok();
    await kept.settled();
    assert.deepEqual(seen(live), [0, 1, 2, 3]);
  });

  test('D-91: an event not kept because the store is out of reach stops the reply and is not shown; another failure ends production', async () => {
    const { held, append } = heldStore();
    const live = new LiveEvents();
    let stopped = 0;
    const lost = new Error('lost');
    const kept = new KeptEvents({ append, live, unavailable: (err) => err === lost, onUnavailable: () => stopped++ });
    kept.add(ev(0), false);
    kept.add(ev(1), false);
    held[0]!.ok();
    held[1]!.fail(lost);
    await kept.settled();
    assert.deepEqual([seen(live), stopped], [[0], 1]);
    const taken = new Error('taken over');
    kept.add(ev(2), false);
    kept.add(ev(3), false);
    held[2]!.fail(taken);
    held[3]!.ok();
    await assert.rejects(kept.settled(), /taken over/);
    assert.throws(() => kept.check(), /taken over/);
    assert.deepEqual(seen(live), [0], 'nothing after the failure reaches the answer');
  });
});
