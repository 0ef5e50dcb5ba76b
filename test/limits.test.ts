// Every limit of §8 and D-1…D-13 at and just past its boundary, and each D-1 code.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LIMITS } from '../src/contract/index.ts';
import { APP, startTestServer, type TestServer } from './support/helpers.ts';
import { ExactConversation, ExactConversationList, ExactErrorBody } from './support/shapes.ts';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const conv = `/apps/${APP}/conversations`;

function assert400(r: { status: number; body: any }, param: string | null, code: string) {
  assert.equal(r.status, 400, JSON.stringify(r.body));
  const { error } = ExactErrorBody.parse(r.body);
  assert.deepEqual([error.type, error.param, error.code], ['invalid_request_error', param, code]);
  // D-1: the message names the field in plain words.
  if (param) assert.ok(error.message.includes(param.split('.').at(-1)!), error.message);
}

const totalConversations = async () => (await s.call('GET', `/apps/${APP}/metrics`)).body.total_conversations as number;

/** Metadata whose compact JSON is exactly `bytes` UTF-8 bytes, padded with `fill` (1 to 4 bytes each). */
function metadataOf(bytes: number, fill = 'x'): Record<string, string> {
  const overhead = Buffer.byteLength(JSON.stringify({ k: '' }));
  const unit = Buffer.byteLength(fill);
  const room = bytes - overhead;
  const v = fill.repeat(Math.floor(room / unit)) + 'x'.repeat(room % unit);
  const m = { k: v };
  assert.equal(Buffer.byteLength(JSON.stringify(m)), bytes);
  return m;
}

describe('D-1 codes', () => {
  test('missing_parameter: PATCH without title (D-13)', async () => {
    const { body: c } = await s.call('POST', conv);
    assert400(await s.call('PATCH', `${conv}/${c.id}`, {}), 'title', 'missing_parameter');
  });

  test('invalid_type: a number where a string belongs', async () => {
    assert400(await s.call('POST', conv, { title: 5 }), 'title', 'invalid_type');
    assert400(await s.call('POST', conv, { external_user_id: true }), 'external_user_id', 'invalid_type');
    assert400(await s.call('POST', conv, { metadata: 'x' }), 'metadata', 'invalid_type');
    assert400(await s.call('POST', conv, { metadata: [1] }), 'metadata', 'invalid_type');
  });

  test('invalid_value: an empty title, an unknown order', async () => {
    assert400(await s.call('POST', conv, { title: '' }), 'title', 'invalid_value');
    assert400(await s.call('GET', `${conv}?order=up`), 'order', 'invalid_value');
  });

  test('unknown_parameter: in a body, in a query, and PATCH fields other than title (D-13)', async () => {
    assert400(await s.call('POST', conv, { title: 'x', colour: 'red' }), 'colour', 'unknown_parameter');
    assert400(await s.call('GET', `${conv}?page=2`), 'page', 'unknown_parameter');
    const { body: c } = await s.call('POST', conv);
    assert400(await s.call('PATCH', `${conv}/${c.id}`, { title: 'x', metadata: {} }), 'metadata', 'unknown_parameter');
  });

  test('a refused request changes nothing', async () => {
    const n = await totalConversations();
    await s.call('POST', conv, { title: '' });
    await s.call('POST', conv, { metadata: metadataOf(LIMITS.metadataBytes + 1) });
    assert.equal(await totalConversations(), n);
  });
});

