// The scenario directives, one test per row of docs/scenarios.md (D-120…D-124), run on the file store
// (test/scenarios.test.ts) and on PostgreSQL (test/proof/pg-scenarios.test.ts).
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createParser } from 'eventsource-parser';
import { MALFORMED_FRAME } from '../../src/http/sse-scenario.ts';
import { KEY, type TestServer } from './helpers.ts';
import { until } from './live-reply.ts';

export interface Read {
  status: number;
  headers: Headers;
  /** The raw text received before the end or the cut. */
  text: string;
  events: Array<{ event: string; data: any; id?: string }>;
  /** The stream was cut (no clean end of the HTTP message). */
  cut: boolean;
  json?: any;
}

/** A request whose event stream is read to its end, or to its cut. */
export async function readStream(url: string, init: { method?: string; body?: unknown; headers?: Record<string, string> }): Promise<Read> {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const out: Read = { status: res.status, headers: res.headers, text: '', events: [], cut: false };
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
    out.json = await res.json();
    return out;
  }
  const parser = createParser({
    onEvent: (e) => {
      let data: unknown;
      try {
        data = JSON.parse(e.data);
      } catch {
        data = { malformed: e.data };
      }
      out.events.push({ event: e.event ?? 'message', data, id: e.id });
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body!) {
      const t = decoder.decode(chunk as Uint8Array, { stream: true });
      out.text += t;
      parser.feed(t);
    }
  } catch {
    out.cut = true;
  }
  return out;
}

const textOf = (events: Read['events']) =>
  events
    .filter((e) => e.event === 'response.output_text.delta')
    .map((e) => e.data.delta)
    .join('');

