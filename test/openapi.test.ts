// The published contract (GET /openapi.json): a valid OpenAPI 3.2 document, served without a key, and
// in agreement with the server: every answer below, streamed events included, validates against the
// schema the document gives for its path, method, status and content type.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { createParser } from 'eventsource-parser';
import { publishedDocuments } from '../src/api/routes.ts';
import { errorStatusesOf, eventSchemaId, METHOD_NOT_ALLOWED } from '../src/contract/openapi.ts';
import { STREAM_EVENT_TYPES } from '../src/contract/index.ts';
import { KEY, OTHER_TEAM_KEY, TARGET, startTestServer, type TestServer } from './support/helpers.ts';

const doc = publishedDocuments().data as any;
const DOC_ID = 'https://parley.invalid/openapi.json';
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ ...doc, $id: DOC_ID });

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

function validateAt(pointer: string, value: unknown, what: string): void {
  const validate = ajv.getSchema(`${DOC_ID}#${pointer}`);
  assert.ok(validate, `${what}: no schema at ${pointer}`);
  assert.ok(
    validate(value),
    `${what} does not match ${pointer}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 500)}`,
  );
}

/**
 * The pointer of the response object the document gives for an answer (following a $ref); null for
 * D-3's 405, which no operation lists (the path has no such method) and the document's description states.
 */
function responsePointer(method: string, template: string, status: number): string | null {
  const op = doc.paths[template]?.[method.toLowerCase()];
  if (!op) {
    assert.ok(doc.paths[template] && status === 405, `${method} ${template} is not in the document (answered ${status})`);
    return null;
  }
  const response = op.responses[String(status)];
  assert.ok(response, `${method} ${template} answered ${status}, which the document does not list`);
  return response.$ref ? response.$ref.slice(1) : `/paths/${escapePointer(template)}/${method.toLowerCase()}/responses/${status}`;
}

/** Writes `request` on a fresh socket and returns everything the server sent until it closed. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
  });
}

function parseRaw(text: string): { status: number; json: unknown } {
  const [head, body = ''] = text.split('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head!)?.[1]), json: JSON.parse(body) };
}

interface Answer {
  status: number;
  contentType: string;
  body: unknown;
  events: { event: string; data: string }[];
}

/** Every (operation, status) pair that the server's answers covered. */
const seen = new Set<string>();

