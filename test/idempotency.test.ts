// Idempotent retries (IETF httpapi Idempotency-Key draft): replay within 24 h, 422 for another body,
// 409 while the first runs, durable across restarts, and safe for a client whose connection dropped.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import fs from 'node:fs/promises';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { IDEMPOTENCY_KEY_SYNTAX, ReferenceErrorBody } from '../src/contract/index.ts';
import { publishedDocuments } from '../src/api/routes.ts';
import { createHttpServer } from '../src/api/surfaces.ts';
import { AuthService } from '../src/pipeline/auth.ts';
import { IdempotencyService, canonicalJson, parseIdempotencyKey } from '../src/pipeline/idempotency.ts';
import { FileAnswers, type FileAnswersOptions } from '../src/store/file/idempotency.ts';
import { loadTenants } from '../src/store/fixtures.ts';
import { APP, FIXTURES_DIR, KEY, TARGET, startTestServer, tempDir, type TestServer } from './support/helpers.ts';

const conv = `/apps/${APP}/conversations`;
const idem = (k: string) => ({ headers: { 'idempotency-key': `"${k}"` } });

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const total = async (app = APP) => (await s.call('GET', `/apps/${app}/metrics`)).body.total_conversations as number;

describe('Idempotency-Key syntax', () => {
  test('an sf-string (or a bare token), printable ASCII, 1 to 255 characters, sent once', () => {
    assert.equal(parseIdempotencyKey(undefined), undefined);
    assert.equal(parseIdempotencyKey(['"8e03978e-40d5-43e8-bc93-6894a57f9324"']), '8e03978e-40d5-43e8-bc93-6894a57f9324');
    assert.equal(parseIdempotencyKey(['"a \\"quoted\\" \\\\ key"']), 'a "quoted" \\ key');
    assert.equal(parseIdempotencyKey(['bare-token_1']), 'bare-token_1');
    for (const bad of [['""'], ['"x'], ['"é"'], ['a b'], [`"${'k'.repeat(256)}"`], ['"a"', '"b"'], ['"a\\x"']]) {
      assert.throws(
        () => parseIdempotencyKey(bad),
        (e: { status?: number; code?: string }) => e.status === 400 && e.code === 'invalid_value',
        JSON.stringify(bad),
      );
    }
  });

  test('one truth: the 400 says the syntax the server accepts, as docs/reliability.md and /openapi.json do', async () => {
    const sentence = `must be ${IDEMPOTENCY_KEY_SYNTAX}`;
    const flat = (t: string) => t.replace(/\s+/g, ' ');
    const docs = flat(await fs.readFile(path.join(import.meta.dirname, '../docs/reliability.md'), 'utf8'));
    assert.ok(docs.includes(`the key ${sentence};`), 'docs/reliability.md says the sentence');
    const header = (publishedDocuments().data as { components: { parameters: { IdempotencyKey: { description: string } } } }).components
      .parameters.IdempotencyKey;
    assert.ok(header.description.includes(IDEMPOTENCY_KEY_SYNTAX), '/openapi.json says it');
    // What the sentence allows is accepted: quoted (with its escapes) or bare, 1 to 255 characters.
    const accepted: Array<[string, string]> = [
      ['"8e03978e-40d5-43e8-bc93-6894a57f9324"', '8e03978e-40d5-43e8-bc93-6894a57f9324'],
      ['8e03978e-40d5-43e8-bc93-6894a57f9324', '8e03978e-40d5-43e8-bc93-6894a57f9324'],
      ['"a key, with \\"quotes\\" and \\\\"', 'a key, with "quotes" and \\'],
      ['back\\slash', 'back\\slash'],
      [`"${'k'.repeat(255)}"`, 'k'.repeat(255)],
      ['k'.repeat(255), 'k'.repeat(255)],
    ];
    for (const [sent, key] of accepted) assert.equal(parseIdempotencyKey([sent]), key, sent);
    // What it rules out is refused with that sentence, whatever the reason.
    for (const sent of ['a b', 'a,b', 'a"b', '"é"', 'é', '""', `"${'k'.repeat(256)}"`, 'k'.repeat(256), '"a\\x"']) {
      assert.throws(
        () => parseIdempotencyKey([sent]),
        (e: { status?: number; message?: string }) => e.status === 400 && e.message === `Idempotency-Key ${sentence}.`,
        sent,
      );
    }
    const r = await s.call('POST', conv, { title: 't' }, { headers: { 'idempotency-key': 'two words' } });
    assert.equal(r.body.error.message, `Idempotency-Key ${sentence}.`);
  });

  test('the fingerprint ignores key order and spacing', () => {
    assert.equal(canonicalJson({ b: 1, a: [{ d: 2, c: null }] }), canonicalJson(JSON.parse('{ "a": [ {"c":null,"d":2} ], "b": 1 }')));
  });

  test('a malformed key is a 400 error object and creates nothing', async () => {
    const before = await total();
    const r = await s.call('POST', conv, { title: 't' }, { headers: { 'idempotency-key': '"ünïcode"' } });
    assert.equal(r.status, 400);
    ReferenceErrorBody.parse(r.body);
    assert.equal(r.body.error.param, 'Idempotency-Key');
    assert.equal(await total(), before);
  });
});

