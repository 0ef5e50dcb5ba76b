// The shared state across instances (docs/postgres.md): three or two instances, each with its own
// backends on its own connection pool to one database, each behind its own HTTP server (the real
// pipeline: rate limit, then Idempotency-Key, then the handler). D-23 admits exactly the plan's
// requests of a concurrent burst spread over them, with honest headers; one key sent to several at
// once runs once and is replayed (or refused, 422) by any; usage recorded by one is read by another;
// a key whose instance died is released after its lease, and answered from its claim if its work was saved.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import postgres, { type Sql } from 'postgres';
import { ReferenceErrorBody } from '../../src/contract/index.ts';
import type { RequestContext } from '../../src/http/context.ts';
import { createHttpServer } from '../../src/api/surfaces.ts';
import type { ParleyHttpServer } from '../../src/http/server.ts';
import { AuthService } from '../../src/pipeline/auth.ts';
import { IdempotencyService } from '../../src/pipeline/idempotency.ts';
import { RateLimitService } from '../../src/pipeline/rate-limit.ts';
import { loadTenants } from '../../src/store/fixtures.ts';
import type { Tenants } from '../../src/core/tenants.ts';
import { migrate } from '../../src/store/pg/migrate.ts';
import { PgIdempotencyAnswers } from '../../src/store/pg/idempotency.ts';
import { PgRateCounts } from '../../src/store/pg/rate-counts.ts';
import { PgUsageLedger } from '../../src/store/pg/usage.ts';
import { APP, FIXTURES_DIR, KEY, TARGET } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

let fixtures: Tenants;
before(async () => {
  fixtures = await loadTenants(FIXTURES_DIR);
});

interface Instance {
  sql: Sql;
  answers: PgIdempotencyAnswers;
  usage: PgUsageLedger;
  http: ParleyHttpServer;
  url: string;
  /** POST /v1/apps/{app}/work, with an Idempotency-Key if given. */
  post(app: string, body: unknown, key?: string): Promise<{ status: number; headers: Headers; body: any }>;
  /** Stops it as a killed instance stops: its connections go, its leases are no longer renewed. */
  kill(): Promise<void>;
  close(): Promise<void>;
}

