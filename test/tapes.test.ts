// Tapes (D-140…D-142, D-145): a conversation on the fake OpenAI-compatible server recorded once, then
// replayed with the server stopped; the recorded timing kept; a changed message missing its tape; and
// `parley tapes` listing, showing and checking the tapes against the live server.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { patientFetch } from '../src/engines/ollama-fetch.ts';
import { OpenAIEngine } from '../src/engines/openai.ts';
import { parseTape, recordingFetch, replayingFetch, tapeKey, type Tape } from '../src/engines/tapes.ts';
import type { ModelEvent } from '../src/engines/types.ts';
import { chunk, type FakeOpenAI, refusal, sse, startFakeOpenAI, textChunks, toolChunks } from './support/fake-openai.ts';
import { collect, failure, request } from './support/model-events.ts';
import { runCli } from './support/cli-helpers.ts';
import { startTestServer, tempDir } from './support/helpers.ts';
import { maskCallIds, outputFromEvents, postSse, shape, type ParsedEvent, TOOL_THEN_TEXT } from './support/sse-client.ts';

const SECRET = 'sk-tape-Pq3vW9xN2mL8kT4r';
const QUESTION = 'How do I rotate my API key?';
const ANSWER = ['Create a new key, ', 'deploy it, then revoke ', 'the old one (api-keys.md).'];

let fake: FakeOpenAI;
let dir: string;
before(async () => {
  fake = await startFakeOpenAI();
  dir = await tempDir('parley-tapes-');
});
after(() => fake.close());

/** The fake's answers to the conversation: a tool call, then the text at a model's pace, then the title. */
function scriptConversation(answer = ANSWER): void {
  fake.script(
    sse(toolChunks('knowledge_search', { query: 'rotate API key' }), { gapMs: 5 }),
    sse(textChunks(answer, [300, 20]), { gapMs: 40 }),
    sse(textChunks(['{"en-ca":"Key rotation","fr-ca":"Rotation des clés"}'])),
  );
}

/** One exchange on app_knowledge; `startedAt` and `firstTextAt` on performance.now()'s clock. */
async function converse(baseUrl: string, content = QUESTION) {
  const started = await fetch(`${baseUrl}/apps/app_knowledge/conversations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${(await import('./support/helpers.ts')).KEY}`, 'content-type': 'application/json' },
    body: '{}',
  });
  const conv = (await started.json()) as { id: string };
  let firstTextAt = 0;
  const startedAt = performance.now();
  const r = await postSse(
    baseUrl,
    `/apps/app_knowledge/conversations/${conv.id}`,
    { message: { content }, stream: true },
    { onEvent: (e) => void (e.event === 'response.output_text.delta' && !firstTextAt && (firstTextAt = performance.now())) },
  );
  return { events: r.events, startedAt, firstTextAt, conv: conv.id };
}

const text = (events: ParsedEvent[]) => events.find((e) => e.event === 'response.output_text.done')?.data.text;

async function tapes(): Promise<Tape[]> {
  const names = (await fs.readdir(dir)).filter((n) => n.endsWith('.jsonl'));
  return Promise.all(names.map(async (n) => parseTape(await fs.readFile(path.join(dir, n), 'utf8'))));
}

