// Parley on PostgreSQL (DATABASE_URL, docs/postgres.md) through its HTTP API, against a real server:
// pagination in both orders with cursors valid after a delete (D-12), soft delete (D-11), sends,
// metrics (D-24), a restart on the same database, and GET /healthz (D-44).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { health } from '../../src/api/health.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { APP, KEY, startTestServer, tempDir, type TestServer } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();
const conv = `/apps/${APP}/conversations`;

let url: string;
let dataDir: string;
let s: TestServer;
before(async () => {
  url = await freshDatabase();
  dataDir = await tempDir();
  s = await startTestServer({ databaseUrl: url, dataDir });
});
after(() => s.close());

async function walk(
  server: TestServer,
  order: 'asc' | 'desc',
  limit: number,
  between?: (page: number) => Promise<void>,
): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; ; page++) {
    const r = await server.call('GET', `${conv}?limit=${limit}&order=${order}${cursor ? `&after=${cursor}` : ''}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    ids.push(...r.body.data.map((c: { id: string }) => c.id));
    if (!r.body.has_more) return ids;
    cursor = r.body.last_id;
    await between?.(page);
  }
}

test('the store is PostgreSQL; pages in both orders; a cursor stays valid after its conversation is deleted (D-12, D-11)', async () => {
  assert.ok(s.store instanceof PgStore);
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) ids.push((await s.call('POST', conv, { metadata: { i: String(i) } })).body.id);
  const mine = (list: string[]) => list.filter((id) => ids.includes(id));
  assert.deepEqual(mine(await walk(s, 'asc', 2)), ids);
  assert.deepEqual(mine(await walk(s, 'desc', 3)), [...ids].reverse());
  // Delete the conversation the next cursor names, between two pages: the walk goes on past it.
  const seen = await walk(s, 'asc', 2, async (page) => {
    if (page === 0) assert.equal((await s.call('DELETE', `${conv}/${ids[1]}`)).status, 200);
  });
  assert.deepEqual(mine(seen), [ids[0], ids[1], ...ids.slice(2)]);
  assert.deepEqual(mine(await walk(s, 'asc', 2)), [ids[0], ...ids.slice(2)]);
  assert.equal((await s.call('GET', `${conv}/${ids[1]}`)).status, 404);
});

test('a send is saved with its items and counted; a restart on the same database serves everything; /healthz answers 200', async () => {
  const c = (await s.call('POST', conv, { title: 'pg' })).body.id as string;
  const before = (await s.call('GET', `/apps/${APP}/metrics`)).body;
  const r = await s.call('POST', `${conv}/${c}`, { message: { content: 'Hello there' }, stream: false });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const items = (await s.call('GET', `${conv}/${c}`)).body.items;
  assert.deepEqual(
    items.map((i: { role: string }) => i.role),
    ['user', 'assistant'],
  );
  const metrics = (await s.call('GET', `/apps/${APP}/metrics`)).body;
  assert.equal(metrics.total_messages, before.total_messages + 2);
  const h = await fetch(new URL('/healthz', s.baseUrl));
  assert.deepEqual([h.status, await h.json()], [200, { status: 'ok' }]);

  await s.close();
  s = await startTestServer({ databaseUrl: url, dataDir: await tempDir() });
  assert.equal((await s.call('GET', `${conv}/${c}`)).body.title, 'pg');
  assert.deepEqual(
    (await s.call('GET', `${conv}/${c}`)).body.items.map((i: { id: string }) => i.id),
    items.map((i: { id: string }) => i.id),
  );
  assert.deepEqual((await s.call('GET', `/apps/${APP}/metrics`)).body, metrics);
});

test('D-38 across instances: a response is saved once, whichever instance saves it first (a taken-over one saved again is kept once)', async () => {
  const c = (await s.call('POST', conv, {})).body.id as string;
  const store = s.store as PgStore;
  const save = (status: 'completed' | 'failed', text: string) =>
    store.saveResponse({
      conversationId: c,
      items: [
        { id: `msg_u_${status}`, type: 'message', role: 'user', content: 'hi', created_at: 1 } as never,
        { id: `msg_a_${status}`, type: 'message', role: 'assistant', content: text, created_at: 1 } as never,
      ],
      response: { id: 'resp_once', created_at: 1, status },
      apply: (cur) => ({ message_count: cur.message_count + 2 }),
    });
  await save('failed', 'cut short');
  const after = await save('completed', 'the whole reply');
  assert.equal(after.message_count, 2);
  const file = await store.readHistory(c);
  assert.deepEqual(
    file.responses.map((r) => [r.id, r.status]),
    [['resp_once', 'failed']],
  );
  assert.deepEqual(
    file.items.map((i) => i.id),
    ['msg_u_failed', 'msg_a_failed'],
  );
});

test('D-37 across instances: a message to a conversation replying on another instance waits for that reply, then is answered after it', async () => {
  const other = await startTestServer({ databaseUrl: url, dataDir: await tempDir() });
  try {
    const c = (await s.call('POST', `/apps/app_slow/conversations`, {})).body.id as string;
    // A long reply on this instance, left running by its client (D-34).
    const started = await fetch(`${s.baseUrl}/apps/app_slow/conversations/${c}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: { content: 'Tell me a long story about the sea' }, stream: true }),
    });
    const running = started.headers.get('parley-response-id')!;
    await started.body!.cancel();
    const awaiting = new Promise<string>((resolve) =>
      other.responses.events.once('awaiting', (e: { response_id: string }) => resolve(e.response_id)),
    );
    const next = other.call('POST', `/apps/app_slow/conversations/${c}`, { message: { content: 'Hello' }, stream: false });
    const first = await Promise.race([awaiting, next.then((r) => `answered ${r.status} before waiting`)]);
    assert.equal(first, running);
    // Cancelled through the waiting instance; the running one saves it, and the message goes on.
    assert.equal((await other.call('POST', `/apps/app_slow/responses/${running}/cancel`)).status, 200);
    const answered = await next;
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    const file = await other.store.readHistory(c);
    assert.deepEqual(
      file.responses.map((r) => r.id),
      [running, answered.body.id],
    );
  } finally {
    await other.close();
  }
});

