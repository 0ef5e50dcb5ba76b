// D-23 rate limits: counted routes, 429 with Retry-After, headers, bursts, restarts, day rollover.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import pino from 'pino';
import { ReferenceErrorBody } from '../src/contract/index.ts';
import { createHttpServer } from '../src/api/surfaces.ts';
import type { ParleyHttpServer } from '../src/http/server.ts';
import { AuthService } from '../src/pipeline/auth.ts';
import { RateLimitService } from '../src/pipeline/rate-limit.ts';
import { FileRateCounts, type FileRateCountsOptions } from '../src/store/file/rate-counts.ts';
import { loadTenants } from '../src/store/fixtures.ts';
import type { Tenants } from '../src/core/tenants.ts';
import { FIXTURES_DIR, KEY, ON_POSTGRES, TARGET, tempDir } from './support/helpers.ts';

const LIMITED = TARGET.apps.rate_limited!; // plan "limited": 5 a minute, 50 a day
const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);

let fixtures: Tenants;
before(async () => {
  fixtures = await loadTenants(FIXTURES_DIR);
});

/** The REST plans' limiter on the file backend's counts, as startParley builds it; closing it closes the counts. */
async function openLimiter(opts: FileRateCountsOptions) {
  const counts = await FileRateCounts.open(opts);
  const limiter = new RateLimitService(counts, fixtures);
  return Object.assign(limiter, {
    fileCounts: counts,
    close: () => counts.close(),
    /** The file counts answer synchronously (checked and counted in one step). */
    takeNow: (app: Parameters<RateLimitService['take']>[0]) => limiter.take(app) as Record<string, string>,
  });
}

/** A server whose only route is counted and counts its own executions, so a refusal can be seen to change nothing. */
async function harness(limiter: RateLimitService) {
  let executed = 0;
  const http: ParleyHttpServer = createHttpServer({
    routes: [{ method: 'POST', pattern: '/apps/:app_id/work', route: { counted: true, handle: async () => ({ n: ++executed }) } }],
    auth: new AuthService(fixtures),
    logger: pino({ level: 'silent' }),
    rateLimiter: limiter,
  });
  await new Promise<void>((r) => http.server.listen(0, '127.0.0.1', r));
  const port = (http.server.address() as AddressInfo).port;
  const hit = async (app = LIMITED) => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/apps/${app}/work`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}` },
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  };
  return { hit, executed: () => executed, close: () => http.close() };
}