describe('tapes on the OpenAI-compatible engine', () => {
  let recorded: Awaited<ReturnType<typeof converse>>;

  test('recording changes nothing the client sees; one tape per model call, named by its key, without the key', async () => {
    const s = await startTestServer({ model: 'openai:fake-model', openaiBaseUrl: fake.url, openaiApiKey: SECRET, recordTapes: dir });
    try {
      scriptConversation();
      recorded = await converse(s.baseUrl);
      assert.deepEqual(shape(recorded.events), TOOL_THEN_TEXT);
      assert.equal(text(recorded.events), ANSWER.join(''));
    } finally {
      await s.close();
    }
    const all = await tapes();
    assert.equal(all.length, 3);
    for (const t of all) {
      assert.equal(tapeKey('openai', t.head.request).key, t.head.key, 'the file is named by the key of its request');
      assert.equal(path.basename(t.head.key), t.head.key);
      assert.equal(t.end.end, 'done');
    }
    const raw = (await Promise.all((await fs.readdir(dir)).map((n) => fs.readFile(path.join(dir, n), 'utf8')))).join('\n');
    assert.ok(!raw.includes(SECRET), 'OPENAI_API_KEY is in no tape');
    // No request header is kept; of the response's, only those a client reads.
    for (const t of all) {
      assert.deepEqual(Object.keys(t.head).sort(), ['engine', 'headers', 'key', 'model', 'ms', 'path', 'request', 'status', 'tape']);
      assert.deepEqual(Object.keys(t.head.headers), ['content-type']);
    }
    // D-141: the tool turn's ids are Parley's, normalized, so that the same turn has the same key.
    const toolTurn = all.find((t) => (t.head.request.messages as any[]).some((m) => m.role === 'tool'))!;
    assert.deepEqual(
      (toolTurn.head.request.messages as any[])
        .filter((m) => m.tool_calls || m.tool_call_id)
        .map((m) => m.tool_call_id ?? m.tool_calls[0].id),
      ['call_1', 'call_1'],
    );
  });

  test('replayed with the server stopped: the same events and text, no sooner than recorded; a changed message is tape_missing', async () => {
    const stopped = await startFakeOpenAI();
    await stopped.close();
    const s = await startTestServer({ model: 'openai:fake-model', openaiBaseUrl: stopped.url, replayTapes: dir, tapeTiming: 'recorded' });
    try {
      const replayed = await converse(s.baseUrl);
      assert.deepEqual(shape(replayed.events), shape(recorded.events));
      assert.deepEqual(maskCallIds(outputFromEvents(replayed.events)), maskCallIds(outputFromEvents(recorded.events)));
      assert.equal(text(replayed.events), ANSWER.join(''));
      // The first text comes after the tool turn's whole tape and the answer's first text chunk, each at its recorded offset.
      const all = await tapes();
      const toolTape = all.find((t) => t.chunks.some((c) => c.chunk.includes('knowledge_search')))!;
      const answerTape = all.find((t) => t.chunks.some((c) => c.chunk.includes('Create a new key')))!;
      const firstText = answerTape.chunks.find((c) => c.chunk.includes('Create a new key'))!.ms;
      assert.ok(firstText >= 40, 'the recorded offset reflects the model’s pace');
      assert.ok(
        replayed.firstTextAt - replayed.startedAt >= toolTape.end.ms + firstText,
        `first text after ${replayed.firstTextAt - replayed.startedAt} ms, recorded ${toolTape.end.ms} + ${firstText} ms`,
      );
      const changed = await converse(s.baseUrl, 'How do I rotate my API key, please?');
      const failed = changed.events.at(-1)!;
      assert.equal(failed.event, 'response.failed');
      assert.equal(failed.data.error.code, 'tape_missing');
      assert.match(failed.data.error.message, /No tape for this model call \(key [0-9a-f]{64}\).*nearest tape is [0-9a-f]{64}/);
    } finally {
      await s.close();
    }
  });

  test('parley tapes list and show read the tapes; check exits 0 on the unchanged server and 1 once its answers change', async () => {
    const list = await runCli(['tapes', 'list', dir]);
    assert.equal(list.code, 0, list.stderr);
    assert.equal(list.stdout.trim().split('\n').length, 3);
    assert.match(list.stdout, /openai:fake-model {2}200 .*→ knowledge_search \{"query":"rotate API key"\}/);
    const show = await runCli(['tapes', 'show', dir]);
    assert.match(show.stdout, new RegExp(`user: ${QUESTION.replace(/\?/g, '\\?')}`));
    assert.match(show.stdout, /assistant: Create a new key, deploy it, then revoke the old one \(api-keys\.md\)\./);

    const env = { PARLEY_MODEL: 'openai:fake-model', OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: SECRET };
    scriptConversation();
    // The fake answers in the order of its script; `check` reads the tapes in their keys' order, so each call is told apart by its body.
    fake.script((res, body) => byRequest(body)(res, body));
    const same = await runCli(['tapes', 'check', dir], { env });
    assert.equal(same.code, 0, same.stdout + same.stderr);
    assert.match(same.stdout, /3 checked against openai:fake-model, 0 drifted/);
    assert.equal(fake.requests.at(-1)!.headers.authorization, `Bearer ${SECRET}`);
    changedAnswers = true;
    const drifted = await runCli(['tapes', 'check', dir], { env });
    assert.equal(drifted.code, 1, drifted.stdout + drifted.stderr);
    assert.match(drifted.stdout, /drift {2}[0-9a-f]{64}: text changed \d+% \(threshold 20%\)/);
    assert.ok(!(drifted.stdout + drifted.stderr).includes(SECRET));
    const closed = await startFakeOpenAI();
    await closed.close();
    const unreachable = await runCli(['tapes', 'check', dir], { env: { ...env, OPENAI_BASE_URL: closed.url } });
    assert.equal(unreachable.code, 3, 'a live model out of reach is a network error, not drift');
    assert.match(unreachable.stderr, /^error: cannot reach http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: connection refused/);
  });
});

let changedAnswers = false;