describe('create conversation with an Idempotency-Key', () => {
  test('the same key and body replays the first answer and creates nothing more', async () => {
    const before = await total();
    const first = await s.call('POST', conv, { title: 'once', metadata: { a: 1, b: 2 } }, idem('create-1'));
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    // The same JSON value written differently is the same request.
    const again = await s.call('POST', conv, undefined, {
      ...idem('create-1'),
      headers: { ...idem('create-1').headers, 'content-type': 'application/json' },
      raw: '{ "metadata": {"b":2,"a":1}, "title": "once" }',
    });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(await total(), before + 1);
  });

  test('the same key with another body is 422 idempotency_key_reused, and changes nothing', async () => {
    await s.call('POST', conv, { title: 'first body' }, idem('create-2'));
    const before = await total();
    const r = await s.call('POST', conv, { title: 'second body' }, idem('create-2'));
    assert.equal(r.status, 422);
    ReferenceErrorBody.parse(r.body);
    assert.equal(r.body.error.code, 'idempotency_key_reused');
    assert.equal(await total(), before);
  });

  test('keys belong to their app: the same key on another app is another request', async () => {
    const a = await s.call('POST', conv, { title: 'x' }, idem('create-3'));
    const other = TARGET.apps.generative_ui!;
    const b = await s.call('POST', `/apps/${other}/conversations`, { title: 'x' }, idem('create-3'));
    assert.equal(b.status, 200);
    assert.notEqual(a.body.id, b.body.id);
    assert.equal(b.headers.get('idempotent-replayed'), null);
  });

  test('a rejected request is not remembered: fixing the body and retrying with the same key runs', async () => {
    const bad = await s.call('POST', conv, { title: 'x', unknown: 1 }, idem('create-4'));
    assert.equal(bad.status, 400);
    const good = await s.call('POST', conv, { title: 'x' }, idem('create-4'));
    assert.equal(good.status, 200);
    assert.equal(good.headers.get('idempotent-replayed'), null);
  });

  test('without a key every request creates', async () => {
    const before = await total();
    await s.call('POST', conv, { title: 'same' });
    await s.call('POST', conv, { title: 'same' });
    assert.equal(await total(), before + 2);
  });

  test('keys survive a restart', async () => {
    const dir = await tempDir();
    let t = await startTestServer({ dataDir: dir });
    const first = await t.call('POST', conv, { title: 'durable' }, idem('restart-1'));
    await t.close();
    t = await startTestServer({ dataDir: dir });
    try {
      const again = await t.call('POST', conv, { title: 'durable' }, idem('restart-1'));
      assert.deepEqual(again.body, first.body);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal((await t.call('GET', `/apps/${APP}/metrics`)).body.total_conversations, 1);
    } finally {
      await t.close();
    }
  });
});

