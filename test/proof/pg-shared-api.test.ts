// The shared state's PostgreSQL backends, one concern each (docs/postgres.md): usage totals by query
// with a completion's claim in the same transaction, D-23's counts and headers from rows (a refusal
// writes nothing, old rows pruned), the Idempotency-Key answers (taken once, released, kept, a lost
// answer read from the claims, a dead run's lease), and the widget's owners. Across instances:
// test/proof/pg-shared.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import postgres, { type Sql } from 'postgres';
import { followRunning } from '../../src/api/responses.ts';
import type { RequestContext } from '../../src/http/context.ts';
import type { EventStream } from '../../src/core/answers.ts';
import { RateLimitService } from '../../src/pipeline/rate-limit.ts';
import { loadTenants } from '../../src/store/fixtures.ts';
import type { AppT, Tenants } from '../../src/core/tenants.ts';
import { migrate } from '../../src/store/pg/migrate.ts';
import { PgIdempotencyAnswers } from '../../src/store/pg/idempotency.ts';
import { PgMinuteWindows, PgRateCounts } from '../../src/store/pg/rate-counts.ts';
import { PgUsageLedger } from '../../src/store/pg/usage.ts';
import { PgWidgetOwners } from '../../src/store/pg/widget-owners.ts';
import { pgWidgetSecret } from '../../src/store/pg/widget-secret.ts';
import { VisitorTokens } from '../../src/pipeline/widget-tokens.ts';
import { FIXTURES_DIR, KEY, TARGET, startTestServer } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { visitor, widgetCall } from '../support/widget.ts';

usePostgres();

let url: string;
let sql: Sql;
let fixtures: Tenants;
before(async () => {
  url = await freshDatabase();
  sql = postgres(url, { max: 4, onnotice: () => {} });
  await migrate(sql);
  fixtures = await loadTenants(FIXTURES_DIR);
});
after(async () => {
  await sql?.end();
});

const count = async (table: string) => Number((await sql.unsafe<{ n: string }[]>(`SELECT count(*) AS n FROM ${table}`))[0]!.n);