function clock(start = T0) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('rate limits (D-23)', () => {
  test('counts to the minute limit, then 429 rate_limit_exceeded with Retry-After; the refusal runs nothing', async () => {
    const dir = await tempDir();
    const c = clock();
    const limiter = await openLimiter({ file: path.join(dir, 'ratelimits.jsonl'), now: c.now });
    const h = await harness(limiter);
    try {
      for (let i = 1; i <= 5; i++) {
        const r = await h.hit();
        assert.equal(r.status, 200);
        assert.equal(r.headers.get('x-ratelimit-limit-requests'), '5');
        assert.equal(r.headers.get('x-ratelimit-remaining-requests'), String(5 - i));
        assert.equal(r.headers.get('x-ratelimit-reset-requests'), '60s');
        c.advance(1000);
      }
      const refused = await h.hit();
      assert.equal(refused.status, 429);
      ReferenceErrorBody.parse(refused.body);
      assert.equal(refused.body.error.type, 'rate_limit_exceeded');
      // The first request leaves the window 60 s after it was made, 55 s from now.
      assert.equal(refused.headers.get('retry-after'), '55');
      assert.equal(refused.headers.get('x-ratelimit-remaining-requests'), '0');
      assert.equal(h.executed(), 5, 'a refused request changes nothing');
      c.advance(55_000);
      assert.equal((await h.hit()).status, 200, 'the window slides: one slot is free again');
      assert.equal((await h.hit()).status, 429);
      // Another app's plan is its own.
      assert.equal((await h.hit(TARGET.app_id)).status, 200);
    } finally {
      await h.close();
      await limiter.close();
    }
  });

  test('a burst of parallel requests lets exactly the limit through', async () => {
    const dir = await tempDir();
    const limiter = await openLimiter({ file: path.join(dir, 'ratelimits.jsonl'), now: clock().now });
    const h = await harness(limiter);
    try {
      const results = await Promise.all(Array.from({ length: 20 }, () => h.hit()));
      assert.equal(results.filter((r) => r.status === 200).length, 5);
      assert.equal(results.filter((r) => r.status === 429).length, 15);
      assert.equal(h.executed(), 5);
      const remaining = results
        .filter((r) => r.status === 200)
        .map((r) => r.headers.get('x-ratelimit-remaining-requests'))
        .sort();
      assert.deepEqual(remaining, ['0', '1', '2', '3', '4']);
    } finally {
      await h.close();
      await limiter.close();
    }
  });

  test('the day limit holds across restarts and resets at 00:00 UTC; the minute window survives a restart too', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'ratelimits.jsonl');
    const c = clock();
    let served = 0;
    // 10 restarts × 5 requests, a minute apart: the 50 a day are used up.
    for (let round = 0; round < 10; round++) {
      const limiter = await openLimiter({ file, now: c.now });
      const h = await harness(limiter);
      for (let i = 0; i < 5; i++) if ((await h.hit()).status === 200) served++;
      await h.close();
      await limiter.close();
      c.advance(61_000);
    }
    assert.equal(served, 50);
    let limiter = await openLimiter({ file, now: c.now });
    let h = await harness(limiter);
    const refused = await h.hit();
    assert.equal(refused.status, 429);
    assert.match(refused.body.error.message, /50 requests per day/);
    const untilMidnight = Date.UTC(2026, 10, 23) - c.now();
    assert.equal(refused.headers.get('retry-after'), String(Math.ceil(untilMidnight / 1000)));
    await h.close();
    await limiter.close();

    c.advance(untilMidnight);
    limiter = await openLimiter({ file, now: c.now });
    h = await harness(limiter);
    for (let i = 0; i < 5; i++) assert.equal((await h.hit()).status, 200);
    await h.close();
    await limiter.close();
    // Restarted within the same minute: the five requests just made still count.
    limiter = await openLimiter({ file, now: c.now });
    h = await harness(limiter);
    assert.equal((await h.hit()).status, 429);
    await h.close();
    await limiter.close();
  });

  test('the journal stays small: compaction keeps the counts, a torn last line is dropped', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'ratelimits.jsonl');
    const c = clock();
    let limiter = await openLimiter({ file, now: c.now, compactAfter: 8 });
    const app = fixtures.apps.get(LIMITED)!;
    for (let i = 0; i < 30; i++) {
      limiter.take(app);
      c.advance(15_000); // 4 a minute: under the minute limit
    }
    await limiter.close();
    const lines = (await fs.readFile(file, 'utf8')).trim().split('\n');
    assert.ok(lines.length <= 8, `journal has ${lines.length} lines`);
    await fs.appendFile(file, '{"a":"app_limited","t":'); // a crash in mid-append
    limiter = await openLimiter({ file, now: c.now });
    let served = 30;
    try {
      for (;;) {
        limiter.take(app);
        served++;
        c.advance(15_000);
      }
    } catch (err) {
      assert.equal((err as { status?: number }).status, 429);
    }
    assert.equal(served, 50, 'the day count survived compaction');
    await limiter.close();
    assert.ok((await fs.readFile(file, 'utf8')).endsWith('\n'));
  });

  test('a count that cannot be written is given back and fails the request', async () => {
    const dir = await tempDir();
    const limiter = await openLimiter({ file: path.join(dir, 'ratelimits.jsonl'), now: clock().now });
    const app = fixtures.apps.get(LIMITED)!;
    await limiter.close(); // the journal is closed: every append fails
    // Were the slots kept, the sixth attempt would be a 429 rather than the write failure.
    for (let i = 0; i < 7; i++) assert.throws(() => limiter.take(app), /closed/);
    const reopened = await openLimiter({ file: path.join(dir, 'ratelimits.jsonl'), now: clock().now });
    for (let i = 0; i < 5; i++) reopened.take(app);
    await reopened.close();
  });

  test('the count is in the file when take returns, before any fsync: a crash of the process right after loses none', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'ratelimits.jsonl');
    const c = clock();
    const limiter = await openLimiter({ file, now: c.now });
    const app = fixtures.apps.get(LIMITED)!;
    for (let i = 0; i < 5; i++) {
      limiter.take(app);
      // Read with no await in between: nothing but take's own write(2) can have put the line there.
      const lines = readFileSync(file, 'utf8').trim().split('\n');
      assert.equal(lines.length, i + 1);
      assert.deepEqual(JSON.parse(lines.at(-1)!), { a: LIMITED, t: c.now() });
      c.advance(1_000);
    }
    // A second service reading the file as it is now (as after SIGKILL; the first is never closed) knows all five.
    const after = await openLimiter({ file, now: c.now });
    assert.throws(
      () => after.take(app),
      (err: { status?: number }) => err.status === 429,
    );
    await after.close();
    await limiter.close();
  });

  test('counts taken while a compaction is under way land in the new file', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'ratelimits.jsonl');
    const c = clock();
    const limiter = await openLimiter({ file, now: c.now, compactAfter: 3 });
    const app = fixtures.apps.get(TARGET.app_id)!; // 10,000 a minute: no refusal here
    // 40 counts in one synchronous burst: compactions start meanwhile and these lines wait for them.
    for (let i = 0; i < 40; i++) limiter.take(app);
    await limiter.close();
    const reopened = await openLimiter({ file, now: c.now });
    const headers = reopened.takeNow(app);
    await reopened.close();
    const plan = fixtures.plans.get(app.plan)!;
    assert.equal(headers['x-ratelimit-remaining-requests'], String(Math.min(plan.requests_per_minute, plan.requests_per_day) - 41));
  });
});