describe('a client whose connection dropped retries with the same key', () => {
  /** Sends the request on a raw socket and drops the connection as soon as the answer starts. */
  function sendAndDrop(body: string, key: string, dropAt: 'answer' | 'sent'): Promise<void> {
    return new Promise((resolve) => {
      const socket = net.connect(s.port, '127.0.0.1', () => {
        socket.write(
          `POST /v1${conv} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nIdempotency-Key: "${key}"\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
          () => {
            if (dropAt === 'sent') socket.destroy();
          },
        );
      });
      socket.once('data', () => socket.destroy()); // the answer is lost
      socket.on('error', () => {});
      socket.on('close', () => resolve());
    });
  }

  for (const dropAt of ['answer', 'sent'] as const) {
    test(`dropped ${dropAt === 'answer' ? 'while the answer arrived' : 'right after sending'}: exactly one conversation, and the retry gets it`, async () => {
      const before = await total();
      const key = `dropped-${dropAt}`;
      await sendAndDrop('{"title":"lost answer"}', key, dropAt);
      // A retry may find the first still running: 409, and the client retries once it has finished.
      let r = await s.call('POST', conv, { title: 'lost answer' }, idem(key));
      if (r.status === 409) {
        assert.equal(r.body.error.code, 'idempotency_key_in_use');
        await s.idempotency.settled(APP, key);
        r = await s.call('POST', conv, { title: 'lost answer' }, idem(key));
      }
      assert.equal(r.status, 200);
      assert.equal(r.body.title, 'lost answer');
      assert.equal(await total(), before + 1, 'the retry did not create a second conversation');
      const listed = (await s.call('GET', `${conv}?limit=100`)).body.data.filter(
        (c: { title: string; id: string }) => c.title === 'lost answer' && c.id === r.body.id,
      );
      assert.equal(listed.length, 1);
    });
  }
});

/** The idempotency stage on the file backend's answers, as startParley builds it; closing it closes the answers. */
async function openIdempotency(opts: FileAnswersOptions) {
  const answers = await FileAnswers.open(opts);
  return Object.assign(new IdempotencyService(answers, { now: opts.now }), { close: () => answers.close() });
}

describe('idempotency mechanics (a route the test controls)', () => {
  test('a retry while the first request runs is 409 idempotency_key_in_use; another body then is 422', async () => {
    const fixtures = await loadTenants(FIXTURES_DIR);
    const idempotency = await openIdempotency({ dir: path.join(await tempDir(), 'idempotency') });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let runs = 0;
    const http = createHttpServer({
      routes: [
        {
          method: 'POST',
          pattern: '/apps/:app_id/slow',
          route: {
            idempotent: true,
            handle: async () => {
              runs++;
              started();
              await gate;
              return { done: runs };
            },
          },
        },
      ],
      auth: new AuthService(fixtures),
      logger: pino({ level: 'silent' }),
      idempotency,
    });
    await new Promise<void>((r) => http.server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(http.server.address() as AddressInfo).port}/v1/apps/${APP}/slow`;
    const post = (body: string) =>
      fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': '"slow-1"' },
        body,
      });
    try {
      const first = post('{"a":1}');
      await running;
      const conflict = await post('{"a":1}');
      assert.equal(conflict.status, 409);
      const cb = await conflict.json();
      ReferenceErrorBody.parse(cb);
      assert.equal(cb.error.code, 'idempotency_key_in_use');
      assert.equal(conflict.headers.get('retry-after'), '1');
      assert.equal((await post('{"a":2}')).status, 422);
      release();
      assert.deepEqual(await (await first).json(), { done: 1 });
      const replay = await post('{"a":1}');
      assert.deepEqual(await replay.json(), { done: 1 });
      assert.equal(runs, 1);
    } finally {
      release();
      await http.close();
      await idempotency.close();
    }
  });

  test('past the memory budget the oldest answers are let go, and their keys still never run twice', async () => {
    const fixtures = await loadTenants(FIXTURES_DIR);
    const idempotency = await openIdempotency({ dir: path.join(await tempDir(), 'idempotency'), memoryBytes: 300 });
    let runs = 0;
    const http = createHttpServer({
      routes: [
        {
          method: 'POST',
          pattern: '/apps/:app_id/big',
          route: { idempotent: true, handle: async () => ({ run: ++runs, pad: 'x'.repeat(100) }) },
        },
      ],
      auth: new AuthService(fixtures),
      logger: pino({ level: 'silent' }),
      idempotency,
    });
    await new Promise<void>((r) => http.server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(http.server.address() as AddressInfo).port}/v1/apps/${APP}/big`;
    const post = (key: string) =>
      fetch(url, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'idempotency-key': `"${key}"` } });
    try {
      for (const k of ['k1', 'k2', 'k3', 'k4']) assert.equal((await post(k)).status, 200);
      const oldest = await post('k1');
      assert.equal(oldest.status, 409);
      assert.equal(((await oldest.json()) as any).error.code, 'idempotency_replay_unavailable');
      assert.equal(((await (await post('k4')).json()) as any).run, 4, 'the newest is replayed');
      assert.equal(runs, 4, 'nothing ran twice');
    } finally {
      await http.close();
      await idempotency.close();
    }
  });

  test('keys expire after 24 hours and their old journal segments are deleted', async () => {
    const dir = path.join(await tempDir(), 'idempotency');
    let t = Date.UTC(2026, 10, 22, 10, 30);
    const now = () => t;
    const fixtures = await loadTenants(FIXTURES_DIR);
    let svc = await openIdempotency({ dir, now });
    let runs = 0;
    const http = createHttpServer({
      routes: [{ method: 'POST', pattern: '/apps/:app_id/run', route: { idempotent: true, handle: async () => ({ run: ++runs }) } }],
      auth: new AuthService(fixtures),
      logger: pino({ level: 'silent' }),
      idempotency: { run: (ctx, next) => svc.run(ctx, next) },
    });
    await new Promise<void>((r) => http.server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(http.server.address() as AddressInfo).port}/v1/apps/${APP}/run`;
    const post = async () =>
      (await (await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'idempotency-key': '"day-1"' } })).json()) as {
        run: number;
      };
    try {
      assert.equal((await post()).run, 1);
      t += 23 * 3_600_000;
      assert.equal((await post()).run, 1, 'replayed within 24 h');
      await svc.close();
      svc = await openIdempotency({ dir, now }); // and across a restart
      assert.equal((await post()).run, 1);
      t += 3_600_000;
      assert.equal((await post()).run, 2, 'run again after 24 h');
      // Writing in a new hour drops the segments older than 24 h.
      const segments = (await fs.readdir(dir)).map((n) => Number(n.slice(0, -6)));
      assert.ok(
        segments.every((h) => h >= Math.floor((t - 24 * 3_600_000) / 3_600_000)),
        `old segments remain: ${segments}`,
      );
    } finally {
      await http.close();
      await svc.close();
    }
  });
});