/** The directives against `start`'s server. */
export function scenarioSuite(store: string, start: () => Promise<TestServer>): void {
  describe(`D-120…D-124 scenario directives (${store})`, () => {
    let s: TestServer;
    before(async () => {
      s = await start();
    });
    after(() => s.close());
    const conv = async (app = 'app_stream') => (await s.call('POST', `/apps/${app}/conversations`, {})).body.id as string;
    const sendUrl = (app: string, c: string) => `${s.baseUrl}/apps/${app}/conversations/${c}`;
    const send = (app: string, c: string, scenario: string, stream = true) =>
      readStream(sendUrl(app, c), {
        method: 'POST',
        body: { message: { content: 'Hello there, what can you do?' }, stream },
        headers: scenario ? { 'parley-scenario': scenario } : {},
      });
    const settled = async (app: string, id: string) => {
      await until(`response ${id} ended`, async () => (await s.call('GET', `/apps/${app}/responses/${id}`)).body.status !== 'in_progress');
      return (await s.call('GET', `/apps/${app}/responses/${id}`)).body;
    };

    it('D-121 status=429 answers with Retry-After and x-ratelimit-*, and counts, stores and charges nothing', async () => {
      const app = s.tenants.apps.get('app_limited')!;
      const c = await conv('app_limited');
      const usage = await s.usage.of(app.id);
      const debited = await s.usage.debited(app.team_id, 0);
      // The plan allows 5 a minute: eight scripted 429s, then the five a minute still pass.
      for (let i = 0; i < 8; i++) {
        const r = await send('app_limited', c, 'status=429;retry-after=7', false);
        assert.equal(r.status, 429);
        assert.equal(r.json.error.code, null);
        assert.equal(r.json.error.type, 'rate_limit_exceeded');
        assert.equal(r.headers.get('retry-after'), '7');
        assert.equal(r.headers.get('x-ratelimit-limit-requests'), '5');
        assert.equal(r.headers.get('x-ratelimit-remaining-requests'), '0');
      }
      assert.deepEqual(await s.usage.of(app.id), usage);
      assert.equal(await s.usage.debited(app.team_id, 0), debited);
      assert.deepEqual((await s.call('GET', `/apps/app_limited/conversations/${c}`)).body.items, []);
      // The conversation's creation was the minute's first counted request; four more pass, then the real limit.
      for (let i = 0; i < 4; i++) assert.equal((await s.call('POST', '/apps/app_limited/conversations', {})).status, 200);
      assert.equal((await s.call('POST', '/apps/app_limited/conversations', {})).status, 429);
    });

    it('D-121 status=503, 401, 408, 500 and 409 answer as the catalogue does; a status it lacks is 400', async () => {
      const c = await conv();
      const expect: Array<[string, number, string, string | null]> = [
        ['status=503', 503, 'service_unavailable', 'store_unavailable'],
        ['status=401', 401, 'invalid_api_key', null],
        ['status=408', 408, 'invalid_request_error', 'request_timeout'],
        ['status=500', 500, 'internal_error', null],
        ['status=409', 409, 'invalid_request_error', 'conversation_busy'],
        ['status=418', 400, 'invalid_request_error', 'invalid_value'],
      ];
      for (const [scenario, status, type, code] of expect) {
        const r = await send('app_stream', c, scenario);
        assert.equal(r.status, status, scenario);
        assert.equal(r.json.error.type, type, scenario);
        assert.equal(r.json.error.code, code, scenario);
      }
      const busy = await send('app_stream', c, 'status=503');
      assert.equal(busy.headers.get('retry-after'), '1');
      // 409 is send message's: elsewhere it is refused.
      const elsewhere = await s.call('GET', '/apps/app_stream/config', undefined, { headers: { 'parley-scenario': 'status=409' } });
      assert.equal(elsewhere.status, 400);
      assert.deepEqual((await s.call('GET', `/apps/app_stream/conversations/${c}`)).body.items, []);
    });

    it('D-124 drop-after cuts the connection after the n-th event; a resume from the last sequence number gives the text once', async () => {
      const c = await conv();
      const cut = await send('app_stream', c, 'drop-after=3');
      assert.equal(cut.status, 200);
      assert.equal(cut.cut, true);
      assert.equal(cut.events.length, 3);
      assert.equal(cut.events[0]!.event, 'response.created');
      const id = cut.events[0]!.data.id as string;
      const last = cut.events.at(-1)!.data.sequence_number as number;
      const rest = await readStream(`${s.baseUrl}/apps/app_stream/responses/${id}/events?starting_after=${last}`, {});
      assert.equal(rest.events[0]!.data.sequence_number, last + 1);
      assert.equal(rest.events.at(-1)!.event, 'response.completed');
      const done = await settled('app_stream', id);
      assert.equal(textOf([...cut.events, ...rest.events]), done.output[0].content[0].text);
      // The same with Last-Event-ID, as an EventSource resumes (D-32).
      const viaHeader = await readStream(`${s.baseUrl}/apps/app_stream/responses/${id}/events`, {
        headers: { 'last-event-id': String(last) },
      });
      assert.equal(textOf([...cut.events, ...viaHeader.events]), done.output[0].content[0].text);
    });

    it('D-124 reset-after ends the connection with a TCP reset, and the reply goes on', async () => {
      const c = await conv();
      const u = new URL(sendUrl('app_stream', c));
      const body = JSON.stringify({ message: { content: 'Hello' }, stream: true });
      const { error, text } = await new Promise<{ error: NodeJS.ErrnoException | undefined; text: string }>((resolve) => {
        let text = '';
        const req = http.request(u, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'parley-scenario': 'reset-after=2' },
        });
        req.on('response', (res) => {
          res.on('data', (d) => {
            text += d;
          });
          res.on('error', (error) => resolve({ error, text }));
          res.on('end', () => resolve({ error: undefined, text }));
        });
        req.on('error', (error) => resolve({ error, text }));
        req.end(body);
      });
      assert.equal(error?.code, 'ECONNRESET');
      const id = /"id":"(resp_[^"]+)"/.exec(text)?.[1];
      if (id) assert.equal((await settled('app_stream', id)).status, 'completed');
    });

    it('D-124 fail-after fails the reply after its n-th event with scripted_fault, saved failed', async () => {
      const c = await conv();
      const r = await send('app_stream', c, 'fail-after=2');
      assert.deepEqual(
        r.events.map((e) => e.event),
        ['response.created', 'response.output_text.delta', 'response.failed'],
      );
      assert.equal(r.events[2]!.data.error.code, 'scripted_fault');
      const saved = await settled('app_stream', r.events[0]!.data.id);
      assert.equal(saved.status, 'failed');
      assert.equal(saved.error.code, 'scripted_fault');
      // JSON mode: the same reply, failed.
      const json = await send('app_stream', await conv(), 'fail-after=1', false);
      assert.equal(json.json.status, 'failed');
      assert.equal(json.json.error.code, 'scripted_fault');
    });

    it('D-124 malformed-after writes one frame that is not JSON, then the stream goes on', async () => {
      const r = await send('app_stream', await conv(), 'malformed-after=2');
      assert.equal(r.text.split(MALFORMED_FRAME).length, 2);
      const at = r.events.findIndex((e) => e.event === 'parley.malformed');
      assert.equal(at, 2);
      assert.equal(r.events.at(-1)!.event, 'response.completed');
    });

    it('D-124 duplicate writes the n-th event twice with its sequence number, and its id: line on the events endpoint', async () => {
      const r = await send('app_stream', await conv(), 'duplicate=2');
      assert.deepEqual(r.events[1], r.events[2]);
      assert.equal(r.events[1]!.data.sequence_number, 1);
      const id = r.events[0]!.data.id as string;
      const again = await readStream(`${s.baseUrl}/apps/app_stream/responses/${id}/events`, {
        headers: { 'parley-scenario': 'duplicate=1' },
      });
      assert.equal(again.events[0]!.id, '0');
      assert.deepEqual(again.events[0], again.events[1]);
    });

    it('D-124 tps, chunk, jitter and seed re-cut the deltas; the reply is the same text', async () => {
      const plain = await send('app_stream', await conv(), '');
      const paced = await send('app_stream', await conv(), 'tps=1000;chunk=3;jitter=1;seed=7');
      const deltas = paced.events.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta as string);
      // Every delta of 3 characters, the last one what is left.
      assert.ok(deltas.length > 2);
      for (const d of deltas.slice(0, -1)) assert.equal(Array.from(d).length, 3, d);
      assert.ok(Array.from(deltas.at(-1)!).length <= 3);
      assert.equal(textOf(paced.events), textOf(plain.events));
    });

    it('D-124 ttft holds the first model event back after response.created (a cancel meanwhile ends it with no text)', async () => {
      const c = await conv();
      const res = await fetch(sendUrl('app_stream', c), {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'parley-scenario': 'ttft=600000' },
        body: JSON.stringify({ message: { content: 'Hello' }, stream: true }),
      });
      const id = res.headers.get('parley-response-id')!;
      await until('response.created kept', async () => (await s.call('GET', `/apps/app_stream/responses/${id}`)).status === 200);
      const cancelled = await s.call('POST', `/apps/app_stream/responses/${id}/cancel`);
      assert.equal(cancelled.body.status, 'failed');
      assert.equal(cancelled.body.error.code, 'cancelled');
      assert.deepEqual(cancelled.body.output, []);
      const text = await res.text();
      assert.doesNotMatch(text, /output_text\.delta/);
    });

    it('D-124 a request without a scenario is not slowed by one stalled beside it (completes while the other waits)', async () => {
      const stalled = await fetch(sendUrl('app_stream', await conv()), {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'parley-scenario': 'stall-after=1:600000' },
        body: JSON.stringify({ message: { content: 'Hello' }, stream: true }),
      });
      const reader = stalled.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      assert.match(first, /response\.created/);
      let stalledDone = false;
      const rest = reader.read().then(() => {
        stalledDone = true;
      });
      const plain = await send('app_stream', await conv(), '');
      assert.equal(plain.events.at(-1)!.event, 'response.completed');
      assert.equal(stalledDone, false);
      await reader.cancel();
      await rest.catch(() => {});
    });

    it('D-124 cursor-expired: the events endpoint answers 410, the look-up answers from the conversation', async () => {
      const r = await send('app_stream', await conv(), '');
      const id = r.events[0]!.data.id as string;
      await settled('app_stream', id);
      const h = { headers: { 'parley-scenario': 'cursor-expired' } };
      const events = await s.call('GET', `/apps/app_stream/responses/${id}/events`, undefined, h);
      assert.equal(events.status, 410);
      assert.equal(events.body.error.code, 'response_events_expired');
      const lookup = await s.call('GET', `/apps/app_stream/responses/${id}`, undefined, h);
      assert.equal(lookup.status, 200);
      assert.equal(lookup.body.status, 'completed');
      assert.equal(lookup.body.output[0].content[0].text, textOf(r.events));
    });

    it('D-123 a stream directive on a request answered as JSON is 400 before anything runs', async () => {
      const c = await conv();
      const r = await send('app_stream', c, 'drop-after=2', false);
      assert.equal(r.status, 400);
      assert.equal(r.json.error.code, 'invalid_value');
      assert.deepEqual((await s.call('GET', `/apps/app_stream/conversations/${c}`)).body.items, []);
    });
  });
}
