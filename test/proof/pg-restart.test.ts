// PostgreSQL restarted under running replies, on real processes (docs/reliability.md, D-90, D-91): an
// embedded PostgreSQL of its own, stopped and started (test/support/embedded-postgres.ts), and Parley
// instances as processes (test/support/fleet.ts). One instance through an outage longer than its
// lease: its replies end for their clients with `response.failed` `store_unavailable`, a request is
// answered 503 meanwhile, and once the database is back each reply is saved failed, the line is free,
// the lock is held again. Two instances through a restart and then `pg_terminate_backend` of every
// connection: the locks are held again, no living reply is swept, every reply ends with its own
// status. Every acknowledged write is kept, those acknowledged during the faults too (D-90: the
// driver patched, scripts/patch-postgres.mjs), and the instances live through it all.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as pace } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../support/embedded-postgres.ts';
import { startInstance, type Instance } from '../support/fleet.ts';
import { FIXTURES_DIR, KEY, tempDir } from '../support/helpers.ts';
import { livenessLocks, send, UNANSWERED_MS, until, type Sse } from '../support/live-reply.ts';

const SLOW = 'app_slow';

async function call(base: string, method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(base + p, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(UNANSWERED_MS),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Creates `n` conversations of `appId`; the ids of those acknowledged (200). */
async function creates(base: string, appId: string, n: number, title: string): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await call(base, 'POST', `/apps/${appId}/conversations`, { title: `${title} ${i}` }).catch(() => undefined);
    if (r?.status === 200) out.push(r.body.id);
  }
  return out;
}

/**
 * Creates conversations of app_demo one after another until stopped, through whatever happens to the
 * database meanwhile (each request bounded by D-91); the ids of those acknowledged (200), and how many
 * were answered otherwise. Paced (a few dozen a second) so that a run of quick 503s does not load the machine.
 */
function writer(base: string, title: string): { stop: () => Promise<{ kept: string[]; refused: number }> } {
  let stopping = false;
  const kept: string[] = [];
  let refused = 0;
  const loop = (async () => {
    for (let i = 0; !stopping; i++) {
      const r = await call(base, 'POST', '/apps/app_demo/conversations', { title: `${title} ${i}` }).catch(() => undefined);
      if (r?.status === 200) kept.push(r.body.id);
      else refused++;
      await pace(25);
    }
  })();
  return {
    stop: async () => {
      stopping = true;
      await loop;
      return { kept, refused };
    },
  };
}

/**
 * D-91: what `store` answers once it can. Its first statement after every connection was terminated
 * may meet one the server has closed (ECONNRESET, CONNECTION_CLOSED), and a caller tries again.
 */
async function answered<T>(store: PgStore, ask: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await ask();
    } catch (err) {
      if (tries >= 3 || !store.isUnavailable(err)) throw err;
    }
  }
}

/** A streamed reply on a new conversation of app_slow, once its first delta came. */
async function slowReply(base: string): Promise<{ conversation: string; id: string; sse: Sse }> {
  const c = await call(base, 'POST', `/apps/${SLOW}/conversations`, {});
  assert.equal(c.status, 200);
  const sse = await send(base, SLOW, c.body.id, 'tell me a long story');
  await sse.next((e) => e.event === 'response.output_text.delta');
  return { conversation: c.body.id, id: sse.events[0]!.data.id, sse };
}

