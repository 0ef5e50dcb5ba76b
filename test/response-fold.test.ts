// One reducer from events to a response (src/services/send/response-fold.ts): the runner builds its output
// with it, the look-up and recovery rebuild theirs with it. Proved on runs of every fixture app that
// replies (text, tool calls, data_spec forms, model failures) and on replies cut short (cancelled, a
// client gone): the JSON body, the look-up and the saved conversation are what a client folding the
// stream itself rebuilds (§6 rule 4), and the reducer over the stored events gives the JSON body.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { UnsequencedEvent } from '../src/contract/index.ts';
import { foldEvents } from '../src/services/send/response-fold.ts';
import { FIXTURES_DIR, KEY, OTHER_TEAM_KEY, startTestServer, type TestServer } from './support/helpers.ts';
import { outputFromEvents, postSse } from './support/sse-client.ts';

interface FixtureApp {
  id: string;
  team_id: string;
  active: boolean;
  agent: { active: boolean; knowledge_base: string | null; forms?: string[]; testing?: { latency_ms?: number } };
}
const fixtures = JSON.parse(await fs.readFile(path.join(FIXTURES_DIR, 'fixtures.json'), 'utf8')) as { apps: FixtureApp[] };
/** The apps that reply, at full speed (the slow ones are cut short below). */
const APPS = fixtures.apps.filter((a) => a.active && a.agent.active && !a.agent.testing?.latency_ms);

/** A message that makes `app` use what it has: text always, a tool call with a knowledge base, a form with forms. */
function messagesFor(app: FixtureApp): string[] {
  const out = ['Hello there'];
  if (app.agent.knowledge_base) out.push('How do I rotate an API key?');
  if (app.agent.forms?.length) out.push('I would like to book an appointment for Friday');
  return out;
}

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

/** What each run was made of, to check the cases cover every item type and every way of ending. */
const seen = { items: new Set<string>(), ends: new Set<string>() };

/** The stored events of response `id`, to its terminal one (waits for it). */
async function storedEvents(id: string): Promise<UnsequencedEvent[]> {
  const events: UnsequencedEvent[] = [];
  for await (const e of s.store.responses.follow(id, -1)) events.push(e);
  return events;
}

/** The output the conversation saved for response `id` (the runner's output), as output items again. */
async function savedOutput(conversationId: string, id: string): Promise<unknown[]> {
  const file = await s.store.readHistory(conversationId);
  return file.items
    .filter((i) => i.response_id === id && !(i.type === 'message' && i.role === 'user'))
    .map(({ id: _i, created_at: _c, response_id: _r, status: _s, ...item }) => item);
}

/**
 * Every view of response `id` agrees: the runner's output (saved in the conversation, and the JSON
 * body if there is one), the stream as a client folds it, the reducer over the stored events, and
 * the look-up.
 */
async function assertOneResponse(
  app: FixtureApp,
  conversationId: string,
  id: string,
  streamed: Array<{ event: string; data: any }> | undefined,
  body: any,
  what: string,
) {
  const stored = await storedEvents(id);
  const client = outputFromEvents(streamed ?? stored);
  const runner = await savedOutput(conversationId, id);
  assert.deepEqual(runner, client, `${what}: the runner's output is what the stream carried`);
  if (streamed) assert.deepEqual(outputFromEvents(stored), client, `${what}: the stored events are the stream`);
  const folded = foldEvents(stored);
  assert.deepEqual(folded.output, client, `${what}: the reducer over the events gives the output`);
  const looked = await s.responses.lookup(app.id, id);
  assert.deepEqual(looked.output, client, `${what}: the look-up`);
  assert.deepEqual([looked.status, looked.error, looked.usage], [folded.status, folded.error, folded.usage], `${what}: the look-up's end`);
  if (body) {
    assert.deepEqual(body.output, client, `${what}: the JSON body`);
    assert.deepEqual([body.status, body.error, body.usage], [folded.status, folded.error, folded.usage], `${what}: the JSON body's end`);
  }
  for (const item of client) seen.items.add(item.type);
  seen.ends.add(folded.status === 'failed' ? `failed/${folded.error?.code}` : folded.status);
}

describe('one reducer: the runner, the look-up and the stream agree (§6 rule 4)', () => {
  test('every fixture app that replies, in JSON and as a stream', async () => {
    assert.ok(APPS.length >= 6, `the fixtures' apps: ${APPS.map((a) => a.id).join(', ')}`);
    for (const app of APPS) {
      const key = app.team_id === 'team_other' ? OTHER_TEAM_KEY : KEY;
      const conv = (await s.call('POST', `/apps/${app.id}/conversations`, {}, { key })).body.id as string;
      const url = `/apps/${app.id}/conversations/${conv}`;
      for (const content of messagesFor(app)) {
        const json = await s.call('POST', url, { message: { content }, stream: false }, { key });
        assert.equal(json.status, 200, `${app.id}: ${JSON.stringify(json.body)}`);
        await assertOneResponse(app, conv, json.body.id, undefined, json.body, `${app.id} JSON "${content}"`);
        const stream = await postSse(s.baseUrl, url, { message: { content }, stream: true }, { key });
        assert.equal(stream.status, 200);
        const id = stream.events[0]!.data.id as string;
        await assertOneResponse(app, conv, id, stream.events, undefined, `${app.id} stream "${content}"`);
      }
    }
    assert.deepEqual([...seen.items].sort(), ['data_spec', 'function_call', 'message']);
    for (const end of ['completed', 'failed/scripted_fault']) assert.ok(seen.ends.has(end), `${end} among ${[...seen.ends]}`);
  });

  test('a reply cancelled midway (D-33) and one whose client left past the cap of detached replies (D-34)', async () => {
    const slow = fixtures.apps.find((a) => a.id === 'app_slow')!;
    const tethered = fixtures.apps.find((a) => a.id === 'app_tethered')!;
    for (const [app, how] of [
      [slow, 'cancel'],
      [tethered, 'leave'],
    ] as const) {
      const conv = (await s.call('POST', `/apps/${app.id}/conversations`, {})).body.id as string;
      const ctrl = new AbortController();
      let id = '';
      let cancelled: Promise<any> | undefined;
      const stream = await postSse(
        s.baseUrl,
        `/apps/${app.id}/conversations/${conv}`,
        { message: { content: 'Tell me a long story about the sea' }, stream: true },
        {
          signal: ctrl.signal,
          onEvent: (e) => {
            id ||= e.data.id;
            if (e.event !== 'response.output_text.delta') return;
            if (how === 'leave') ctrl.abort();
            else cancelled ??= s.call('POST', `/apps/${app.id}/responses/${id}/cancel`);
          },
        },
      );
      // The cancel answers the response once saved, from its events (the reducer).
      const body = how === 'cancel' ? (await cancelled!).body : undefined;
      await assertOneResponse(app, conv, id, how === 'cancel' ? stream.events : undefined, body, `${app.id} ${how}`);
    }
    for (const end of ['failed/cancelled', 'failed/client_disconnected']) assert.ok(seen.ends.has(end), `${end} among ${[...seen.ends]}`);
  });
});