/** The fake's answer to a tape's request, told by what it asks (the title, the tool turn, the question). */
function byRequest(body: any) {
  if (body.response_format) return sse(textChunks(['{"en-ca":"Key rotation","fr-ca":"Rotation des clés"}']));
  if (body.messages.some((m: any) => m.role === 'tool'))
    return sse(textChunks(changedAnswers ? ['Keys cannot be rotated; contact support to reset every credential.'] : ANSWER));
  return sse(toolChunks('knowledge_search', { query: 'rotate API key' }));
}

describe('the tape layer under one engine', () => {
  const engineOn = (f: typeof fetch) => new OpenAIEngine({ baseUrl: fake.url, model: 'fake-model', fetch: f });
  const layers = async () => {
    const own = await tempDir('parley-tape-layer-');
    const warnings: string[] = [];
    return {
      own,
      warnings,
      record: engineOn(recordingFetch(patientFetch(), 'openai', own, (w) => warnings.push(w))),
      replay: engineOn(replayingFetch('openai', own, 'fast')),
    };
  };

  test('a failure replays as the same failure: a refusal with its Retry-After, a cut stream', async () => {
    const { record, replay } = await layers();
    fake.script(refusal(429, 'Rate limit reached', { 'retry-after': '17' }));
    const recorded = await failure(collect(record.generate(request(), new AbortController().signal)));
    const replayed = await failure(collect(replay.generate(request(), new AbortController().signal)));
    assert.deepEqual([replayed.code, replayed.message], [recorded.code, recorded.message]);
    assert.match(replayed.message, /retry after 17 s/);

    const cut = request({ messages: [{ role: 'user', content: 'cut me off' }] });
    fake.script(sse([chunk.role(), chunk.text('Part')], { cut: true, gapMs: 5 }));
    assert.equal((await failure(collect(record.generate(cut, new AbortController().signal)))).code, 'model_error');
    const seen: ModelEvent[] = [];
    const err = await failure(
      (async () => {
        for await (const e of replay.generate(cut, new AbortController().signal)) seen.push(e);
      })(),
    );
    assert.deepEqual(seen, [{ type: 'text', delta: 'Part' }]);
    assert.deepEqual(
      [err.code, err.message],
      ['model_error', `The connection to the server at ${fake.url} was lost during the generation; try again`],
    );
  });

  test('a call aborted before its answer was whole leaves no tape; one whose tape cannot be written is answered all the same', async () => {
    const { own, record } = await layers();
    fake.script(sse([chunk.role(), chunk.text('first')], { hang: true }));
    const ctrl = new AbortController();
    await assert.rejects(async () => {
      for await (const _ of record.generate(request(), ctrl.signal)) ctrl.abort(new Error('cancelled'));
    });
    assert.deepEqual(await fs.readdir(own), []);
    // A directory that is a file: the reply is the model's, and the tape a warning.
    const blocked = path.join(own, 'blocked');
    await fs.writeFile(blocked, '');
    const warnings: string[] = [];
    const unwritable = engineOn(recordingFetch(patientFetch(), 'openai', blocked, (w) => warnings.push(w)));
    fake.script(sse(textChunks(['Still here.'])));
    const events = await collect(unwritable.generate(request(), new AbortController().signal));
    assert.deepEqual(events[0], { type: 'text', delta: 'Still here.' });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /^tape [0-9a-f]{64} not written \((EEXIST|ENOTDIR)\)$/);
  });

  test('D-144: a key a server echoes stays out of the tape, also when its stream cut the key across two chunks', async () => {
    const own = await tempDir('parley-tape-key-');
    const secret = 'sk-tape-test-0123456789abcdef';
    const body = `data: {"error":{"message":"Incorrect API key provided: ${secret}"}}\n\n`;
    const cut = body.indexOf(secret) + 7;
    // A server that never leaves this process: the answer comes in two reads, split inside the key.
    const base = (async () =>
      new Response(
        new ReadableStream({
          start(c) {
            c.enqueue(new TextEncoder().encode(body.slice(0, cut)));
            c.enqueue(new TextEncoder().encode(body.slice(cut)));
            c.close();
          },
        }),
        { status: 401, headers: { 'content-type': 'text/event-stream' } },
      )) as unknown as typeof fetch;
    const taped = recordingFetch(base, 'openai', own, () => {}, secret);
    const res = await taped('http://model.invalid/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    assert.equal(await res.text(), body, 'the engine reads the answer as sent');
    const [file] = await fs.readdir(own);
    const tape = await fs.readFile(path.join(own, file!), 'utf8');
    assert.ok(!tape.includes(secret.slice(0, 7)) && !tape.includes(secret.slice(7)), 'no part of the key is kept');
    assert.match(tape, /\[OPENAI_API_KEY\]/);
  });
});
