// D-94: what a client sends is kept as sent, or refused with 400 and the param: a key the stores
// cannot keep (`__proto__`) and a number beyond the double range are refused on every JSON body.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { APP, startTestServer, type TestServer } from './support/helpers.ts';

let s: TestServer;
let conv: string;
before(async () => {
  s = await startTestServer();
  conv = (await s.call('POST', `/apps/${APP}/conversations`, { title: 'kept' })).body.id;
});
after(() => s.close());

const json = { 'content-type': 'application/json' };
/** The app's conversations and the one conversation as served: what a refused request must leave unchanged. */
const snapshot = async () => ({
  list: (await s.call('GET', `/apps/${APP}/conversations?limit=100`)).body,
  one: (await s.call('GET', `/apps/${APP}/conversations/${conv}`)).body,
});

describe('D-94: a key or a number no store keeps as sent is refused with 400 and its param, and changes nothing', () => {
  const bodies: Array<[string, string, () => string, string, string]> = [
    ['create, metadata', 'POST', () => `/apps/${APP}/conversations`, '{"metadata":{"a":1,"__proto__":{"x":1}}}', 'metadata.__proto__'],
    [
      'create, nested',
      'POST',
      () => `/apps/${APP}/conversations`,
      '{"metadata":{"a":{"b":[{"__proto__":1}]}}}',
      'metadata.a.b.0.__proto__',
    ],
    ['create, the body itself', 'POST', () => `/apps/${APP}/conversations`, '{"__proto__":{"title":"x"}}', '__proto__'],
    ['rename, metadata', 'PATCH', () => `/apps/${APP}/conversations/${conv}`, '{"metadata":{"__proto__":"x"}}', 'metadata.__proto__'],
    [
      'send message',
      'POST',
      () => `/apps/${APP}/conversations/${conv}`,
      '{"message":{"content":"hi"},"metadata":{"__proto__":{}}}',
      'metadata.__proto__',
    ],
    ['create, a number beyond the double range', 'POST', () => `/apps/${APP}/conversations`, '{"metadata":{"n":1e999999}}', 'metadata.n'],
    ['create, a negative one', 'POST', () => `/apps/${APP}/conversations`, '{"metadata":{"n":[1,-1e309]}}', 'metadata.n.1'],
    [
      'send message, one',
      'POST',
      () => `/apps/${APP}/conversations/${conv}`,
      '{"message":{"content":"hi"},"metadata":{"big":2e308}}',
      'metadata.big',
    ],
  ];
  for (const [name, method, url, raw, param] of bodies) {
    test(name, async () => {
      const before = await snapshot();
      const r = await s.call(method, url(), undefined, { raw, headers: json });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.deepEqual([r.body.error.type, r.body.error.code, r.body.error.param], ['invalid_request_error', 'invalid_value', param]);
      assert.ok(r.body.error.message.startsWith(`${param} is `), r.body.error.message);
      assert.deepEqual(await snapshot(), before);
    });
  }

  test('the largest doubles and an ordinary "__proto__" string value are kept as sent', async () => {
    const raw = '{"metadata":{"max":1.7976931348623157e308,"min":-1.7976931348623157e308,"tiny":5e-324,"k":"__proto__"}}';
    const r = await s.call('POST', `/apps/${APP}/conversations`, undefined, { raw, headers: json });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const got = (await s.call('GET', `/apps/${APP}/conversations/${r.body.id}`)).body.metadata;
    assert.deepEqual(got, JSON.parse(raw).metadata);
  });
});