describe('compaction and crashes', () => {
  /** What a restart would count from the file as it is now: t lines plus the d lines' n. */
  function countsIn(file: string): number {
    return readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { t?: number; n?: number })
      .reduce((sum, e) => sum + (e.t !== undefined ? 1 : e.n!), 0);
  }

  test('the reproduction: 5 synchronous counts with compactAfter 3; the file copied mid-compaction refuses the 6th', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'ratelimits.jsonl');
    const c = clock();
    const limiter = await openLimiter({ file, now: c.now, compactAfter: 3 });
    const app = fixtures.apps.get(LIMITED)!;
    for (let i = 0; i < 5; i++) limiter.take(app);
    // The compaction started by the 4th count is under way: it took its snapshot and awaits its I/O.
    assert.ok((limiter.fileCounts as unknown as { compacting?: Promise<void> }).compacting, 'mid-compaction');
    const copy = path.join(dir, 'copy.jsonl');
    copyFileSync(file, copy); // what a SIGKILL now would leave
    await limiter.close();
    const restarted = await openLimiter({ file: copy, now: c.now });
    assert.throws(
      () => restarted.take(app),
      (err: { status?: number }) => err.status === 429,
    );
    await restarted.close();
  });

  test('at every moment of repeated compactions, the file holds every count taken so far', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'ratelimits.jsonl');
    const c = clock();
    const limiter = await openLimiter({ file, now: c.now, compactAfter: 3 });
    const app = fixtures.apps.get(TARGET.app_id)!;
    let taken = 0;
    let midCompaction = 0;
    for (let turn = 0; turn < 150; turn++) {
      // A few counts a turn, a minute apart so that snapshots fold them into the day's count.
      for (let i = 0; i < 3; i++, taken++) {
        limiter.take(app);
        c.advance(61_000);
      }
      if (existsSync(`${file}.tmp`)) midCompaction++;
      assert.equal(countsIn(file), taken, `turn ${turn}`);
      // Let the compaction move on by one step (an I/O callback or a promise turn).
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.ok(midCompaction > 0, 'some copies were taken while a compaction was under way');
    // The last compaction may still wait on the disk (a busy machine's fsync outlasts the loop): close() lets it finish.
    await limiter.close();
    assert.ok(readFileSync(file, 'utf8').trim().split('\n').length < taken, 'compactions happened');
    assert.equal(countsIn(file), taken);
  });
});

