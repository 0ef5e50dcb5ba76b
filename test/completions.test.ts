// Completions (§4.7, §6 rule 2): cmpl_ ids, only text events, knowledge_search, limits, usage per app.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ReferenceCompletion, ReferenceErrorBody, ReferenceEventPayload, type StreamEventType } from '../src/contract/index.ts';
import { countTokens, estimateInputTokens } from '../src/engines/text.ts';
import { ON_POSTGRES, startTestServer, type TestServer } from './support/helpers.ts';
import { postSse, shape } from './support/sse-client.ts';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

describe('create completion (§4.7)', () => {
  test('JSON: a cmpl_ completion grounded in the knowledge base, with usage', async () => {
    const r = await s.call('POST', '/apps/app_demo/completions', { prompt: 'Summarize the refund policy for credits' });
    assert.equal(r.status, 200);
    const c = ReferenceCompletion.parse(r.body);
    assert.match(c.id, /^cmpl_[0-9a-f]{24}$/);
    assert.equal(c.status, 'completed');
    assert.match(c.text, /billing-credits\.md/);
    assert.ok(c.usage!.input_tokens > 0 && c.usage!.output_tokens > 0);
    assert.equal(c.usage!.total_tokens, c.usage!.input_tokens + c.usage!.output_tokens);
  });

  test('SSE: created (object completion), only text events, completed; the text equals the JSON one (§6 rule 2)', async () => {
    const prompt = 'Explain how streaming responses end';
    const r = await postSse(s.baseUrl, '/apps/app_demo/completions', { prompt, stream: true });
    assert.deepEqual(shape(r.events), [
      'response.created',
      'response.output_text.delta*',
      'response.output_text.done',
      'response.completed',
    ]);
    r.events.forEach((e, i) => {
      assert.equal(e.data.sequence_number, i);
      ReferenceEventPayload[e.event as StreamEventType].parse(e.data);
    });
    const created = r.events[0]!.data;
    assert.deepEqual(created, {
      type: 'response.created',
      sequence_number: 0,
      id: created.id,
      object: 'completion',
      status: 'in_progress',
    });
    assert.match(created.id, /^cmpl_/);
    const deltas = r.events.filter((e) => e.event === 'response.output_text.delta');
    const done = r.events.find((e) => e.event === 'response.output_text.done')!.data;
    assert.equal(deltas.map((e) => e.data.delta).join(''), done.text);
    assert.ok(deltas.every((e) => e.data.output_index === 0 && e.data.content_index === 0));
    const json = await s.call('POST', '/apps/app_demo/completions', { prompt });
    assert.equal(json.body.text, done.text);
    // `usage` (an extension) ends the stream too, on response.completed after D-16's fields, as in JSON.
    const completed = r.events.at(-1)!.data;
    assert.deepEqual(Object.keys(completed), ['type', 'sequence_number', 'id', 'status', 'usage']);
    assert.deepEqual(completed.usage, json.body.usage);
    assert.ok(completed.usage.input_tokens > 0 && completed.usage.output_tokens > 0);
  });

  test('knowledge_search: false answers without the knowledge base', async () => {
    const prompt = 'Summarize the refund policy for credits';
    const r = await s.call('POST', '/apps/app_demo/completions', { prompt, knowledge_search: false, fast: true });
    assert.equal(r.status, 200);
    assert.doesNotMatch(r.body.text, /billing-credits\.md/);
  });

  test('on a generative-UI app a completion builds no form: only text, no data_spec (§4.7: knowledge_search is its only tool)', async () => {
    const prompt = 'I would like to book an appointment';
    const sse = await postSse(s.baseUrl, '/apps/app_genui/completions', { prompt, stream: true });
    assert.deepEqual(shape(sse.events), [
      'response.created',
      'response.output_text.delta*',
      'response.output_text.done',
      'response.completed',
    ]);
    const json = await s.call('POST', '/apps/app_genui/completions', { prompt });
    assert.equal(json.body.status, 'completed');
    assert.doesNotMatch(json.body.text, /Here is the “.*” form|Fill it in/);
    assert.deepEqual(Object.keys(json.body).sort(), ['created_at', 'id', 'object', 'status', 'text', 'usage']);
    // The same message in a conversation of that app does get the form.
    const { body: conv } = await s.call('POST', '/apps/app_genui/conversations', {});
    const sent = await s.call('POST', `/apps/app_genui/conversations/${conv.id}`, { message: { content: prompt } });
    assert.ok(sent.body.output.some((i: any) => i.type === 'data_spec'));
  });

  test('metadata is used as data', async () => {
    const r = await s.call('POST', '/apps/app_stream/completions', { prompt: 'Write a welcome note', metadata: { user_name: 'Zoé' } });
    assert.match(r.body.text, /^Hi Zoé! /);
  });

  test('prompt of 32,000 characters is accepted; 32,001 and empty are 400 (§8)', async () => {
    assert.equal((await s.call('POST', '/apps/app_stream/completions', { prompt: 'y'.repeat(32_000) })).status, 200);
    for (const prompt of ['y'.repeat(32_001), '']) {
      const r = await s.call('POST', '/apps/app_stream/completions', { prompt, stream: true });
      assert.equal(r.status, 400);
      ReferenceErrorBody.parse(r.body);
      assert.deepEqual([r.body.error.param, r.body.error.code], ['prompt', 'invalid_value']);
    }
    const missing = await s.call('POST', '/apps/app_stream/completions', {});
    assert.deepEqual([missing.status, missing.body.error.param, missing.body.error.code], [400, 'prompt', 'missing_parameter']);
  });

  test('metadata of 16,384 bytes is accepted; 16,385 is 400 too_large (D-9)', async () => {
    const meta = (bytes: number) => ({ k: 'x'.repeat(bytes - 8) });
    assert.equal((await s.call('POST', '/apps/app_stream/completions', { prompt: 'Hi', metadata: meta(16_384) })).status, 200);
    const r = await s.call('POST', '/apps/app_stream/completions', { prompt: 'Hi', metadata: meta(16_385) });
    assert.deepEqual([r.status, r.body.error.param, r.body.error.code], [400, 'metadata', 'too_large']);
  });

  test('a scripted fault: JSON 200 failed with the error; SSE ends with response.failed', async () => {
    const json = await s.call('POST', '/apps/app_broken/completions', { prompt: 'Hi' });
    assert.equal(json.status, 200);
    assert.deepEqual([json.body.status, json.body.error.code, json.body.text], ['failed', 'scripted_fault', '']);
    const sse = await postSse(s.baseUrl, '/apps/app_faulty/completions', { prompt: 'Hi there, write something', stream: true });
    assert.deepEqual(shape(sse.events), ['response.created', 'response.output_text.delta*', 'response.failed']);
    assert.equal(sse.events.at(-1)!.data.id, sse.events[0]!.data.id);
  });

  test('a failed completion is billed an estimate of its input and of the text generated before the failure', async () => {
    const prompt = 'Hi there, write something';
    const before = await s.usage.of('app_faulty');
    const sse = await postSse(s.baseUrl, '/apps/app_faulty/completions', { prompt, stream: true });
    const failed = ReferenceEventPayload['response.failed'].parse(sse.events.at(-1)!.data);
    const partial = sse.events
      .filter((e) => e.event === 'response.output_text.delta')
      .map((e) => e.data.delta)
      .join('');
    // The embedded engine's own count for a finished turn, from the same estimate.
    const input = estimateInputTokens({
      instructions: 'You are a helpful assistant.',
      metadata: {},
      messages: [{ role: 'user', content: prompt }],
    });
    assert.deepEqual(failed.usage, {
      input_tokens: input,
      output_tokens: countTokens(partial),
      total_tokens: input + countTokens(partial),
    });
    assert.ok(failed.usage!.output_tokens > 0);
    const after1 = await s.usage.of('app_faulty');
    assert.deepEqual([after1.requests, after1.total_tokens], [before.requests + 1, before.total_tokens + failed.usage!.total_tokens]);
    // A model that did nothing at all (fails before its first event) costs nothing.
    const broken = await s.call('POST', '/apps/app_broken/completions', { prompt });
    assert.deepEqual(broken.body.usage, { input_tokens: 0, output_tokens: 0, total_tokens: 0 });
  });

  test('no agent: 403 agent_unavailable (D-4)', async () => {
    const r = await s.call('POST', '/apps/app_noagent/completions', { prompt: 'Hi' });
    assert.deepEqual([r.status, r.body.error.type], [403, 'agent_unavailable']);
  });
});

describe('usage per app (credits)', () => {
  test('is recorded durably and survives a restart', async () => {
    const dataDir = s.dataDir;
    const before = await s.usage.of('app_knowledge');
    const r = await s.call('POST', '/apps/app_knowledge/completions', { prompt: 'How do publishable keys work?' });
    const after1 = await s.usage.of('app_knowledge');
    assert.equal(after1.requests, before.requests + 1);
    assert.equal(after1.total_tokens, before.total_tokens + r.body.usage.total_tokens);
    assert.equal(after1.credits, after1.total_tokens / 1000);
    // On PostgreSQL the usage is rows (test/pg-shared.test.ts); the restart below reads them back.
    if (!ON_POSTGRES) assert.ok((await fs.readFile(path.join(dataDir, 'usage.jsonl'), 'utf8')).includes(r.body.id));
    await s.close();
    s = await startTestServer({ dataDir });
    assert.deepEqual(await s.usage.of('app_knowledge'), after1);
  });
});