describe('metadata: 16,384 bytes of compact UTF-8 JSON (D-9)', () => {
  for (const [name, fill] of [
    ['ASCII', 'x'],
    ['2-byte characters', 'é'],
    ['3-byte characters', '€'],
    ['4-byte characters', '😀'],
  ] as const) {
    test(`${name}: 16,384 bytes pass, 16,385 are 400 too_large`, async () => {
      const ok = await s.call('POST', conv, { metadata: metadataOf(LIMITS.metadataBytes, fill) });
      assert.equal(ok.status, 200);
      assert.deepEqual(ExactConversation.parse(ok.body).metadata, metadataOf(LIMITS.metadataBytes, fill));
      assert400(await s.call('POST', conv, { metadata: metadataOf(LIMITS.metadataBytes + 1, fill) }), 'metadata', 'too_large');
    });
  }

  test('the size is of compact JSON: whitespace in the request does not count', async () => {
    const m = metadataOf(LIMITS.metadataBytes);
    const spaced = JSON.stringify({ metadata: m }, null, 8);
    const r = await s.call('POST', conv, undefined, { raw: spaced, headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 200);
  });

  test('null metadata is stored as {}', async () => {
    const r = await s.call('POST', conv, { metadata: null });
    assert.deepEqual(r.body.metadata, {});
  });
});

describe('title: 1 to 256 characters (D-8)', () => {
  test('256 pass, 257 are 400, on create and on update', async () => {
    const ok = await s.call('POST', conv, { title: 't'.repeat(256) });
    assert.equal(ok.status, 200);
    assert400(await s.call('POST', conv, { title: 't'.repeat(257) }), 'title', 'invalid_value');
    assert.equal((await s.call('PATCH', `${conv}/${ok.body.id}`, { title: 'u'.repeat(256) })).status, 200);
    assert400(await s.call('PATCH', `${conv}/${ok.body.id}`, { title: 'u'.repeat(257) }), 'title', 'invalid_value');
    assert400(await s.call('PATCH', `${conv}/${ok.body.id}`, { title: '' }), 'title', 'invalid_value');
  });

  test('characters are code points: 256 emoji pass (512 UTF-16 units), 257 do not', async () => {
    assert.equal((await s.call('POST', conv, { title: '😀'.repeat(256) })).status, 200);
    assert400(await s.call('POST', conv, { title: '😀'.repeat(257) }), 'title', 'invalid_value');
  });
});

describe('external_user_id: 1 to 256 characters (D-10)', () => {
  test('256 pass, 257 are 400, on create and as a list filter', async () => {
    const ok = await s.call('POST', conv, { external_user_id: 'u'.repeat(256) });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.external_user_id, 'u'.repeat(256));
    assert400(await s.call('POST', conv, { external_user_id: 'u'.repeat(257) }), 'external_user_id', 'invalid_value');
    assert400(await s.call('POST', conv, { external_user_id: '' }), 'external_user_id', 'invalid_value');
    const listed = await s.call('GET', `${conv}?external_user_id=${'u'.repeat(256)}`);
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.data.map((c: { id: string }) => c.id),
      [ok.body.id],
    );
    assert400(await s.call('GET', `${conv}?external_user_id=${'u'.repeat(257)}`), 'external_user_id', 'invalid_value');
  });
});

describe('list limit: 1 to 100, default 20, no clamping (§8, D-12)', () => {
  test('0 and 101 are 400; 1 and 100 give at most that many', async () => {
    const fresh = await startTestServer();
    try {
      for (let i = 0; i < 101; i += 25) await Promise.all(Array.from({ length: Math.min(25, 101 - i) }, () => fresh.call('POST', conv)));
      const page = async (q: string) => ExactConversationList.parse((await fresh.call('GET', `${conv}${q}`)).body);
      assert.equal((await page('')).data.length, 20);
      assert.equal((await page('?limit=1')).data.length, 1);
      const hundred = await page('?limit=100');
      assert.equal(hundred.data.length, 100);
      assert.equal(hundred.has_more, true);
      for (const bad of ['0', '101', '-1', '1.5', '1e2', 'abc', '', ' 5', '10000', '+5', '05', '0001', '00100', '100.0']) {
        const r = await fresh.call('GET', `${conv}?limit=${encodeURIComponent(bad)}`);
        assert400(r, 'limit', 'invalid_value');
        assert.equal(
          r.body.error.message,
          `limit must be an integer from 1 to 100, in digits without leading zeros (got ${JSON.stringify(bad)})`,
        );
      }
    } finally {
      await fresh.close();
    }
  });
});

describe('cursors (D-12)', () => {
  test('an unknown cursor is 400 invalid_cursor naming the parameter', async () => {
    assert400(await s.call('GET', `${conv}?after=conv_nope`), 'after', 'invalid_cursor');
    assert400(await s.call('GET', `${conv}?before=conv_nope`), 'before', 'invalid_cursor');
  });

  test("another app's conversation is not a cursor here", async () => {
    const { body: c } = await s.call('POST', '/apps/app_genui/conversations');
    assert400(await s.call('GET', `${conv}?after=${c.id}`), 'after', 'invalid_cursor');
  });

  test('an empty cursor is 400 in plain words naming it (D-1)', async () => {
    for (const field of ['after', 'before']) {
      const r = await s.call('GET', `${conv}?${field}=`);
      assert400(r, field, 'invalid_value');
      assert.equal(r.body.error.message, `${field} must be a conversation id (got an empty value)`);
    }
  });

  test('after and before together are 400', async () => {
    const { body: c } = await s.call('POST', conv);
    const r = await s.call('GET', `${conv}?after=${c.id}&before=${c.id}`);
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'invalid_value');
    assert.ok(['after', 'before'].includes(r.body.error.param));
  });
});