describe('the shared state on PostgreSQL', () => {
  test('usage: totals by query; a completion’s claim lands with its usage; a record saved twice counts once', async () => {
    const usage = new PgUsageLedger(sql);
    assert.deepEqual(await usage.of('app_u'), { requests: 0, input_tokens: 0, output_tokens: 0, total_tokens: 0, credits: 0 });
    await usage.record('app_u', 'response', 'resp_1', { input_tokens: 10, output_tokens: 990, total_tokens: 1000 });
    await usage.record(
      'app_u',
      'completion',
      'cmpl_1',
      { input_tokens: 5, output_tokens: 5, total_tokens: 10 },
      { key: 'k-u', fingerprint: 'f-u' },
    );
    await usage.record('app_u', 'response', 'resp_1', { input_tokens: 10, output_tokens: 990, total_tokens: 1000 });
    await usage.record('app_other', 'response', 'resp_2', { input_tokens: 1, output_tokens: 1, total_tokens: 2 });
    assert.deepEqual(await usage.of('app_u'), { requests: 2, input_tokens: 15, output_tokens: 995, total_tokens: 1010, credits: 1.01 });
    const [claim] = await sql`SELECT fingerprint FROM idempotency_claims WHERE key = 'k-u'`;
    assert.equal(claim!.fingerprint, 'f-u');
    // The row data-port reads: at in seconds, as usage.jsonl's lines.
    const [row] = await sql<{ at: string }[]>`SELECT at FROM usage_entries WHERE id = 'cmpl_1'`;
    assert.ok(Math.abs(Number(row!.at) - Date.now() / 1000) < 3600);
  });

  test('D-23: five a minute, then 429 with Retry-After and the headers; a refusal writes nothing; scopes count apart', async () => {
    const limited: AppT = fixtures.apps.get(TARGET.apps.rate_limited!)!; // plan "limited": 5 a minute, 50 a day
    const counts = await new PgRateCounts(sql, 'plan').open();
    const widgetCounts = await new PgRateCounts(sql, 'widget').open();
    const limiter = new RateLimitService(counts, fixtures);
    const widget = new RateLimitService(widgetCounts, fixtures);
    try {
      for (let i = 1; i <= 5; i++) {
        const h = await limiter.take(limited);
        assert.equal(h['x-ratelimit-limit-requests'], '5');
        assert.equal(h['x-ratelimit-remaining-requests'], String(5 - i));
        assert.equal(h['x-ratelimit-reset-requests'], '60s');
      }
      const window = () => sql`SELECT secs, counts, lasts, day, day_count FROM rate_windows WHERE scope = 'plan' AND key = ${limited.id}`;
      const before = await window();
      const refused = await Promise.resolve(limiter.take(limited)).then(
        () => assert.fail('the sixth was admitted'),
        (err: { status: number; errorName: string; headers: Record<string, string> }) => err,
      );
      assert.equal(refused.status, 429);
      assert.equal(refused.errorName, 'rate_limit_exceeded');
      assert.ok(
        Number(refused.headers['retry-after']) >= 1 && Number(refused.headers['retry-after']) <= 60,
        refused.headers['retry-after'],
      );
      assert.equal(refused.headers['x-ratelimit-remaining-requests'], '0');
      assert.deepEqual(await window(), before, 'the refusal wrote nothing');
      // D-102: one row per key, its buckets holding the five.
      assert.equal(before.length, 1);
      assert.equal(before[0]!.day_count, 5);
      assert.equal(
        (before[0]!.counts as number[]).reduce((t, n) => t + n, 0),
        5,
      );
      // The widget budget of the same app is counted apart.
      assert.equal((await widget.take(limited))['x-ratelimit-remaining-requests'], '4');
    } finally {
      await counts.close();
      await widgetCounts.close();
    }
  });

  test('D-23, D-102: a key’s old buckets and day count for nothing; the sweep deletes the keys idle for a day', async () => {
    const counts = await new PgRateCounts(sql, 'prune').open();
    try {
      const old = Date.now() - 2 * 86_400_000;
      const sec = Math.floor(old / 1000);
      const secs = Array.from({ length: 61 }, (_, i) => (i === sec % 61 ? sec : 0));
      const nine = secs.map((x) => (x ? 9 : 0));
      const lasts = secs.map((x) => (x ? old : 0));
      for (const key of ['a', 'b'])
        await sql`INSERT INTO rate_windows (scope, key, at, secs, counts, lasts, day, day_count)
                  VALUES ('prune', ${key}, ${old}, ${secs}, ${nine}, ${lasts}, ${old - (old % 86_400_000)}, 9)`;
      const c = await counts.take('a', 5, 50);
      assert.deepEqual([c.taken, c.inMinute, c.dayCount], [true, 0, 0], 'yesterday’s count and an old request are not today’s');
      const rows = async () =>
        (await sql`SELECT key, day_count FROM rate_windows WHERE scope = 'prune' ORDER BY key`).map((r) => [r.key, r.day_count]);
      assert.deepEqual(await rows(), [
        ['a', 1],
        ['b', 9],
      ]);
      await counts.sweep();
      assert.deepEqual(await rows(), [['a', 1]], 'the idle key is deleted, the counting one kept');
    } finally {
      await counts.close();
    }
  });

  test('Idempotency-Key answers: taken once, running, released, kept; a saved claim is a lost answer; an expired one runs again', async () => {
    const answers = await new PgIdempotencyAnswers(sql).open();
    try {
      const [a, b] = await Promise.all([answers.begin('k1', 'f1'), answers.begin('k1', 'f1')]);
      assert.deepEqual([a, b].map((s) => s.state).sort(), ['new', 'running'], 'one of two at once takes the key');
      // The lease of a key whose work runs is renewed while it runs.
      await sql`UPDATE idempotency_answers SET lease_until = 0 WHERE key = 'k1'`;
      await answers.renew();
      const [lease] = await sql<{ lease_until: string }[]>`SELECT lease_until FROM idempotency_answers WHERE key = 'k1'`;
      assert.ok(Number(lease!.lease_until) > Date.now(), 'renewed');
      assert.equal((await answers.begin('k1', 'f1')).state, 'running');
      await answers.finish('k1', undefined);
      assert.deepEqual(await answers.begin('k1', 'f2'), { state: 'new' }, 'a released key runs again');
      const at = Date.now();
      await answers.finish('k1', { f: 'f2', at, kind: 'json', b: '{"ok":1}' });
      assert.deepEqual(await answers.begin('k1', 'f2'), { state: 'done', answer: { f: 'f2', at, kind: 'json', b: '{"ok":1}' } });
      // The work saved with its claim, the answer never kept (the instance died in between).
      await sql`INSERT INTO idempotency_claims (key, fingerprint, at) VALUES ('k2', 'f9', ${Date.now()})`;
      const lost = await answers.begin('k2', 'f9');
      assert.equal(lost.state, 'done');
      assert.deepEqual(lost.state === 'done' && [lost.answer.b, lost.answer.lost, lost.answer.f], [null, true, 'f9']);
      // Past the retention a key is free again, and the sweep deletes what expired.
      const day = 24 * 3_600_000;
      await sql`UPDATE idempotency_answers SET at = at - ${day + 1000} WHERE key = 'k1'`;
      await sql`UPDATE idempotency_claims SET at = at - ${day + 1000} WHERE key = 'k2'`;
      await sql`UPDATE idempotency_answers SET at = at - ${day + 1000} WHERE key = 'k2'`;
      await answers.sweep();
      assert.deepEqual(
        (await sql`SELECT key FROM idempotency_answers`).map((r) => r.key),
        [],
      );
      assert.equal(await count("idempotency_claims WHERE key = 'k2'"), 0);
      assert.deepEqual(await answers.begin('k2', 'f9'), { state: 'new' });
      await answers.finish('k2', undefined);
    } finally {
      await answers.close();
    }
  });

  test('D-48: widget owners', async () => {
    const owners = new PgWidgetOwners(sql);
    assert.equal(await owners.ownerOf('conv_w'), undefined);
    await owners.claim('conv_w', 'vis_1');
    assert.equal(await owners.ownerOf('conv_w'), 'vis_1');
    await owners.close();
  });

  test('D-52: the widget’s per-visitor and per-address minutes are one count for every instance; a slot given back is free again', async () => {
    const other = postgres(url, { max: 4, onnotice: () => {} });
    const one = await new PgMinuteWindows(sql).open();
    const two = await new PgMinuteWindows(other).open();
    try {
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? one : two).take('visitor:app_w:vis_9', 3)));
      const taken = results.filter((r): r is { at: number } => 'at' in r);
      assert.equal(taken.length, 3);
      for (const r of results) if (!('at' in r)) assert.ok(r.retryAfterMs > 0 && r.retryAfterMs <= 60_000);
      // Another key counts apart; a slot given back (by the other instance) is taken again, once.
      assert.ok('at' in (await one.take('address:app_w:127.0.0.1', 3)));
      await two.giveBack('visitor:app_w:vis_9', taken[0]!.at);
      const again = await Promise.all([one.take('visitor:app_w:vis_9', 3), two.take('visitor:app_w:vis_9', 3)]);
      assert.equal(again.filter((r) => 'at' in r).length, 1);
    } finally {
      await one.close();
      await two.close();
      await other.end();
    }
  });

  test('D-49: one widget signing secret per database, made once: a token one instance issues, another takes', async () => {
    const other = postgres(url, { max: 2, onnotice: () => {} });
    try {
      const [a, b] = await Promise.all([pgWidgetSecret(sql), pgWidgetSecret(other)]);
      assert.equal(a.toString(), b.toString());
      assert.ok(a.length >= 32);
      assert.equal(await count('settings'), 1);
      const app = [...fixtures.apps.values()].find((x) => x.widget)!;
      const key = fixtures.keys.find((k) => k.type === 'publishable' && k.team_id === app.team_id)!;
      const issued = new VisitorTokens(a).issue(app, key, undefined, undefined);
      assert.equal(new VisitorTokens(b).verify(issued.token, app).visitor.id, issued.visitor.id);
      // Another database's secret is another secret.
      assert.throws(() => new VisitorTokens(Buffer.from('x'.repeat(64))).verify(issued.token, app));
    } finally {
      await other.end();
    }
  });

  test('D-30: a keyed retry on another instance follows the running send message from the store (followRunning), streamed or as JSON', async () => {
    const s = await startTestServer({ databaseUrl: await freshDatabase() });
    try {
      const conv = (await s.call('POST', '/apps/app_slow/conversations', {})).body.id;
      const message = { content: 'hi' };
      const res = await fetch(`${s.baseUrl}/apps/app_slow/conversations/${conv}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message, stream: true }),
      });
      const id = res.headers.get('parley-response-id')!;
      // What the idempotency stage hands the follower: the retry's context (its body is the running request's).
      const retry = (stream: boolean) =>
        ({
          json: async () => ({ message, stream }),
          app: s.tenants.apps.get('app_slow'),
          headers: {},
          signal: new AbortController().signal,
          beginStream: () => {},
        }) as unknown as RequestContext;
      const follow = followRunning(s.responses);
      const streamed = retry(true);
      const [events, json] = await Promise.all([
        follow(streamed, id) as Promise<EventStream>,
        follow(retry(false), id) as Promise<{ id: string; status: string; output: unknown[] }>,
      ]);
      const followed: string[] = [];
      for await (const e of events.events) followed.push(e.event);
      const sent = [...(await res.text()).matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
      assert.deepEqual(followed, sent, 'the same events as the request that started it');
      assert.equal(streamed.headers['parley-response-id'], id);
      assert.equal(json.id, id);
      assert.equal(json.status, 'completed');
      assert.ok(json.output.length > 0);
    } finally {
      await s.close();
    }
  });

  test('with DATABASE_URL the server keeps all of it in the database and none in its data directory', async () => {
    const url = await freshDatabase();
    const s = await startTestServer({ databaseUrl: url });
    const db = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const limited = TARGET.apps.rate_limited!;
      assert.equal((await s.call('POST', `/apps/${limited}/conversations`, {})).headers.get('x-ratelimit-remaining-requests'), '4');
      const keyed = { headers: { 'idempotency-key': '"wired"' } };
      const done = await s.call('POST', '/apps/app_demo/completions', { prompt: 'hello' }, keyed);
      assert.equal(done.status, 200);
      assert.equal(
        (await s.call('POST', '/apps/app_demo/completions', { prompt: 'hello' }, keyed)).headers.get('idempotent-replayed'),
        'true',
      );
      assert.equal((await s.usage.of('app_demo')).requests, 1);
      const v = await visitor(s, 'app_demo');
      const conv = await widgetCall(s, 'POST', '/apps/app_demo/conversations', { auth: v.token, body: {} });
      assert.equal((await widgetCall(s, 'GET', `/apps/app_demo/conversations/${conv.body.id}`, { auth: v.token })).status, 200);
      const rows = async (q: string) => Number((await db.unsafe<{ n: string }[]>(`SELECT count(*) AS n FROM ${q}`))[0]!.n);
      assert.equal(await rows(`rate_windows WHERE scope = 'plan' AND key = '${limited}' AND day_count = 1`), 1);
      assert.equal(await rows(`usage_entries WHERE id = '${done.body.id}'`), 1);
      assert.equal(await rows(`idempotency_answers WHERE state = 'done'`), 1);
      assert.equal(await rows(`idempotency_claims`), 1, 'the completion’s claim, with its usage');
      assert.equal(await rows(`widget_owners WHERE visitor_id = '${v.visitor_id}'`), 1);
      const left = await fs.readdir(s.dataDir, { recursive: true });
      for (const file of ['usage.jsonl', 'ratelimits.jsonl', 'idempotency', 'widget/owners.jsonl', 'widget/budget.jsonl'])
        assert.ok(!left.includes(file), `${file} in the data directory`);
    } finally {
      await db.end();
      await s.close();
    }
  });
});
