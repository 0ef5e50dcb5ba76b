// Hostile and malformed input (D-1…D-5), property-based: whatever arrives in a body, a query, a header
// or a path, the answer is never a 500, every failure is the error object, and a rejected request
// changes nothing in the store.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { ReferenceConversationList, ReferenceErrorBody } from '../../src/contract/index.ts';
import { APP, KEY, OTHER_TEAM_KEY, TARGET, startTestServer, type TestServer } from '../support/helpers.ts';
import { rawRequest, snapshot, type RawResponse } from '../support/raw-http.ts';

const RUNS = Number(process.env.FC_RUNS ?? 60);
const OTHER_APP = TARGET.apps.other_team!;
const SAME_TEAM_APP = TARGET.apps.generative_ui!;

let s: TestServer;
let mine: string; // a live conversation of APP
let deleted: string; // a soft-deleted one of APP
let theirs: string; // a conversation of another team's app
let sibling: string; // a conversation of another app of the same team
/** Endpoints whose route is served (send message and completions arrive with the agent). */
const BODY_ENDPOINTS: BodyEndpoint[] = [];
let canSend = false;

/** Routing comes before authentication, so a route that exists answers a keyless request with 401. */
async function served(method: string, path: string): Promise<boolean> {
  return (await rawRequest(s.port, method, path)).status === 401;
}

before(async () => {
  s = await startTestServer();
  mine = (await s.call('POST', `/apps/${APP}/conversations`, { title: 'mine', metadata: { a: 1 } })).body.id;
  deleted = (await s.call('POST', `/apps/${APP}/conversations`, { title: 'gone' })).body.id;
  await s.call('DELETE', `/apps/${APP}/conversations/${deleted}`);
  theirs = (await s.call('POST', `/apps/${OTHER_APP}/conversations`, { title: 'theirs' }, { key: OTHER_TEAM_KEY })).body.id;
  sibling = (await s.call('POST', `/apps/${SAME_TEAM_APP}/conversations`, { title: 'sibling' })).body.id;
  for (const ep of ALL_BODY_ENDPOINTS) if (await served(ep.method, ep.path())) BODY_ENDPOINTS.push(ep);
  canSend = BODY_ENDPOINTS.some((ep) => ep.name === 'send message');
});
after(() => s.close());

const APPS = [APP, OTHER_APP, SAME_TEAM_APP];
const auth = { authorization: `Bearer ${KEY}` };

/** The answer to anything: no 5xx, and any failure is a complete error object of the right family. */
function assertWellFormed(r: RawResponse, what: string): void {
  assert.ok(r.status < 500, `${what}: got ${r.status} ${r.text.slice(0, 200)}`);
  assert.ok(r.headers['x-request-id'], `${what}: no request id`);
  if (r.status >= 400) {
    const body = ReferenceErrorBody.safeParse(r.json);
    assert.ok(body.success, `${what}: not an error object: ${r.text.slice(0, 200)}`);
    assert.doesNotMatch(r.text, /at .*\.ts:\d+|node:internal|Error:/, `${what}: internals leaked`);
    if (r.status === 400 || r.status === 413 || r.status === 415 || r.status === 405)
      assert.equal(r.json.error.type, 'invalid_request_error');
  }
}

function assertNotPolluted(): void {
  const probe = {} as Record<string, unknown>;
  assert.equal(probe.polluted, undefined, 'Object.prototype was polluted');
  assert.equal(probe.title, undefined, 'Object.prototype was polluted');
}

// --- generators -------------------------------------------------------------------------------

const oddStrings = fc.constantFrom(
  '\ud800', // lone high surrogate
  '\udfff', // lone low surrogate
  'a\ud83d', // a surrogate pair cut in half
  '\u0000',
  '\u202e\u200b',
  '𝕏'.repeat(300), // 300 characters, 600 UTF-16 units
  'x'.repeat(40_000),
  ' ',
  '',
  '42',
  '1e3',
  '-1',
  'true',
  'null',
  '{}',
  '__proto__',
);
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  oddStrings,
  fc.integer().map(String), // numbers as strings
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);
const fieldName = fc.oneof(
  fc.constantFrom('title', 'metadata', 'external_user_id', 'message', 'stream', 'prompt', 'role', 'content', 'fast', 'knowledge_search'),
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty'),
  fc.string({ maxLength: 12 }), // unknown fields
);
/** Objects written as text, so `__proto__` stays an own key and duplicate keys survive. */
const objectText = fc
  .array(fc.tuple(fieldName, hostileValue), { maxLength: 5 })
  .map((pairs) => `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',')}}`);
