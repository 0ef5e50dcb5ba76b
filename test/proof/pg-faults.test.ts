// PostgreSQL faults as routine events (docs/reliability.md, D-90, D-91), in the everyday tier: every
// Parley connection terminated (`pg_terminate_backend`) under a running reply, and the database cut
// off by a proxy (test/support/pg-proxy.ts). The restarts of a real server, on one instance and two,
// are test/proof/pg-restart.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { FIXTURES_DIR, KEY, startTestServer, tempDir } from '../support/helpers.ts';
import { livenessLocks, send, UNANSWERED_MS, until } from '../support/live-reply.ts';
import { startPgProxy, type PgProxy } from '../support/pg-proxy.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

describe('PostgreSQL faults (D-90, D-91)', () => {
  let url: string;
  let db: string;
  let admin: postgres.Sql;
  let fixturesDir: string;
  before(async () => {
    url = await freshDatabase();
    db = new URL(url).pathname.slice(1);
    admin = postgres(url, { max: 1, onnotice: () => {} });
    // app_slow, slower still: a reply that runs for minutes, so that it is running when the faults come.
    fixturesDir = await tempDir('parley-fixtures-');
    await fs.cp(FIXTURES_DIR, fixturesDir, { recursive: true });
    const file = path.join(fixturesDir, 'fixtures.json');
    const fixtures = JSON.parse(await fs.readFile(file, 'utf8'));
    fixtures.apps.find((a: { id: string }) => a.id === 'app_slow').agent.testing = { latency_ms: 1000, chunk_chars: 1 };
    await fs.writeFile(file, JSON.stringify(fixtures));
  });
  after(() => admin?.end());

  test('D-90: every Parley connection terminated under a running reply: the liveness lock is taken again, LISTEN too (a cancel from another instance reaches the reply), and another instance never sweeps the living reply', async () => {
    const s = await startTestServer({ databaseUrl: url, fixturesDir, shutdownGraceMs: 0 });
    let other: PgStore | undefined;
    try {
      await until('the instance holds its lock', async () => (await livenessLocks(admin, db)) === 1);
      const c = await s.call('POST', '/apps/app_slow/conversations', {});
      const reply = await send(s.baseUrl, 'app_slow', c.body.id, 'tell me something long');
      await reply.next((e) => e.event === 'response.output_text.delta');
      const id = reply.events[0]!.data.id as string;
      const killed = await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${db} AND pid <> pg_backend_pid()`;
      assert.ok(killed.length >= 2, `terminated ${killed.length} connections`);
      // Another instance sweeps at once: the free lock is not believed before the grace.
      other = new PgStore({ url, max: 2 });
      await other.open();
      assert.deepEqual(await other.responses.unfinished(), [], 'a living reply is not taken');
      await until('both instances hold their lock', async () => (await livenessLocks(admin, db)) === 2);
      // The reply still runs on: a delta after the terminations.
      const seen = reply.events.length;
      await reply.next((e) => e.event === 'response.output_text.delta' && reply.events.indexOf(e) >= seen);
      await other.responses.requestCancel(id);
      await reply.done;
      const last = reply.events.at(-1)!;
      assert.deepEqual([last.event, last.data.error?.code], ['response.failed', 'cancelled']);
    } finally {
      await other?.close();
      await s.close();
    }
  });

  test('D-91: while the database is cut off a request is answered within the bound: 503 service_unavailable, store_unavailable, Retry-After: 1; once it is back, /healthz and requests are answered at once, nothing acknowledged lost', async () => {
    const proxy: PgProxy = await startPgProxy(url);
    const s = await startTestServer({ databaseUrl: proxy.url, storeTimeoutSeconds: 1 });
    const origin = new URL(s.baseUrl).origin;
    const ask = (method: string, p: string, body?: unknown) =>
      fetch(s.baseUrl + p, {
        method,
        headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(UNANSWERED_MS),
      });
    try {
      const made = await s.call('POST', '/apps/app_demo/conversations', { title: 'kept' });
      assert.equal(made.status, 200);
      proxy.cut();
      for (const [method, p, body] of [
        ['GET', `/apps/app_demo/conversations/${made.body.id}`],
        ['GET', '/apps/app_demo/conversations'],
        ['POST', '/apps/app_demo/conversations', { title: 'while away' }],
        ['POST', `/apps/app_demo/conversations/${made.body.id}`, { message: { content: 'hello' } }],
      ] as const) {
        const res = await ask(method, p, body);
        assert.equal(res.status, 503, `${method} ${p}`);
        assert.equal(res.headers.get('retry-after'), '1');
        const error = ((await res.json()) as any).error;
        assert.deepEqual([error.type, error.code, error.param], ['service_unavailable', 'store_unavailable', null]);
      }
      assert.equal((await fetch(`${origin}/healthz`, { signal: AbortSignal.timeout(UNANSWERED_MS) })).status, 503);
      proxy.restore();
      await until('/healthz says ok', async () => (await fetch(`${origin}/healthz`)).status === 200);
      const back = await ask('GET', `/apps/app_demo/conversations/${made.body.id}`);
      assert.equal(back.status, 200);
      assert.equal(((await back.json()) as any).title, 'kept');
      const sent = await ask('POST', `/apps/app_demo/conversations/${made.body.id}`, { message: { content: 'hello again' } });
      assert.equal(sent.status, 200);
      assert.equal(((await sent.json()) as any).status, 'completed');
    } finally {
      await s.close();
      await proxy.close();
    }
  });
});