describe('PostgreSQL restarted under running replies (D-90, D-91)', { timeout: 600_000 }, () => {
  let pg: EmbeddedPostgres;
  let fixturesDir: string;
  let admin: postgres.Sql;
  let n = 0;
  /** A new database on the server: its name and URL. */
  const database = async () => {
    const name = `parley_restart_${n++}`;
    await admin.unsafe(`CREATE DATABASE ${name}`);
    const url = new URL(pg.adminUrl);
    url.pathname = `/${name}`;
    return { name, url: url.toString() };
  };
  before(async () => {
    pg = await startEmbeddedPostgres({ durable: false });
    admin = postgres(pg.adminUrl, { max: 1, onnotice: () => {} });
    // app_slow, slower still: its replies run for minutes, so that they run when the faults come.
    fixturesDir = await tempDir('parley-fixtures-');
    await fs.cp(FIXTURES_DIR, fixturesDir, { recursive: true });
    const file = path.join(fixturesDir, 'fixtures.json');
    const fixtures = JSON.parse(await fs.readFile(file, 'utf8'));
    fixtures.apps.find((a: { id: string }) => a.id === SLOW).agent.testing = { latency_ms: 1000, chunk_chars: 1 };
    await fs.writeFile(file, JSON.stringify(fixtures));
  });
  after(async () => {
    await admin?.end({ timeout: 1 }).catch(() => {});
    await pg?.stop();
  });

  test('one instance, the database away longer than the lease: each reply ends for its client with response.failed store_unavailable and is saved failed once it is back; a request meanwhile is answered 503; the lock is held again; the line is free; nothing acknowledged is lost', async () => {
    const { name, url } = await database();
    const one: Instance = await startInstance({ databaseUrl: url, fixturesDir });
    try {
      await until('the instance holds its lock', async () => (await livenessLocks(admin, name)) === 1);
      const kept = await creates(one.base, 'app_demo', 5, 'before');
      assert.equal(kept.length, 5);
      const replies = [await slowReply(one.base), await slowReply(one.base)];
      await admin.end({ timeout: 1 });
      await pg.halt();
      // D-91: answered within the bound while the database is away.
      const meanwhile = await call(one.base, 'GET', `/apps/app_demo/conversations/${kept[0]}`);
      assert.deepEqual(
        [meanwhile.status, meanwhile.body.error?.type, meanwhile.body.error?.code],
        [503, 'service_unavailable', 'store_unavailable'],
      );
      for (const r of replies) {
        await r.sse.done;
        const last = r.sse.events.at(-1)!;
        assert.deepEqual([last.event, last.data.status, last.data.error?.code], ['response.failed', 'failed', 'store_unavailable']);
      }
      await pg.start();
      admin = postgres(pg.adminUrl, { max: 1, onnotice: () => {} });
      await until('the instance holds its lock again', async () => (await livenessLocks(admin, name)) === 1);
      for (const r of replies) {
        await until(`${r.id} is saved failed`, async () => {
          const look = await call(one.base, 'GET', `/apps/${SLOW}/responses/${r.id}`);
          return look.status === 200 && look.body.status === 'failed';
        });
        const look = await call(one.base, 'GET', `/apps/${SLOW}/responses/${r.id}`);
        assert.equal(look.body.error.code, 'store_unavailable');
        const conv = await call(one.base, 'GET', `/apps/${SLOW}/conversations/${r.conversation}`);
        assert.deepEqual(
          conv.body.items.map((i: { role?: string; response_id: string; status?: string }) => [i.role, i.response_id, i.status]),
          [
            ['user', r.id, undefined],
            ['assistant', r.id, 'incomplete'],
          ],
          'the exchange is in the conversation, its reply incomplete',
        );
      }
      // The conversation's line is free: the next message begins (then is cancelled, not waited out).
      const next = await send(one.base, SLOW, replies[0]!.conversation, 'and then?');
      await next.next((e) => e.event === 'response.output_text.delta');
      await call(one.base, 'POST', `/apps/${SLOW}/responses/${next.events[0]!.data.id}/cancel`);
      await next.done;
      assert.equal(next.events.at(-1)!.data.error?.code, 'cancelled');
      for (const id of kept) assert.equal((await call(one.base, 'GET', `/apps/app_demo/conversations/${id}`)).status, 200);
    } finally {
      await one.stop();
    }
  });

  test('two instances, a restart then every connection terminated, under replies on both: both locks held again after each, no living reply swept, every reply ends with its own status, nothing acknowledged lost', async () => {
    const { name, url } = await database();
    const both = await Promise.all([startInstance({ databaseUrl: url, fixturesDir }), startInstance({ databaseUrl: url, fixturesDir })]);
    let sweeper: PgStore | undefined;
    let writers: ReturnType<typeof writer>[] = [];
    try {
      await until('both instances hold their lock', async () => (await livenessLocks(admin, name)) === 2);
      const replies = await Promise.all(both.flatMap((i) => [slowReply(i.base), slowReply(i.base)]));
      // Acknowledged writes on both before the faults, and during them: creates run on both instances
      // through the restart and the terminations, so that transactions are cut under them (postgres.js
      // 3.4.9 then ended the process, porsager/postgres#1208, before scripts/patch-postgres.mjs, D-90).
      const kept = (await Promise.all(both.map((i) => creates(i.base, 'app_demo', 5, 'before')))).flat();
      assert.equal(kept.length, 10);
      writers = both.map((i, k) => writer(i.base, `during ${k}`));
      await admin.end({ timeout: 1 });
      await pg.halt();
      await pg.start();
      admin = postgres(pg.adminUrl, { max: 1, onnotice: () => {} });
      await until('both locks held again after the restart', async () => (await livenessLocks(admin, name)) === 2);
      // Another instance starting now finds nothing to take: the replies' producers live.
      sweeper = new PgStore({ url, max: 2 });
      await sweeper.open();
      assert.deepEqual(await sweeper.responses.unfinished(), [], 'no living reply is swept after the restart');
      await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name} AND pid <> pg_backend_pid()`;
      await until('the three locks held again after the terminations', async () => (await livenessLocks(admin, name)) === 3);
      const swept = await answered(sweeper, () => sweeper!.responses.unfinished());
      assert.deepEqual(swept, [], 'no living reply is swept after the terminations');
      const during = await Promise.all(writers.map((w) => w.stop()));
      for (const [k, i] of both.entries())
        assert.equal(i.dead, false, `instance ${k} lives on through the faults; its stderr:\n${i.stderr()}`);
      for (const d of during) assert.ok(d.kept.length > 0, 'writes were acknowledged while the faults came');
      kept.push(...during.flatMap((d) => d.kept));
      // And after them, on both.
      const afterwards = (await Promise.all(both.map((i) => creates(i.base, 'app_demo', 3, 'after')))).flat();
      assert.equal(afterwards.length, 6, 'both instances write again');
      kept.push(...afterwards);
      // Each reply still runs: it ends as its client asks (a cancel), not `interrupted`.
      for (const r of replies) {
        const seen = r.sse.events.length;
        await r.sse.next((e) => e.event === 'response.output_text.delta' && r.sse.events.indexOf(e) >= seen);
        const cancelled = await call(both[0]!.base, 'POST', `/apps/${SLOW}/responses/${r.id}/cancel`);
        assert.equal(cancelled.status, 200);
        await r.sse.done;
        const last = r.sse.events.at(-1)!;
        assert.deepEqual([last.event, last.data.error?.code], ['response.failed', 'cancelled']);
        const look = await call(both[1]!.base, 'GET', `/apps/${SLOW}/responses/${r.id}`);
        assert.deepEqual([look.body.status, look.body.error?.code], ['failed', 'cancelled']);
      }
      for (const id of kept) assert.equal((await call(both[0]!.base, 'GET', `/apps/app_demo/conversations/${id}`)).status, 200);
    } finally {
      // A failure before they were stopped must not leave them writing (the file would never end).
      await Promise.all(writers.map((w) => w.stop()));
      await sweeper?.close();
      await Promise.all(both.map((i) => i.stop()));
    }
  });
});