describe('send message and completions with an Idempotency-Key', () => {
  const parse = (text: string) =>
    text
      .split('\n\n')
      .filter((b) => b.startsWith('event: '))
      .map((b) => ({ event: b.split('\n')[0]!.slice(7), data: JSON.parse(b.split('\n')[1]!.slice(6)) }));

  test('a streamed answer replays as the same events, and the conversation keeps one exchange', async () => {
    const id = (await s.call('POST', conv, {})).body.id;
    const body = { message: { content: 'Hello there' }, stream: true };
    const first = await s.call('POST', `${conv}/${id}`, body, idem('stream-1'));
    assert.equal(first.status, 200);
    assert.match(first.headers.get('content-type')!, /^text\/event-stream/);
    const items = (await s.store.readHistory(id)).items.length;
    const again = await s.call('POST', `${conv}/${id}`, body, idem('stream-1'));
    assert.equal(again.status, 200);
    assert.match(again.headers.get('content-type')!, /^text\/event-stream/);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.body, first.body, 'the same events, byte for byte');
    // D-31: the replay names its response as the first answer did.
    assert.match(first.headers.get('parley-response-id') ?? '', /^resp_/);
    assert.equal(again.headers.get('parley-response-id'), first.headers.get('parley-response-id'));
    assert.equal(parse(again.body).at(-1)!.event, 'response.completed');
    assert.equal((await s.store.readHistory(id)).items.length, items, 'no second exchange');
    // The same key asking for JSON instead is another request.
    assert.equal((await s.call('POST', `${conv}/${id}`, { ...body, stream: false }, idem('stream-1'))).status, 422);
  });

  test('JSON send message and completion replay their response', async () => {
    const id = (await s.call('POST', conv, {})).body.id;
    const first = await s.call('POST', `${conv}/${id}`, { message: { content: 'What are credits?' } }, idem('json-1'));
    const again = await s.call('POST', `${conv}/${id}`, { message: { content: 'What are credits?' } }, idem('json-1'));
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers.get('parley-response-id'), first.body.id, 'D-31 on a replay too');
    assert.equal((await s.store.readHistory(id)).responses.length, 1);
    const c1 = await s.call('POST', `/apps/${APP}/completions`, { prompt: 'Summarise billing' }, idem('cmpl-1'));
    const c2 = await s.call('POST', `/apps/${APP}/completions`, { prompt: 'Summarise billing' }, idem('cmpl-1'));
    assert.equal(c1.status, 200);
    assert.deepEqual(c2.body, c1.body);
    assert.equal(c2.headers.get('idempotent-replayed'), 'true');
    assert.equal(c2.headers.get('parley-response-id'), null, 'a completion names no response');
    assert.equal((await s.call('POST', `/apps/${APP}/completions`, { prompt: 'Something else' }, idem('cmpl-1'))).status, 422);
  });

  test('D-30: a retry of a cut stream with the same key continues the same response (joined while it runs, replayed after); nothing runs twice', async () => {
    const slow = 'app_slow';
    const id = (await s.call('POST', `/apps/${slow}/conversations`, {})).body.id;
    const persisted = once(s.responses.events, 'persisted');
    const ctrl = new AbortController();
    const body = { message: { content: 'Tell me a long story about the sea' }, stream: true };
    const res = await fetch(`${s.baseUrl}/apps/${slow}/conversations/${id}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': '"cut-1"' },
      body: JSON.stringify(body),
      signal: ctrl.signal,
    });
    const responseId = res.headers.get('parley-response-id');
    assert.match(responseId ?? '', /^resp_/, 'D-31: the response is named before the body');
    let seen = '';
    const reader = res.body!.getReader();
    while (!seen.includes('response.output_text.delta')) seen += new TextDecoder().decode((await reader.read()).value);
    ctrl.abort();
    // While the reply still runs (app_slow takes seconds), the retry joins it: every event from the first.
    const joined = await s.call('POST', `/apps/${slow}/conversations/${id}`, body, idem('cut-1'));
    assert.equal(joined.status, 200);
    assert.equal(joined.headers.get('parley-response-id'), responseId);
    const events = parse(joined.body);
    assert.equal(events[0]!.event, 'response.created');
    assert.equal(events[0]!.data.id, responseId);
    assert.equal(events.at(-1)!.event, 'response.completed', 'D-34: the cut reply ran to its end');
    assert.deepEqual(
      events.map((e) => e.data.sequence_number),
      events.map((_, i) => i),
      'gapless sequence numbers (D-16)',
    );
    await persisted;
    await s.idempotency.settled(slow, 'cut-1');
    // After its end, the same key replays the same events.
    const replayed = await s.call('POST', `/apps/${slow}/conversations/${id}`, body, idem('cut-1'));
    assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(parse(replayed.body), events);
    const file = await s.store.readHistory(id);
    assert.equal(file.responses.length, 1, 'the retries ran nothing');
    assert.equal(file.responses[0]!.status, 'completed');
  });
});