const fixedBodies = fc.constantFrom(
  '{"__proto__":{"polluted":true,"title":"x"}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"metadata":{"__proto__":{"polluted":true}}}',
  '{"title":"a","title":7}',
  '{"title":"a","title":"b"}',
  '{"title":"\\ud800"}',
  '{"title":"\\udc00x"}',
  '{"message":{"content":"\\ud800"}}',
  '{"metadata":"{}"}',
  '{"metadata":[]}',
  '{"title":123}',
  '{"title":"123"}',
  '{"message":"hello"}',
  '{"message":{"content":"hi","role":"assistant"}}',
  '{"stream":"true"}',
  'null',
  '[]',
  '""',
  '0',
  '{',
  '{"title":',
  '\ufeff{}',
  '{"title":"x"} trailing',
  '{"title":"x"}{"title":"y"}',
  '{"a":1e999999}',
);
const deepArray = fc.integer({ min: 60, max: 100_000 }).map((n) => '['.repeat(n) + ']'.repeat(n));
const deepMetadata = fc.integer({ min: 60, max: 5_000 }).map((n) => `{"metadata":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`);
const hostileBody: fc.Arbitrary<string | Buffer> = fc.oneof(
  objectText,
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 60 }),
  fixedBodies,
  deepArray,
  deepMetadata,
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => Buffer.from(b)), // mostly invalid UTF-8
  fc.constantFrom(
    Buffer.from([0x7b, 0x22, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    Buffer.from([0xc3, 0x28]),
    Buffer.from('{"title":"\xed\xa0\x80"}', 'latin1'),
  ),
);
const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/merge-patch+json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  undefined,
);

/** `counted`: the route counts against the rate limit before validating (D-4, D-23, D-27). */
type BodyEndpoint = { name: string; method: string; path: () => string; counted?: boolean };
const ALL_BODY_ENDPOINTS: BodyEndpoint[] = [
  // D-27: creating a conversation counts too.
  { name: 'create conversation', method: 'POST', path: () => `/v1/apps/${APP}/conversations`, counted: true },
  { name: 'update conversation', method: 'PATCH', path: () => `/v1/apps/${APP}/conversations/${mine}` },
  { name: 'send message', method: 'POST', path: () => `/v1/apps/${APP}/conversations/${mine}`, counted: true },
  { name: 'create completion', method: 'POST', path: () => `/v1/apps/${APP}/completions`, counted: true },
];

// --- properties -------------------------------------------------------------------------------

describe('hostile bodies', () => {
  test('every endpoint with a body: no 500, an error object, and nothing changed by a rejection', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...BODY_ENDPOINTS), hostileBody, contentType, async (ep, body, type) => {
        const before = await snapshot(s, APPS, { counted: ep.counted });
        const headers: Record<string, string> = { ...auth };
        if (type) headers['content-type'] = type;
        const r = await rawRequest(s.port, ep.method, ep.path(), { headers, body });
        assertWellFormed(r, `${ep.name} ${String(body).slice(0, 80)}`);
        assertNotPolluted();
        if (r.status >= 400)
          assert.equal(
            await snapshot(s, APPS, { counted: ep.counted }),
            before,
            `${ep.name}: a rejected request (${r.status}) changed the data`,
          );
      }),
      { numRuns: RUNS },
    );
  });

  test('a body over 1 MiB is 413 body_too_large and changes nothing (D-2)', async () => {
    const before = await snapshot(s, APPS, { counted: true });
    for (const ep of BODY_ENDPOINTS) {
      const r = await rawRequest(s.port, ep.method, ep.path(), {
        headers: { ...auth, 'content-type': 'application/json' },
        body: `{"title":"${'x'.repeat(1_100_000)}"}`,
      });
      assertWellFormed(r, ep.name);
      assert.equal(r.status, 413);
      assert.equal(r.json.error.code, 'body_too_large');
    }
    assert.equal(await snapshot(s, APPS, { counted: true }), before);
  });
});