describe('GET /openapi.json: the published contract', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(async () => {
    await s.close();
  });

  /** Calls the API and checks the answer against the document; `template` names the path in it. */
  async function call(
    method: string,
    template: string,
    params: Record<string, string>,
    opts: { body?: unknown; raw?: string; key?: string | null; headers?: Record<string, string>; query?: string } = {},
  ): Promise<Answer> {
    const urlPath = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name]!));
    const headers: Record<string, string> = { ...opts.headers };
    const key = opts.key === undefined ? KEY : opts.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let payload = opts.raw;
    if (opts.body !== undefined) {
      payload = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const base = template === '/openapi.json' ? s.baseUrl.replace(/\/v1$/, '') : s.baseUrl;
    const res = await fetch(base + urlPath + (opts.query ?? ''), { method, headers, body: payload });
    const contentType = (res.headers.get('content-type') ?? '').split(';')[0]!;
    const text = await res.text();
    const answer: Answer = { status: res.status, contentType, body: undefined, events: [] };
    const pointer = responsePointer(method, template, res.status);
    const what = `${method} ${template} ${res.status}`;
    seen.add(what);
    if (pointer === null) {
      answer.body = JSON.parse(text);
      validateAt('/components/schemas/Error', answer.body, what);
      const { error } = answer.body as { error: { type: string; code: string } };
      assert.deepEqual([error.type, error.code], [METHOD_NOT_ALLOWED.types[0], METHOD_NOT_ALLOWED.code], what);
      assert.ok(res.headers.get(METHOD_NOT_ALLOWED.header), `${what}: no ${METHOD_NOT_ALLOWED.header} header`);
      assert.match(doc.info.description, new RegExp(`${METHOD_NOT_ALLOWED.status}.*\\b${METHOD_NOT_ALLOWED.code}\\b`));
      return answer;
    }
    // The headers the document says are always there are, with values of their schema.
    const response = pointer
      .split('/')
      .slice(1)
      .reduce((o: any, k) => o[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    for (const [name, header] of Object.entries<any>(response.headers ?? {})) {
      const value = res.headers.get(name);
      if (header.required) assert.ok(value !== null, `${what}: no ${name} header`);
      if (value !== null) validateAt(`${pointer}/headers/${escapePointer(name)}/schema`, value, `${what} header ${name}`);
    }
    if (contentType === 'text/event-stream') {
      const parser = createParser({ onEvent: (e) => answer.events.push({ event: e.event ?? 'message', data: e.data }) });
      parser.feed(text);
      assert.ok(answer.events.length > 0, `${what}: an empty stream`);
      for (const e of answer.events) {
        validateAt(`${pointer}/content/text~1event-stream/itemSchema`, e, `${what} event ${e.event}`);
        const branch = doc.paths[template][method.toLowerCase()].responses['200'].content['text/event-stream'].itemSchema.oneOf.find(
          (b: any) => b.properties.event.const === e.event,
        );
        validateAt(branch.properties.data.contentSchema.$ref.slice(1), JSON.parse(e.data), `${what} event ${e.event} payload`);
      }
    } else {
      assert.equal(contentType, 'application/json', `${what}: content type`);
      answer.body = JSON.parse(text);
      validateAt(`${pointer}/content/application~1json/schema`, answer.body, what);
    }
    return answer;
  }

  test('the document is valid OpenAPI 3.2 (and the validator does reject a broken one)', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    assert.deepEqual(result, { valid: true });
    assert.equal(validator.version, '3.2');
    const broken = structuredClone(doc);
    broken.paths['/apps/{app_id}/config'].get.responses = 'none';
    assert.equal((await new Validator().validate(broken)).valid, false);
  });

  test('it documents every event of §6 and an error answer for every status an operation can give', () => {
    for (const type of STREAM_EVENT_TYPES) assert.ok(doc.components.schemas[eventSchemaId(type)], type);
    const send = doc.paths['/apps/{app_id}/conversations/{conversation_id}'].post;
    assert.deepEqual(
      Object.keys(send.responses).sort(),
      ['200', ...errorStatusesOf({ body: 'x', counted: true, idempotent: true })].sort(),
    );
    assert.ok(send.responses['200'].content['text/event-stream'].itemSchema.oneOf.length === STREAM_EVENT_TYPES.length);
  });

  test('served outside /v1, without a key, as built; other methods are 405', async () => {
    const r = await call('GET', '/openapi.json', {}, { key: null });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, doc);
    const post = await call('POST', '/openapi.json', {}, { key: null, body: {} });
    assert.deepEqual([post.status, (post.body as any).error.code], [405, 'method_not_allowed']);
    // The versioned API still needs its key.
    assert.equal((await call('GET', '/apps/{app_id}/config', { app_id: TARGET.app_id }, { key: null })).status, 401);
  });

  test('whatever body a client sends, the answer is one the document describes (fast-check)', async () => {
    const app = TARGET.app_id;
    const created = await call('POST', '/apps/{app_id}/conversations', { app_id: app }, { body: {} });
    const conversationId = (created.body as any).id as string;
    const field = fc.oneof(
      fc.constantFrom('title', 'message', 'content', 'prompt', 'stream', 'metadata', 'external_user_id', 'role', 'fast'),
      fc.string(),
    );
    const value = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.record({ content: fc.oneof(fc.string(), fc.jsonValue({ maxDepth: 1 })) }));
    const body = fc.oneof(fc.dictionary(field, value, { maxKeys: 3 }), fc.jsonValue({ maxDepth: 2 }));
    const target = fc.constantFrom(
      ['POST', '/apps/{app_id}/conversations'],
      ['PATCH', '/apps/{app_id}/conversations/{conversation_id}'],
      ['POST', '/apps/{app_id}/conversations/{conversation_id}'],
      ['POST', '/apps/{app_id}/completions'],
    );
    await fc.assert(
      fc.asyncProperty(target, body, async ([method, template], b) => {
        await call(
          method!,
          template!,
          { app_id: app, conversation_id: conversationId },
          { raw: JSON.stringify(b), headers: { 'content-type': 'application/json' } },
        );
      }),
      { numRuns: 80 },
    );
  });

  test('every answer of the server validates against the document', async () => {
    const app = TARGET.app_id;
    const conversations = '/apps/{app_id}/conversations';
    const conversation = '/apps/{app_id}/conversations/{conversation_id}';
    const completions = '/apps/{app_id}/completions';

    // §4.1 and its errors (D-1, D-2, D-4, D-6).
    const created = await call(
      'POST',
      conversations,
      { app_id: app },
      { body: { title: 'Contract', metadata: { plan: 'pro' }, external_user_id: 'u1' } },
    );
    assert.equal(created.status, 200);
    const id = (created.body as any).id as string;
    assert.equal((await call('POST', conversations, { app_id: app }, { body: { titel: 'x' } })).status, 400);
    assert.equal((await call('POST', conversations, { app_id: app }, { raw: 'x', headers: { 'content-type': 'text/plain' } })).status, 415);
    assert.equal(
      (
        await call(
          'POST',
          conversations,
          { app_id: app },
          { raw: JSON.stringify({ title: 'x'.repeat(1_100_000) }), headers: { 'content-type': 'application/json' } },
        )
      ).status,
      413,
    );
    assert.equal((await call('POST', conversations, { app_id: app }, { body: {}, key: 'sk_live_nope' })).status, 401);
    assert.equal((await call('POST', conversations, { app_id: app }, { body: {}, key: TARGET.publishable_key })).status, 403);
    assert.equal((await call('POST', conversations, { app_id: TARGET.apps.other_team! }, { body: {} })).status, 403);
    assert.equal((await call('POST', conversations, { app_id: 'app_missing' }, { body: {} })).status, 404);
    // Idempotency-Key: the same key with another body is 422.
    const idem = { 'idempotency-key': '"openapi-1"' };
    assert.equal((await call('POST', conversations, { app_id: app }, { body: { title: 'a' }, headers: idem })).status, 200);
    assert.equal((await call('POST', conversations, { app_id: app }, { body: { title: 'b' }, headers: idem })).status, 422);

    // §4.2–4.5.
    assert.equal((await call('GET', conversations, { app_id: app }, { query: '?limit=2&order=asc' })).status, 200);
    assert.equal((await call('GET', conversations, { app_id: app }, { query: '?limit=0' })).status, 400);
    assert.equal((await call('PUT', conversations, { app_id: app }, { body: {} })).status, 405);
    assert.equal((await call('PATCH', conversation, { app_id: app, conversation_id: id }, { body: { title: 'Renamed' } })).status, 200);
    assert.equal((await call('PATCH', conversation, { app_id: app, conversation_id: id }, { body: {} })).status, 400);

    // §4.6: JSON and streams, with function calls (knowledge base) and data_spec patches (generative UI).
    const sendTo = async (appId: string, content: string, stream: boolean) => {
      const c = await call('POST', conversations, { app_id: appId }, { body: {} });
      const conversationId = (c.body as any).id as string;
      const r = await call(
        'POST',
        conversation,
        { app_id: appId, conversation_id: conversationId },
        { body: { message: { content }, stream } },
      );
      assert.equal(r.status, 200);
      return { conversationId, r };
    };
    const json = await sendTo(app, 'Hello there', false);
    assert.equal((json.r.body as any).status, 'completed');
    const knowledge = await sendTo(TARGET.apps.knowledge_base!, 'How do I rotate an API key?', true);
    const genui = await sendTo(TARGET.apps.generative_ui!, 'I would like to book an appointment for Friday', true);
    await sendTo(TARGET.apps.generative_ui!, 'I would like to book an appointment for Friday', false);
    await sendTo(TARGET.apps.knowledge_base!, 'How do I rotate an API key?', false);
    const kinds = new Set([...knowledge.r.events, ...genui.r.events].map((e) => e.event));
    for (const type of [
      'response.function_call.start',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.data_spec',
      'response.completed',
    ]) {
      assert.ok(kinds.has(type), `no ${type} event was checked`);
    }
    // Resumable responses (D-32, D-33): the look-up, the resume (events with id lines), the cancel, a 404.
    const rp = '/apps/{app_id}/responses/{response_id}';
    const rparams = { app_id: TARGET.apps.knowledge_base!, response_id: JSON.parse(knowledge.r.events[0]!.data).id as string };
    assert.equal((await call('GET', rp, rparams)).status, 200);
    assert.equal((await call('GET', `${rp}/events`, rparams, { query: '?starting_after=1' })).status, 200);
    assert.equal((await call('POST', `${rp}/cancel`, rparams)).status, 200);
    assert.equal((await call('GET', rp, { app_id: app, response_id: 'resp_missing' })).status, 404);
    // D-14: items of every kind.
    assert.equal(
      (await call('GET', conversation, { app_id: TARGET.apps.knowledge_base!, conversation_id: knowledge.conversationId })).status,
      200,
    );
    assert.equal(
      (await call('GET', conversation, { app_id: TARGET.apps.generative_ui!, conversation_id: genui.conversationId })).status,
      200,
    );
    assert.equal(
      (await call('POST', conversation, { app_id: app, conversation_id: id }, { body: { message: { content: 'x', role: 'system' } } }))
        .status,
      400,
    );
    assert.equal(
      (await call('POST', conversation, { app_id: TARGET.apps.no_agent!, conversation_id: id }, { body: { message: { content: 'x' } } }))
        .status,
      403,
    );
    assert.equal(
      (await call('POST', conversation, { app_id: TARGET.apps.inactive!, conversation_id: id }, { body: { message: { content: 'x' } } }))
        .status,
      403,
    );

    // §4.7: JSON, a stream, and both ways of failing (D-17).
    assert.equal((await call('POST', completions, { app_id: app }, { body: { prompt: 'Write a haiku' } })).status, 200);
    assert.equal((await call('POST', completions, { app_id: app }, { body: { prompt: 'Write a haiku', stream: true } })).status, 200);
    assert.equal(((await call('POST', completions, { app_id: 'app_broken' }, { body: { prompt: 'Hi' } })).body as any).status, 'failed');
    const failed = await call(
      'POST',
      completions,
      { app_id: 'app_faulty' },
      { body: { prompt: 'Hi there, write something', stream: true } },
    );
    assert.equal(failed.events.at(-1)!.event, 'response.failed');
    assert.equal((await call('POST', completions, { app_id: app }, { body: { prompt: '' } })).status, 400);

    // §4.8, §4.9, and D-11: a deleted conversation is gone.
    assert.equal((await call('GET', '/apps/{app_id}/config', { app_id: app })).status, 200);
    assert.equal((await call('GET', '/apps/{app_id}/metrics', { app_id: app })).status, 200);
    // D-125: a request with a test id, then its test run (and an unknown one's 404).
    const testRun = '/apps/{app_id}/test-runs/{test_id}';
    assert.equal((await call('GET', '/apps/{app_id}/config', { app_id: app }, { headers: { 'parley-test-id': 'openapi-1' } })).status, 200);
    assert.equal((await call('GET', testRun, { app_id: app, test_id: 'openapi-1' })).status, 200);
    assert.equal((await call('GET', testRun, { app_id: app, test_id: 'openapi-none' })).status, 404);
    assert.equal((await call('DELETE', conversation, { app_id: app, conversation_id: id })).status, 200);
    assert.equal((await call('GET', conversation, { app_id: app, conversation_id: id })).status, 404);
    // The other team's key cannot reach this app (403) whatever the path.
    assert.equal((await call('GET', conversation, { app_id: app, conversation_id: id }, { key: OTHER_TEAM_KEY })).status, 403);

    // D-23: a limited app's plan refuses with 429; D-110: a create counts and is refused too (the
    // document's rate-limit headers are required on both answers, and checked by call()).
    const rateLimited = { app_id: TARGET.apps.rate_limited! };
    assert.equal((await call('POST', conversations, rateLimited, { body: {} })).status, 200);
    let limited: Answer | undefined;
    for (let i = 0; i < 60 && limited?.status !== 429; i++) {
      limited = await call('POST', completions, rateLimited, { body: { prompt: 'Hi' } });
    }
    assert.equal(limited!.status, 429);
    assert.equal((await call('POST', conversations, rateLimited, { body: {} })).status, 429);

    // Idempotency-Key: the same key while the first request still runs is 409 (the first stream is under
    // way for certain once its first event has arrived).
    const slow = await fetch(`${s.baseUrl}/apps/app_slow/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': '"openapi-slow"' },
      body: JSON.stringify({ prompt: 'Write a long story', stream: true }),
    });
    const reader = slow.body!.getReader();
    await reader.read();
    try {
      const busy = await call(
        'POST',
        completions,
        { app_id: 'app_slow' },
        { body: { prompt: 'Write a long story', stream: true }, headers: { 'idempotency-key': '"openapi-slow"' } },
      );
      assert.deepEqual([busy.status, (busy.body as any).error.code], [409, 'idempotency_key_in_use']);
    } finally {
      await reader.cancel();
    }

    // Answers given before routing, to any path: the document lists them on every operation.
    const expect = parseRaw(
      await rawExchange(s.port, `GET /v1/apps/${app}/config HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nAuthorization: Bearer ${KEY}\r\n\r\n`),
    );
    assert.equal(expect.status, 417);
    validateAt(`${responsePointer('GET', '/apps/{app_id}/config', 417)}/content/application~1json/schema`, expect.json, 'GET config 417');
    const long = parseRaw(await rawExchange(s.port, `GET /v1/apps/${app}/config?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`));
    assert.equal(long.status, 431);
    validateAt(`${responsePointer('GET', '/apps/{app_id}/config', 431)}/content/application~1json/schema`, long.json, 'GET config 431');
    const garbled = parseRaw(await rawExchange(s.port, `GET /v1/apps/${app}/config HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n`));
    assert.equal(garbled.status, 400);
    validateAt(
      `${responsePointer('GET', '/apps/{app_id}/config', 400)}/content/application~1json/schema`,
      garbled.json,
      'GET config 400 (malformed)',
    );

    // Every operation of the document was answered with a 200 and checked.
    for (const [template, item] of Object.entries<any>(doc.paths)) {
      for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
        if (item[method])
          assert.ok(seen.has(`${method.toUpperCase()} ${template} 200`), `${method.toUpperCase()} ${template}: no 200 was checked`);
      }
    }
  });
});
