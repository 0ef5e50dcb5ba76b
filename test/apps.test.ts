// App config (§2.8, §4.8) and metrics (§2.9, §4.9, D-24).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AppConfig, AppMetrics, type ItemT } from '../src/contract/index.ts';
import { APP, TARGET, startTestServer, type TestServer } from './support/helpers.ts';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const metrics = async (app = APP) => {
  const r = await s.call('GET', `/apps/${app}/metrics`);
  assert.equal(r.status, 200);
  return AppMetrics.strict().parse(r.body);
};

describe('config (§4.8)', () => {
  test('every usable fixture app answers exactly the §2.8 shape, matching its scenario', async () => {
    const expect: Record<string, { stream: boolean; generative_ui: boolean }> = {
      [APP]: { stream: false, generative_ui: false },
      [TARGET.apps.generative_ui!]: { stream: false, generative_ui: true },
      [TARGET.apps.stream_default!]: { stream: true, generative_ui: false },
      [TARGET.apps.knowledge_base!]: { stream: false, generative_ui: false },
      [TARGET.apps.no_agent!]: { stream: false, generative_ui: false },
      [TARGET.apps.rate_limited!]: { stream: false, generative_ui: false },
    };
    for (const [app, flags] of Object.entries(expect)) {
      const r = await s.call('GET', `/apps/${app}/config`);
      assert.equal(r.status, 200, app);
      const config = AppConfig.parse(r.body);
      assert.equal(config.app_id, app);
      assert.deepEqual({ stream: config.stream, generative_ui: config.generative_ui }, flags, app);
      // Nothing beyond §2.8: the agent's instructions, model and knowledge base stay inside.
      assert.deepEqual(Object.keys(r.body).sort(), ['agent', 'app_id', 'generative_ui', 'stream']);
      assert.deepEqual(Object.keys(r.body.agent).sort(), ['config', 'name']);
      assert.deepEqual(Object.keys(r.body.agent.config).sort(), ['primary_color', 'secondary_color']);
    }
  });
});

describe('metrics (§4.9, D-24)', () => {
  test('a fresh app has zeros', async () => {
    assert.deepEqual(await metrics(TARGET.apps.knowledge_base), { total_conversations: 0, total_messages: 0, total_users: 0 });
  });

  test('conversations include soft-deleted ones; users are distinct non-null external_user_ids', async () => {
    const app = TARGET.apps.stream_default!;
    const base = `/apps/${app}/conversations`;
    const a = (await s.call('POST', base, { external_user_id: 'alice' })).body;
    await s.call('POST', base, { external_user_id: 'alice' });
    await s.call('POST', base, { external_user_id: 'bob' });
    await s.call('POST', base);
    await s.call('DELETE', `${base}/${a.id}`);
    assert.deepEqual(await metrics(app), { total_conversations: 4, total_messages: 0, total_users: 2 });
    // Another app's activity does not count here.
    await s.call('POST', `/apps/${TARGET.apps.rate_limited}/conversations`, { external_user_id: 'carol' });
    assert.deepEqual(await metrics(app), { total_conversations: 4, total_messages: 0, total_users: 2 });
  });

  test('messages count user and assistant message items, not function calls or data specs', async () => {
    const app = TARGET.apps.generative_ui!;
    const c = (await s.call('POST', `/apps/${app}/conversations`)).body;
    const now = Math.floor(Date.now() / 1000);
    const items: ItemT[] = [
      { id: 'msg_1', type: 'message', created_at: now, role: 'user', content: [{ type: 'text', text: 'hi' }] },
      {
        id: 'call_1',
        type: 'function_call',
        created_at: now,
        response_id: 'resp_1',
        name: 'knowledge_search',
        arguments: '{"query":"x"}',
        call_id: 'call_1',
      },
      {
        id: 'ds_1',
        type: 'data_spec',
        created_at: now,
        response_id: 'resp_1',
        data: { type: 'patch', patch: { op: 'add', path: '/form', value: {} } },
      },
      {
        id: 'msg_2',
        type: 'message',
        created_at: now,
        response_id: 'resp_1',
        role: 'assistant',
        content: [{ type: 'text', text: 'hello' }],
      },
    ];
    const record = { ...(await s.store.getConversation(c.id))!, message_count: 2 };
    await s.store.appendToConversation(record, items, { id: 'resp_1', created_at: now, status: 'completed' });
    assert.deepEqual(await metrics(app), { total_conversations: 1, total_messages: 2, total_users: 0 });
    // And the items come back with the conversation, in order (D-14).
    const got = await s.call('GET', `/apps/${app}/conversations/${c.id}`);
    assert.deepEqual(got.body.items, items);
    // Deleting keeps its messages in the metrics (D-11, D-24).
    await s.call('DELETE', `/apps/${app}/conversations/${c.id}`);
    assert.deepEqual(await metrics(app), { total_conversations: 1, total_messages: 2, total_users: 0 });
  });
});