describe('hostile queries', () => {
  const key = fc.oneof(
    fc.constantFrom('limit', 'after', 'before', 'order', 'external_user_id', '__proto__', 'constructor'),
    fc.string({ maxLength: 8 }),
  );
  const value = fc.oneof(
    fc.constantFrom(
      '0',
      '1',
      '100',
      '101',
      '-1',
      '1.5',
      '1e1',
      '05',
      '%205',
      '+5',
      '0x10',
      '99999999999999999999',
      'asc',
      'desc',
      'ASC',
      '',
      '%',
      '%zz',
      '%00',
      '%2F',
    ),
    fc.string({ maxLength: 20 }).map(encodeURIComponent),
    fc.constantFrom('conv_', 'mine', 'deleted', 'theirs', 'sibling'),
  );
  test("list: 200 with a valid page or a 400 error object, never another app's conversation", async () => {
    const ids = new Map(Object.entries({ mine, deleted, theirs, sibling }));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(key, value), { maxLength: 4 }), async (pairs) => {
        const q = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${ids.get(v) ?? v}`).join('&');
        const r = await rawRequest(s.port, 'GET', `/v1/apps/${APP}/conversations?${q}`, { headers: auth });
        assertWellFormed(r, `?${q}`);
        assert.ok(r.status === 200 || r.status === 400, `?${q}: ${r.status}`);
        if (r.status === 200) {
          for (const c of ReferenceConversationList.parse(r.json).data) assert.equal((await s.store.getConversation(c.id))?.app_id, APP);
        }
        if (pairs.some(([k, v]) => (k === 'after' || k === 'before') && (v === 'theirs' || v === 'sibling'))) {
          assert.equal(r.status, 400, "another app's conversation is never a cursor here");
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe('hostile headers', () => {
  const authorization = fc.constantFrom(
    `Bearer ${KEY}`,
    `bearer ${KEY}`,
    `Bearer  ${KEY}`,
    `Bearer ${KEY} `,
    `Bearer ${KEY}x`,
    `Bearer ${KEY.slice(0, -1)}`,
    `Basic ${Buffer.from(`${KEY}:`).toString('base64')}`,
    'Bearer',
    'Bearer ',
    '',
    `Bearer ${KEY}, Bearer ${OTHER_TEAM_KEY}`,
    `Bearer ${OTHER_TEAM_KEY}`,
    `Bearer ${TARGET.publishable_key}`,
    `Bearer ${'k'.repeat(8_000)}`,
    'Bearer sk_live_\u00fc\u00ff',
    KEY,
  );
  /** Method, path, body, and whether the route is counted (D-4: a later rejection still appended its count). */
  const endpoint = fc.constantFrom(
    ['GET', () => `/v1/apps/${APP}/conversations`],
    ['GET', () => `/v1/apps/${APP}/conversations/${mine}`],
    ['DELETE', () => `/v1/apps/${APP}/conversations/${theirs}`],
    ['PATCH', () => `/v1/apps/${APP}/conversations/${mine}`, '{"title":"renamed"}'],
    ['POST', () => `/v1/apps/${APP}/conversations`, '{"title":"renamed"}', true],
    ['POST', () => `/v1/apps/${APP}/conversations/${mine}`, '{"message":{"content":"hello"}}', true],
    ['POST', () => `/v1/apps/${APP}/completions`, '{"prompt":"hello"}', true],
    ['GET', () => `/v1/apps/${APP}/config`],
    ['GET', () => `/v1/apps/${APP}/metrics`],
  ) as fc.Arbitrary<[string, () => string, string?, boolean?]>;
  const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 });
  const idempotencyKey = fc.option(
    fc.oneof(
      fc.constantFrom('"fuzz-key"', 'fuzz-token', '', '"', '""', '"é"', `"${'k'.repeat(300)}"`, '"a\\"b"', '"a\\x"', '*', '"a", "b"'),
      printable,
      printable.map((x) => JSON.stringify(x)),
    ),
  );
  test('any Authorization, Content-Type, Idempotency-Key and extra header: 2xx for the real key only, an error object otherwise', async () => {
    await fc.assert(
      fc.asyncProperty(
        endpoint,
        authorization,
        contentType,
        fc.boolean(),
        idempotencyKey,
        async ([method, path, body, counted], a, type, twice, idem) => {
          const before = await snapshot(s, APPS, { counted });
          const headers: Record<string, string | string[]> = {
            authorization: twice ? [a, a] : a,
            'x-forwarded-for': '10.0.0.1',
            'accept-encoding': 'gzip, br',
          };
          if (type) headers['content-type'] = type;
          if (idem !== null) headers['idempotency-key'] = idem;
          const r = await rawRequest(s.port, method, path(), { headers, body });
          assertWellFormed(r, `${method} ${path()} [${a.slice(0, 40)}]`);
          if (r.status < 300)
            assert.ok(
              a === `Bearer ${KEY}` || a === `bearer ${KEY}` || a === `Bearer  ${KEY}` || a === `Bearer ${KEY} `,
              `accepted ${a.slice(0, 60)}`,
            );
          if (r.status >= 400) assert.equal(await snapshot(s, APPS, { counted }), before);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('hostile paths', () => {
  const segment = fc.oneof(
    fc.constantFrom(
      '%2F',
      '%2f',
      '..',
      '.',
      '%2e%2e',
      '%2E',
      '%00',
      '%',
      '%zz',
      '%252F',
      '%5C',
      '..%2F..%2Fmetrics',
      'conv_%2F..',
      ';',
      '%3B',
      '*',
      '~',
      '%20',
    ),
    fc.constantFrom('MINE', 'THEIRS', 'SIBLING', 'DELETED'),
    fc.string({ maxLength: 12 }).map(encodeURIComponent),
  );
  const method = fc.constantFrom('GET', 'PATCH', 'DELETE', 'POST', 'PUT', 'OPTIONS', 'HEAD');
  test("any id, any encoding, any method: never a 500, never another app's data, nothing changed", async () => {
    const ids = new Map(Object.entries({ MINE: mine, THEIRS: theirs, SIBLING: sibling, DELETED: deleted }));
    await fc.assert(
      fc.asyncProperty(method, fc.array(segment, { minLength: 1, maxLength: 3 }), fc.boolean(), async (m, segs, appSegment) => {
        const tail = segs.map((x) => ids.get(x) ?? x).join(appSegment ? '' : '/');
        const path = appSegment ? `/v1/apps/${tail}/conversations` : `/v1/apps/${APP}/conversations/${tail}`;
        // A POST to a conversation is send message, counted before its 404 (D-4).
        const counted = m === 'POST';
        const before = await snapshot(s, APPS, { counted });
        const body = m === 'POST' || m === 'PATCH' ? '{"title":"x"}' : undefined;
        const r = await rawRequest(s.port, m, path, { headers: { ...auth, 'content-type': 'application/json' }, body });
        if (m !== 'HEAD') assertWellFormed(r, `${m} ${path}`);
        else assert.ok(r.status < 500);
        const touched = segs.includes('THEIRS') || segs.includes('SIBLING') || segs.includes('DELETED');
        if (touched) assert.ok(r.status >= 400, `${m} ${path} reached a conversation it must not: ${r.status}`);
        if (r.status === 200 && r.json?.id) assert.equal((await s.store.getConversation(r.json.id))?.app_id, APP);
        if (r.status >= 400) assert.equal(await snapshot(s, APPS, { counted }), before);
      }),
      { numRuns: RUNS },
    );
  });
});

describe("one app can never reach another app's conversations", () => {
  test('paths, cursors and metrics with foreign ids', async () => {
    const before = await snapshot(s, APPS, { counted: canSend });
    const metrics = (await s.call('GET', `/apps/${APP}/metrics`)).body;
    for (const foreign of [theirs, sibling]) {
      const attempts: Array<readonly [string, unknown?]> = [['GET'], ['PATCH', { title: 'hijacked' }], ['DELETE']];
      if (canSend) attempts.push(['POST', { message: { content: 'hi' } }]);
      for (const [m, body] of attempts) {
        const r = await s.call(m, `/apps/${APP}/conversations/${foreign}`, body);
        assert.equal(r.status, 404, `${m} of a foreign conversation`);
        ReferenceErrorBody.parse(r.body);
        assert.doesNotMatch(JSON.stringify(r.body), /hijacked|theirs|sibling/);
      }
      for (const cursor of ['after', 'before']) {
        const r = await s.call('GET', `/apps/${APP}/conversations?${cursor}=${foreign}`);
        assert.equal(r.status, 400);
        assert.equal(r.body.error.code, 'invalid_cursor');
      }
    }
    // The other team's key on this app, and this key on theirs.
    assert.equal((await s.call('GET', `/apps/${APP}/conversations/${mine}`, undefined, { key: OTHER_TEAM_KEY })).status, 403);
    assert.equal((await s.call('GET', `/apps/${OTHER_APP}/conversations/${theirs}`)).status, 403);
    assert.equal((await s.call('GET', `/apps/${OTHER_APP}/metrics`)).status, 403);
    const list = await s.call('GET', `/apps/${APP}/conversations?limit=100`);
    assert.ok(list.body.data.every((c: { id: string }) => c.id !== theirs && c.id !== sibling));
    assert.deepEqual((await s.call('GET', `/apps/${APP}/metrics`)).body, metrics);
    assert.equal(await snapshot(s, APPS, { counted: canSend }), before);
  });
});
