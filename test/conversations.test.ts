// Conversations over HTTP (§4.1–4.5, D-7–D-14), validated against the contract.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { APP, startTestServer, type TestServer } from './support/helpers.ts';
import {
  ExactConversation,
  ExactConversationList,
  ExactConversationWithItems,
  ExactDeletionResult,
  ExactErrorBody,
} from './support/shapes.ts';

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
    const c = ExactConversation.parse(r.body);
    assert.match(c.id, /^conv_[0-9a-f]{24}$/);
    assert.deepEqual([c.title, c.generated_title, c.metadata, c.external_user_id], [null, {}, {}, null]);
  });

  test('keeps the fields it was given', async () => {
    const r = await s.call('POST', base, { title: 'Billing', external_user_id: 'user-1', metadata: { plan: 'pro' } });
    assert.equal(r.status, 200);
    ExactConversation.parse(r.body);
    assert.equal(r.body.title, 'Billing');
    assert.equal(r.body.external_user_id, 'user-1');
    assert.deepEqual(r.body.metadata, { plan: 'pro' });
  });

  test('an unknown field is 400 unknown_parameter and creates nothing (D-1)', async () => {
    const before = (await s.call('GET', `/apps/${APP}/metrics`)).body.total_conversations;
    const r = await s.call('POST', base, { titel: 'x' });
    assert.equal(r.status, 400);
    ExactErrorBody.parse(r.body);
    assert.deepEqual([r.body.error.type, r.body.error.param, r.body.error.code], ['invalid_request_error', 'titel', 'unknown_parameter']);
    assert.equal((await s.call('GET', `/apps/${APP}/metrics`)).body.total_conversations, before);
  });
});

describe('get, update, delete (§4.3–4.5)', () => {
  test('round trip, then 404 after the soft delete (D-11)', async () => {
    const { body: c } = await s.call('POST', base, { title: 'Old' });
    const got = await s.call('GET', `${base}/${c.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(ExactConversationWithItems.parse(got.body).items, []);

    const renamed = await s.call('PATCH', `${base}/${c.id}`, { title: 'New' });
    assert.equal(renamed.status, 200);
    assert.equal(ExactConversation.parse(renamed.body).title, 'New');
    const cleared = await s.call('PATCH', `${base}/${c.id}`, { title: null });
    assert.equal(ExactConversation.parse(cleared.body).title, null);

    const del = await s.call('DELETE', `${base}/${c.id}`);
    assert.equal(del.status, 200);
    assert.deepEqual(ExactDeletionResult.parse(del.body), { id: c.id, object: 'conversation', deleted: true });
    for (const [m, b] of [['GET'], ['PATCH', { title: 'x' }], ['DELETE']] as const) {
      const r = await s.call(m, `${base}/${c.id}`, b);
      assert.equal(r.status, 404, `${m} after delete`);
      assert.equal(r.body.error.type, 'not_found');
    }
  });
});

describe('exact shapes of items (D-14)', () => {
  test('message, function_call and data_spec items have their fields and nothing more', async () => {
    const types = new Set<string>();
    for (const [app, content] of [
      [APP, 'How do I reset my password?'], // the knowledge base: a function_call item, then the answer
      ['app_genui', 'I would like to book an appointment'], // a form: data_spec items
    ] as const) {
      const { body: c } = await s.call('POST', `/apps/${app}/conversations`);
      assert.equal((await s.call('POST', `/apps/${app}/conversations/${c.id}`, { message: { content }, stream: false })).status, 200);
      const got = ExactConversationWithItems.parse((await s.call('GET', `/apps/${app}/conversations/${c.id}`)).body);
      for (const item of got.items) types.add(item.type);
    }
    assert.deepEqual([...types].sort(), ['data_spec', 'function_call', 'message']);
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
          const q: string = `?limit=3&order=${order}${cursor ? `&after=${cursor}` : ''}`;
          const page = ExactConversationList.parse((await fresh.call('GET', base + q)).body);
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

describe('get conversation serves a kept body, renewed on every write', () => {
  test('a new message and a rename each show in the next get; the bytes match the object get', async () => {
    const id = ((await s.call('POST', base, { title: 'First' })).body as { id: string }).id;
    const first = ExactConversationWithItems.parse((await s.call('GET', `${base}/${id}`)).body);
    assert.deepEqual(first.items, []);
    // Read again (now from the kept text), then write: the write must show.
    assert.deepEqual((await s.call('GET', `${base}/${id}`)).body, first);
    assert.equal((await s.call('POST', `${base}/${id}`, { message: { content: 'Hello there' }, stream: false })).status, 200);
    const second = ExactConversationWithItems.parse((await s.call('GET', `${base}/${id}`)).body);
    assert.equal(second.items.length >= 2, true, 'the exchange is there');
    assert.equal(second.items[0]!.type, 'message');
    assert.equal((await s.call('PATCH', `${base}/${id}`, { title: 'Renamed' })).status, 200);
    // A rename alone (the file unchanged) shows too: the kept body follows the record.
    assert.equal(ExactConversationWithItems.parse((await s.call('GET', `${base}/${id}`)).body).title, 'Renamed');
    assert.equal((await s.call('POST', `${base}/${id}`, { message: { content: 'Again' }, stream: false })).status, 200);
    const third = ExactConversationWithItems.parse((await s.call('GET', `${base}/${id}`)).body);
    assert.equal(third.title, 'Renamed');
    assert.ok(third.items.length > second.items.length, 'the second exchange is there');
    assert.match(JSON.stringify(third.items.slice(second.items.length)), /Again/);
    assert.deepEqual(third.items.slice(0, second.items.length), second.items);
    // Byte for byte what serializing the object would give.
    const { ConversationService } = await import('../src/services/conversations.ts');
    const svc = new ConversationService(s.store);
    assert.equal((await svc.getJson(APP, id)).text.toString(), JSON.stringify(await svc.get(APP, id)));
    assert.deepEqual(JSON.parse(JSON.stringify(await svc.getJson(APP, id))), third, 'toJSON gives the object back');
  });
});