describe('rate limits on the running server', () => {
  test('startParley wires the limiter: its journal lives in the data directory', {
    skip: ON_POSTGRES && 'on PostgreSQL the counts are rows (test/pg-shared.test.ts)',
  }, async () => {
    const { startTestServer } = await import('./support/helpers.ts');
    const s = await startTestServer();
    try {
      const st = await fs.stat(path.join(s.dataDir, 'ratelimits.jsonl'));
      assert.ok(st.isFile());
    } finally {
      await s.close();
    }
  });
});

describe('rate limits on create conversation, send message and completions (app_limited: 5 a minute, 50 a day)', () => {
  test('the sixth request is 429 as JSON even when streaming, saves nothing and changes no metrics; a restart remembers', async () => {
    const { startTestServer } = await import('./support/helpers.ts');
    let s = await startTestServer();
    const dataDir = s.dataDir;
    try {
      // D-27: creating a conversation counts.
      const created = await s.call('POST', `/apps/${LIMITED}/conversations`, {});
      assert.equal(created.headers.get('x-ratelimit-remaining-requests'), '4');
      const conv = created.body.id;
      for (let i = 0; i < 2; i++) {
        const r = await s.call('POST', `/apps/${LIMITED}/conversations/${conv}`, { message: { content: `hello ${i}` }, stream: i === 1 });
        assert.equal(r.status, 200);
        assert.equal(r.headers.get('x-ratelimit-remaining-requests'), String(3 - i));
        assert.equal(r.headers.get('x-ratelimit-limit-requests'), '5');
      }
      const c = await s.call('POST', `/apps/${LIMITED}/completions`, { prompt: 'hi' });
      assert.equal(c.status, 200);
      assert.equal(c.headers.get('x-ratelimit-remaining-requests'), '1');
      // D-27: not counted: reads, renames and deletes.
      assert.equal(
        (await s.call('PATCH', `/apps/${LIMITED}/conversations/${conv}`, { title: 'renamed' })).headers.get('x-ratelimit-limit-requests'),
        null,
      );
      assert.equal((await s.call('GET', `/apps/${LIMITED}/conversations/${conv}`)).headers.get('x-ratelimit-limit-requests'), null);
      await s.close();
      s = await startTestServer({ dataDir });
      assert.equal(
        (await s.call('POST', `/apps/${LIMITED}/completions`, { prompt: 'hi' })).headers.get('x-ratelimit-remaining-requests'),
        '0',
      );

      const items = (await s.store.readHistory(conv)).items.length;
      const metrics = (await s.call('GET', `/apps/${LIMITED}/metrics`)).body;
      for (const stream of [false, true]) {
        const r = await s.call('POST', `/apps/${LIMITED}/conversations/${conv}`, { message: { content: 'one too many' }, stream });
        assert.equal(r.status, 429);
        assert.match(r.headers.get('content-type')!, /^application\/json/);
        ReferenceErrorBody.parse(r.body);
        assert.equal(r.body.error.type, 'rate_limit_exceeded');
        assert.ok(Number(r.headers.get('retry-after')) >= 1);
      }
      assert.equal((await s.call('POST', `/apps/${LIMITED}/completions`, { prompt: 'hi', stream: true })).status, 429);
      assert.equal((await s.store.readHistory(conv)).items.length, items, 'no item from a refused request');
      assert.deepEqual((await s.call('GET', `/apps/${LIMITED}/metrics`)).body, metrics);
    } finally {
      await s.close();
    }
  });

  test('D-4: a 400 and a 404 on a counted route were counted: each takes one from x-ratelimit-remaining-requests', async () => {
    const { startTestServer } = await import('./support/helpers.ts');
    const s = await startTestServer();
    try {
      const conv = (await s.call('POST', `/apps/${LIMITED}/conversations`, {})).body.id;
      const bad = await s.call('POST', `/apps/${LIMITED}/conversations/${conv}`, { message: { content: 'hi' }, nope: 1 });
      assert.equal(bad.status, 400);
      assert.equal(bad.headers.get('x-ratelimit-remaining-requests'), '3');
      const missing = await s.call('POST', `/apps/${LIMITED}/conversations/conv_missing`, { message: { content: 'hi' } });
      assert.equal(missing.status, 404);
      assert.equal(missing.headers.get('x-ratelimit-remaining-requests'), '2');
      const ok = await s.call('POST', `/apps/${LIMITED}/completions`, { prompt: 'hi' });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('x-ratelimit-remaining-requests'), '1');
    } finally {
      await s.close();
    }
  });

  test('D-23: every counted request that then fails carries the x-ratelimit-* headers (400, 404, 409, 422, 429 too_many_streams)', async () => {
    const { startTestServer } = await import('./support/helpers.ts');
    const SLOW = 'app_slow'; // streams slowly, so that one stays open while the others are refused
    const s = await startTestServer({ maxStreamsPerApp: 1 });
    const ctrl = new AbortController();
    try {
      // A keyed completion (a keyed send message would be joined by its retry, D-30, not refused).
      const completions = `/apps/${SLOW}/completions`;
      const story = { prompt: 'Write a long story about the sea', stream: true };
      const key = { 'idempotency-key': '"rl-headers"' };
      const open = await fetch(s.baseUrl + completions, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...key },
        body: JSON.stringify(story),
        signal: ctrl.signal,
      });
      assert.equal(open.status, 200);
      const remaining = Number(open.headers.get('x-ratelimit-remaining-requests'));
      const failures: Array<[number, string | null, Promise<{ status: number; headers: Headers; body: any }>]> = [
        [400, 'unknown_parameter', s.call('POST', `/apps/${SLOW}/completions`, { prompt: 'hi', nope: 1 })],
        [404, null, s.call('POST', `/apps/${SLOW}/conversations/conv_missing`, { message: { content: 'hi' } })],
        [409, 'idempotency_key_in_use', s.call('POST', completions, story, { headers: key })],
        [422, 'idempotency_key_reused', s.call('POST', completions, { ...story, prompt: 'another' }, { headers: key })],
        [429, 'too_many_streams', s.call('POST', `/apps/${SLOW}/completions`, { prompt: 'hi', stream: true })],
      ];
      const seen: number[] = [];
      for (const [status, code, pending] of failures) {
        const r = await pending;
        assert.equal(r.status, status, JSON.stringify(r.body));
        ReferenceErrorBody.parse(r.body);
        assert.equal(r.body.error.code, code);
        assert.equal(r.headers.get('x-ratelimit-limit-requests'), '10000', `${status}`);
        seen.push(Number(r.headers.get('x-ratelimit-remaining-requests')));
        assert.match(r.headers.get('x-ratelimit-reset-requests') ?? '', /^\d+(\.\d+)?s$/);
      }
      // Each was counted once: the remaining counts are the next five (in the order they were counted,
      // which on PostgreSQL need not be the order they were sent).
      assert.deepEqual(
        seen.sort((a, b) => b - a),
        [1, 2, 3, 4, 5].map((i) => remaining - i),
      );
    } finally {
      ctrl.abort();
      await s.close();
    }
  });

  test('a burst of 20 parallel completions lets exactly 5 through', async () => {
    const { startTestServer } = await import('./support/helpers.ts');
    const s = await startTestServer();
    try {
      const results = await Promise.all(
        Array.from({ length: 20 }, () => s.call('POST', `/apps/${LIMITED}/completions`, { prompt: 'hello' })),
      );
      assert.equal(results.filter((r) => r.status === 200).length, 5);
      assert.equal(results.filter((r) => r.status === 429).length, 15);
    } finally {
      await s.close();
    }
  });
});