/** One instance: its own pool and backends on the database, its own server; `work` is the handler. */
async function instance(
  url: string,
  work: (ctx: RequestContext, self: Instance) => Promise<unknown>,
  follow?: (retry: RequestContext, responseId: string) => Promise<unknown>,
): Promise<Instance> {
  const sql = postgres(url, { max: 4, onnotice: () => {} });
  const answers = await new PgIdempotencyAnswers(sql).open();
  const counts = await new PgRateCounts(sql, 'plan').open();
  const self = { sql, answers, usage: new PgUsageLedger(sql) } as Instance;
  const http = createHttpServer({
    routes: [
      { method: 'POST', pattern: '/apps/:app_id/work', route: { counted: true, idempotent: true, handle: (ctx) => work(ctx, self) } },
    ],
    auth: new AuthService(fixtures),
    logger: pino({ level: 'silent' }),
    rateLimiter: new RateLimitService(counts, fixtures),
    idempotency: new IdempotencyService(answers, { follow }),
  });
  await new Promise<void>((r) => http.server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(http.server.address() as AddressInfo).port}/v1`;
  let killed = false;
  return Object.assign(self, {
    http,
    url: base,
    async post(app: string, body: unknown, key?: string) {
      const res = await fetch(`${base}/apps/${app}/work`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': `"${key}"` } : {}) },
        body: JSON.stringify(body),
      });
      return { status: res.status, headers: res.headers, body: (await res.json()) as any };
    },
    async kill() {
      killed = true;
      await answers.close();
      await counts.close();
      await sql.end({ timeout: 0 });
    },
    async close() {
      await http.close(0);
      if (!killed) await self.kill();
    },
  });
}

async function database(): Promise<string> {
  const url = await freshDatabase();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  await migrate(sql);
  await sql.end();
  return url;
}

describe('the shared state across instances (PostgreSQL)', () => {
  const open: Instance[] = [];
  after(async () => {
    await Promise.all(open.splice(0).map((i) => i.close().catch(() => {})));
  });
  const start = async (
    url: string,
    n: number,
    work: (ctx: RequestContext, self: Instance) => Promise<unknown>,
    follow?: (retry: RequestContext, responseId: string) => Promise<unknown>,
  ) => {
    const list = await Promise.all(Array.from({ length: n }, () => instance(url, work, follow)));
    open.push(...list);
    return list;
  };

  test('D-23: 30 concurrent counted requests spread over three instances admit exactly 5 (5 a minute), with honest headers', async () => {
    let runs = 0;
    const three = await start(await database(), 3, async () => ({ run: ++runs }));
    const limited = TARGET.apps.rate_limited!;
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => three[i % 3]!.post(limited, {})));
    const admitted = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 429);
    assert.equal(admitted.length, 5);
    assert.equal(refused.length, 25);
    assert.equal(runs, 5, 'a refused request runs nothing');
    // Each admitted request saw the count as it was when it was counted: 4, 3, 2, 1, 0 left, once each.
    assert.deepEqual(admitted.map((r) => r.headers.get('x-ratelimit-remaining-requests')).sort(), ['0', '1', '2', '3', '4']);
    for (const r of admitted) {
      assert.equal(r.headers.get('x-ratelimit-limit-requests'), '5');
      assert.equal(r.headers.get('x-ratelimit-reset-requests'), '60s');
    }
    for (const r of refused) {
      ReferenceErrorBody.parse(r.body);
      assert.equal(r.body.error.type, 'rate_limit_exceeded');
      const retry = Number(r.headers.get('retry-after'));
      assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `Retry-After ${r.headers.get('retry-after')}`);
      assert.equal(r.headers.get('x-ratelimit-limit-requests'), '5');
      assert.equal(r.headers.get('x-ratelimit-remaining-requests'), '0');
    }
    // Every instance refuses the next one too: the count is the database's.
    for (const i of three) assert.equal((await i.post(limited, {})).status, 429);
  });

  test('one Idempotency-Key sent to two instances at once runs once: the other is 409 while it runs; then replay and 422 from either', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let runs = 0;
    const [a, b] = await start(await database(), 2, async () => {
      runs++;
      started();
      await gate;
      return { run: runs };
    });
    try {
      const sent = [a!.post(APP, { n: 1 }, 'same-key'), b!.post(APP, { n: 1 }, 'same-key')];
      await running;
      // The one that did not take the key answers while the other still runs.
      const first = await Promise.race(sent);
      assert.equal(first.status, 409, JSON.stringify(first.body));
      ReferenceErrorBody.parse(first.body);
      assert.equal(first.body.error.code, 'idempotency_key_in_use');
      release();
      const answers = await Promise.all(sent);
      assert.deepEqual(answers.map((r) => r.status).sort(), [200, 409]);
      assert.deepEqual(answers.find((r) => r.status === 200)!.body, { run: 1 });
      for (const i of [a!, b!]) {
        const replay = await i.post(APP, { n: 1 }, 'same-key');
        assert.equal(replay.status, 200);
        assert.equal(replay.headers.get('idempotent-replayed'), 'true');
        assert.deepEqual(replay.body, { run: 1 });
        const other = await i.post(APP, { n: 2 }, 'same-key');
        assert.equal(other.status, 422);
        assert.equal(other.body.error.code, 'idempotency_key_reused');
      }
      assert.equal(runs, 1);
    } finally {
      release();
    }
  });

  test('D-30: a retry on another instance of a running keyed request that names its response follows it there; on its own instance it joins', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let runs = 0;
    const [a, b] = await start(
      await database(),
      2,
      async (ctx) => {
        runs++;
        ctx.joinable?.(async () => ({ joined: 'resp_run' }), 'resp_run');
        await gate;
        return { ran: 'resp_run' };
      },
      async (_retry, id) => ({ followed: id }),
    );
    // The name is written after the handler names it (until then another instance answers 409).
    let recorded!: () => void;
    const isRecorded = new Promise<void>((r) => (recorded = r));
    const produces = a!.answers.produces.bind(a!.answers);
    a!.answers.produces = async (k, id) => {
      await produces(k, id);
      recorded();
    };
    try {
      const first = a!.post(APP, { m: 1 }, 'send-key');
      await isRecorded;
      assert.deepEqual((await b!.post(APP, { m: 1 }, 'send-key')).body, { followed: 'resp_run' });
      assert.deepEqual((await a!.post(APP, { m: 1 }, 'send-key')).body, { joined: 'resp_run' });
      assert.equal((await b!.post(APP, { m: 2 }, 'send-key')).status, 422, 'another body is still refused');
      release();
      assert.deepEqual((await first).body, { ran: 'resp_run' });
      assert.deepEqual((await b!.post(APP, { m: 1 }, 'send-key')).body, { ran: 'resp_run' }, 'then the replay');
      assert.equal(runs, 1);
    } finally {
      release();
    }
  });

  test('a burst: 20 keys, each sent to three instances at once, each runs exactly once; every other answer is a 409 or the same answer replayed', async () => {
    const runs = new Map<string, number>();
    const three = await start(await database(), 3, async (ctx) => {
      const k = String(ctx.req.headers['idempotency-key']);
      runs.set(k, (runs.get(k) ?? 0) + 1);
      return { key: k, run: runs.get(k) };
    });
    const keys = Array.from({ length: 20 }, (_, i) => `burst-${i}`);
    const results = await Promise.all(keys.flatMap((k) => three.map((i) => i.post(APP, { k }, k).then((r) => ({ k, r })))));
    for (const k of keys) {
      assert.equal(runs.get(`"${k}"`), 1, k);
      const mine = results.filter((x) => x.k === k).map((x) => x.r);
      const ran = mine.filter((r) => r.status === 200 && r.headers.get('idempotent-replayed') !== 'true');
      assert.equal(ran.length, 1, `${k}: ${mine.map((r) => r.status)}`);
      for (const r of mine) {
        if (r.status === 200) assert.deepEqual(r.body, { key: `"${k}"`, run: 1 });
        else assert.equal(r.body.error.code, 'idempotency_key_in_use', `${k}: ${r.status}`);
      }
    }
  });

  test('usage recorded by one instance is read by another, and a completion saved by a killed instance is never run again from another', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let saved!: () => void;
    const didSave = new Promise<void>((r) => (saved = r));
    let runs = 0;
    const url = await database();
    // A "completion": its usage, with its claim, is its only save; then its instance dies before answering.
    const [a, b] = await start(url, 2, async (ctx, self) => {
      runs++;
      await self.usage.record(ctx.app.id, 'completion', `cmpl_${runs}`, { input_tokens: 3, output_tokens: 7, total_tokens: 10 }, ctx.claim);
      saved();
      await gate;
      return { run: runs };
    });
    try {
      // Never answered: its instance dies.
      void a!.post(APP, { prompt: 'x' }, 'lost-key').catch(() => {});
      await didSave;
      assert.deepEqual(await b!.usage.of(APP), { requests: 1, input_tokens: 3, output_tokens: 7, total_tokens: 10, credits: 0.01 });
      // While the lease is renewed, the key is in use.
      assert.equal((await b!.post(APP, { prompt: 'x' }, 'lost-key')).body.error.code, 'idempotency_key_in_use');
      await a!.kill();
      await a!.http.close(0);
      // Its lease runs out (as 30 s after a kill -9).
      await b!.sql`UPDATE idempotency_answers SET lease_until = 0`;
      const retry = await b!.post(APP, { prompt: 'x' }, 'lost-key');
      assert.equal(retry.status, 409, JSON.stringify(retry.body));
      assert.equal(retry.body.error.code, 'idempotency_replay_unavailable');
      assert.equal(runs, 1, 'the saved completion did not run again');
      assert.equal((await b!.usage.of(APP)).requests, 1);
    } finally {
      release();
    }
  });

  test('a key whose instance died before its work was saved is released after its lease, and runs on another', async () => {
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let runs = 0;
    const [a, b] = await start(await database(), 2, async () => {
      runs++;
      if (runs === 1) {
        started();
        await new Promise(() => {}); // the instance dies while it runs
      }
      return { run: runs };
    });
    const stuck = a!.post(APP, { n: 1 }, 'dead-key');
    void stuck.catch(() => {});
    await running;
    assert.equal((await b!.post(APP, { n: 1 }, 'dead-key')).status, 409);
    await a!.kill();
    const [row] = await b!.sql<{ lease_until: string }[]>`SELECT lease_until FROM idempotency_answers`;
    assert.ok(Number(row!.lease_until) > Date.now(), 'the dead instance’s lease still runs');
    assert.equal((await b!.post(APP, { n: 1 }, 'dead-key')).status, 409, 'not before its lease expired');
    await b!.sql`UPDATE idempotency_answers SET lease_until = ${Date.now() - 1}`;
    const ran = await b!.post(APP, { n: 1 }, 'dead-key');
    assert.equal(ran.status, 200);
    assert.deepEqual(ran.body, { run: 2 });
    await a!.http.close(0);
  });
});
