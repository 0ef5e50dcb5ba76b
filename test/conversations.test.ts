// Conversations over HTTP (§4.1–4.5, D-7–D-14), validated against the contract.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ReferenceConversation, ReferenceConversationList, ReferenceConversationWithItems, ReferenceErrorBody, DeletionResult } from '../src/contract/index.ts';
import { APP, startTestServer, type TestServer } from './helpers.ts';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const base = `/apps/${APP}/conversations`;

describe('create conversation (§4.1)', () => {
  test('defaults: title null, generated_title {}, metadata {}, external_user_id null (D-8, D-9, D-10)', async () => {
    const r = await s.call('POST', base);
    assert.equal(r.status, 200);
    const c = ReferenceConversation.parse(r.body);
    assert.match(c.id, /^conv_[0-9a-f]{24}$/);
    assert.deepEqual([c.title, c.generated_title, c.metadata, c.external_user_id], [null, {}, {}, null]);
  });

  test('keeps the fields it was given', async () => {
    const r = await s.call('POST', base, { title: 'Billing', external_user_id: 'user-1', metadata: { plan: 'pro' } });
    assert.equal(r.status, 200);
    assert.equal(r.body.title, 'Billing');
    assert.equal(r.body.external_user_id, 'user-1');
    assert.deepEqual(r.body.metadata, { plan: 'pro' });
  });

  test('an unknown field is 400 unknown_parameter and creates nothing (D-1)', async () => {
    const before = (await s.call('GET', `/apps/${APP}/metrics`)).body.total_conversations;
    const r = await s.call('POST', base, { titel: 'x' });
    assert.equal(r.status, 400);
    ReferenceErrorBody.parse(r.body);
    assert.deepEqual([r.body.error.type, r.body.error.param, r.body.error.code], ['invalid_request_error', 'titel', 'unknown_parameter']);
    assert.equal((await s.call('GET', `/apps/${APP}/metrics`)).body.total_conversations, before);
  });
});

describe('get, update, delete (§4.3–4.5)', () => {
  test('round trip, then 404 after the soft delete (D-11)', async () => {
    const { body: c } = await s.call('POST', base, { title: 'Old' });
    const got = await s.call('GET', `${base}/${c.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(ReferenceConversationWithItems.parse(got.body).items, []);

    const renamed = await s.call('PATCH', `${base}/${c.id}`, { title: 'New' });
    assert.equal(renamed.status, 200);
    assert.equal(ReferenceConversation.parse(renamed.body).title, 'New');
    const cleared = await s.call('PATCH', `${base}/${c.id}`, { title: null });
    assert.equal(cleared.body.title, null);

    const del = await s.call('DELETE', `${base}/${c.id}`);
    assert.equal(del.status, 200);
    assert.deepEqual(DeletionResult.parse(del.body), { id: c.id, object: 'conversation', deleted: true });
    for (const [m, b] of [['GET'], ['PATCH', { title: 'x' }], ['DELETE']] as const) {
      const r = await s.call(m, `${base}/${c.id}`, b);
      assert.equal(r.status, 404, `${m} after delete`);
      assert.equal(r.body.error.type, 'not_found');
    }
  });
});

describe('list (§4.2, D-12)', () => {
  test('a walk by last_id visits every conversation once, in both orders', async () => {
    const fresh = await startTestServer();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) ids.push((await fresh.call('POST', base)).body.id);
      for (const order of ['asc', 'desc'] as const) {
        const seen: string[] = [];
        let cursor: string | null = null;
        for (;;) {
          const q: string = `?limit=3&order=${order}` + (cursor ? `&after=${cursor}` : '');
          const page = ReferenceConversationList.parse((await fresh.call('GET', base + q)).body);
          seen.push(...page.data.map((c) => c.id));
          if (!page.has_more) break;
          cursor = page.last_id;
        }
        assert.deepEqual(seen, order === 'asc' ? ids : [...ids].reverse());
      }
    } finally {
      await fresh.close();
    }
  });
});