test('/healthz: 503 while shutting down or when the store does not answer, naming no cause', async () => {
  const ok = { ping: async () => {} } as never;
  assert.equal((await health(ok, () => true)).status, 503);
  const down = await health({ ping: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.5:5432')) } as never, () => false);
  assert.equal(down.status, 503);
  assert.doesNotMatch(String(down.body), /ECONNREFUSED|10\.0\.0\.5/);
  assert.equal((await health({} as never, () => false)).status, 200, 'the file store answers while open');
});

test('DATABASE_URL and --database-url select PostgreSQL; another scheme is refused without echoing the URL', () => {
  assert.equal(loadConfig([], {}).databaseUrl, null);
  assert.equal(loadConfig([], { DATABASE_URL: 'postgres://u:p@h/db' }).databaseUrl, 'postgres://u:p@h/db');
  assert.equal(loadConfig(['--database-url', 'postgresql://h/db'], { DATABASE_URL: 'postgres://x' }).databaseUrl, 'postgresql://h/db');
  assert.throws(
    () => loadConfig([], { DATABASE_URL: 'mysql://u:secret@h/db' }),
    (e: Error) => e instanceof ConfigError && /postgres:\/\//.test(e.message) && !e.message.includes('secret'),
  );
});

test('DATABASE_POOL_SIZE and --database-pool-size set the connections each instance may open (docs/deploy.md)', async () => {
  assert.equal(loadConfig([], {}).databasePoolSize, 10);
  assert.equal(loadConfig([], { DATABASE_POOL_SIZE: '4' }).databasePoolSize, 4);
  assert.equal(loadConfig(['--database-pool-size', '30'], { DATABASE_POOL_SIZE: '4' }).databasePoolSize, 30);
  for (const bad of ['1', '0', '1001', 'x', '2.5'])
    assert.throws(
      () => loadConfig([], { DATABASE_POOL_SIZE: bad }),
      (e: Error) => e instanceof ConfigError && /2 to 1000/.test(e.message),
    );
  // The pool is the one the store opens: 3 at once wait for each other past it, and all are answered.
  const small = await startTestServer({ databaseUrl: url, dataDir: await tempDir(), databasePoolSize: 3 });
  try {
    assert.equal((small.store as PgStore).sql.options.max, 3);
    const answers = await Promise.all(Array.from({ length: 12 }, () => small.call('POST', conv, {})));
    assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
  } finally {
    await small.close();
  }
});
