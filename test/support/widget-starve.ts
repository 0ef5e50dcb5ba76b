// D-92's scenarios that hold on either store (test/proof/widget-starve.test.ts on the file store,
// test/proof/pg-widget-starve.test.ts on PostgreSQL): the widget's share of the storage quota, and its budget
// divided per visitor and per address, with nothing charged for a request its handler refuses.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { FIXTURES_DIR, tempDir, type TestServer } from './helpers.ts';
import { PK, SHOP, widgetCall } from './widget.ts';

/** Widget limits that never refuse in these tests, but for what a test sets. */
const OPEN = { visitor_per_minute: 1000, address_per_minute: 1000, app_per_minute: 1000, app_per_day: 100_000 };

/**
 * The default fixtures plus: `app_tiny` (a 64 KiB plan, half of it the widget's), `app_budget` (a day's
 * budget of 6, 3 per visitor, 4 per address) and `app_stuck` (a reply that holds its stream open; REST
 * and the widget each 1 detached reply; the widget 2 streams, 1 per visitor).
 */
export async function starveFixtures(): Promise<string> {
  const dir = await tempDir('parley-fixtures-');
  await fs.cp(FIXTURES_DIR, dir, { recursive: true });
  const file = path.join(dir, 'fixtures.json');
  const f = JSON.parse(await fs.readFile(file, 'utf8'));
  const demo = f.apps.find((a: { id: string }) => a.id === 'app_demo');
  const app = (id: string, plan: string, extra: Record<string, unknown>) => ({
    ...demo,
    id,
    plan,
    agent: { ...demo.agent, knowledge_base: null },
    ...extra,
  });
  f.plans.push({ id: 'starve_tiny', requests_per_minute: 10_000, requests_per_day: 100_000, storage_bytes: 65_536 });
  f.apps.push(
    app('app_tiny', 'starve_tiny', { widget: { origins: [SHOP], limits: { ...OPEN, storage_share: 0.5 } } }),
    app('app_budget', 'developer', {
      widget: { origins: [SHOP], limits: { ...OPEN, app_per_day: 6, visitor_per_day: 3, address_per_day: 4 } },
    }),
    app('app_stuck', 'developer', {
      stream: true,
      agent: { ...demo.agent, knowledge_base: null, testing: { latency_ms: 60_000 } },
      responses: { max_duration_seconds: 120, max_detached: 1 },
      widget: { origins: [SHOP], limits: { ...OPEN, streams: 2, visitor_streams: 1, max_detached: 1 } },
    }),
  );
  await fs.writeFile(file, JSON.stringify(f, null, 2));
  return dir;
}

/** A new visitor of `app` and a conversation of theirs; `headers` go on both requests. */
export async function visitorWithConversation(
  s: TestServer,
  app: string,
  headers: Record<string, string> = {},
): Promise<{ token: string; conversation: string }> {
  const v = await widgetCall(s, 'POST', `/apps/${app}/visitors`, { auth: PK, body: {}, headers });
  assert.equal(v.status, 200, JSON.stringify(v.body));
  const c = await widgetCall(s, 'POST', `/apps/${app}/conversations`, { auth: v.body.token, body: {}, headers });
  assert.equal(c.status, 200, JSON.stringify(c.body));
  return { token: v.body.token, conversation: c.body.id };
}

/** A widget message, answered as JSON. */
export function widgetSend(s: TestServer, app: string, v: { token: string; conversation: string }, content: string, headers = {}) {
  return widgetCall(s, 'POST', `/apps/${app}/conversations/${v.conversation}`, {
    auth: v.token,
    body: { message: { content }, stream: false },
    headers,
  });
}

/**
 * D-92 (revising D-27): widget messages fill the widget's share of a small quota, then are refused;
 * the team's own REST creates and sends still succeed.
 */
export async function storageShareScenario(s: TestServer): Promise<void> {
  const app = 'app_tiny';
  const v = await visitorWithConversation(s, app);
  let refused: Awaited<ReturnType<typeof widgetSend>> | undefined;
  for (let i = 0; i < 40 && !refused; i++) {
    const r = await widgetSend(s, app, v, `message ${i} ${'x'.repeat(4000)}`);
    if (r.status !== 200) refused = r;
  }
  assert.ok(refused, 'the widget was never refused');
  assert.equal(refused.status, 429, JSON.stringify(refused.body));
  assert.equal(refused.body.error.code, 'storage_quota_exceeded');
  assert.match(refused.body.error.message, /widget's share/);
  // The widget stopped past half the quota (at most one exchange past it, D-27), short of the whole.
  const stored = await s.store.storedBytes(app);
  assert.ok(stored >= 32_768 && stored < 65_536, `stored ${stored}`);
  // So is a widget create now; the team's own API is not refused.
  assert.equal((await widgetCall(s, 'POST', `/apps/${app}/conversations`, { auth: v.token, body: {} })).status, 429);
  const created = await s.call('POST', `/apps/${app}/conversations`, {});
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const sent = await s.call('POST', `/apps/${app}/conversations/${created.body.id}`, { message: { content: 'from the backend' } });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
}

/**
 * D-92 (revising D-52): a request its handler refuses (404) is not charged to the budget, across a
 * restart too; creates are charged; one visitor, then one address, spends only its share of the day.
 */
export async function budgetSharesScenario(start: () => Promise<TestServer>): Promise<void> {
  const app = 'app_budget';
  let s = await start();
  let a: { token: string; conversation: string };
  try {
    const v = await widgetCall(s, 'POST', `/apps/${app}/visitors`, { auth: PK, body: {} });
    // More 404s than the day's budget (6): none is charged.
    for (let i = 0; i < 8; i++) {
      const r = await widgetSend(s, app, { token: v.body.token, conversation: 'conv_nope' }, 'hello');
      assert.equal(r.status, 404, `request ${i}: ${JSON.stringify(r.body)}`);
    }
    const c = await widgetCall(s, 'POST', `/apps/${app}/conversations`, { auth: v.body.token, body: {} }); // budget 1, visitor 1, address 1
    a = { token: v.body.token, conversation: c.body.id };
    assert.equal((await widgetSend(s, app, a, 'one')).status, 200); // 2, 2, 2
  } finally {
    await s.close();
  }
  s = await start();
  try {
    assert.equal((await widgetSend(s, app, a, 'two')).status, 200); // 3, 3, 3
    const byVisitor = await widgetSend(s, app, a, 'three');
    assert.equal(byVisitor.status, 429, JSON.stringify(byVisitor.body));
    assert.equal(byVisitor.body.error.code, 'widget_budget');
    assert.match(byVisitor.body.error.message, /visitor has used its share/);
    assert.ok(Number(byVisitor.headers.get('retry-after')) >= 1);
    const b = await visitorWithConversation(s, app); // budget 4, visitor 1, address 4
    const byAddress = await widgetSend(s, app, b, 'hello');
    assert.equal(byAddress.status, 429, JSON.stringify(byAddress.body));
    assert.match(byAddress.body.error.message, /address has used its share/);
    // The refusal changed nothing.
    const stored = await s.call('GET', `/apps/${app}/conversations/${b.conversation}`);
    assert.equal(stored.body.items.length, 0);
  } finally {
    await s.close();
  }
}
