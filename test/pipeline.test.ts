// The composed pipeline: `compose` itself (order, wrapping, answering early, next() once), and the
// stages the REST API declares (src/api/surfaces.ts) running in D-4's order on a real server.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { z } from 'zod';
import { createHttpServer } from '../src/api/surfaces.ts';
import { storeBound } from '../src/pipeline/stages.ts';
import type { Tenants } from '../src/core/tenants.ts';
import { compose, type Stage } from '../src/http/compose.ts';
import { parseBody } from '../src/http/context.ts';
import { apiError, invalidRequest, notFound } from '../src/core/api-errors.ts';
import type { ParleyHttpServer } from '../src/http/server.ts';
import { AuthService } from '../src/pipeline/auth.ts';
import type { RateLimiter } from '../src/pipeline/stages.ts';
import { loadTenants } from '../src/store/fixtures.ts';
import { FIXTURES_DIR, KEY, TARGET } from './support/helpers.ts';
import { rawRequest } from './support/raw-http.ts';

type Trace = string[];

describe('compose', () => {
  const step =
    (name: string): Stage<Trace> =>
    async (trace, next) => {
      trace.push(`${name} in`);
      const answer = await next();
      trace.push(`${name} out`);
      return answer;
    };

  test('runs the stages in order, then the handler, and unwinds in reverse', async () => {
    const trace: Trace = [];
    const answer = await compose([step('a'), step('b')], async (t) => {
      t.push('handler');
      return 42;
    })(trace);
    assert.equal(answer, 42);
    assert.deepEqual(trace, ['a in', 'b in', 'handler', 'b out', 'a out']);
  });

  test('a stage wraps the answer the rest of the chain gives', async () => {
    const wrap: Stage<Trace> = async (_t, next) => ({ wrapped: await next() });
    assert.deepEqual(await compose([wrap], async () => 'inner')([]), { wrapped: 'inner' });
  });

  test('a stage answers or refuses without calling next: nothing after it runs', async () => {
    const trace: Trace = [];
    const answerEarly: Stage<Trace> = async () => 'early';
    assert.equal(
      await compose([step('a'), answerEarly, step('never')], async (t) => {
        t.push('handler');
        return 'late';
      })(trace),
      'early',
    );
    assert.deepEqual(trace, ['a in', 'a out']);
    // A refusal thrown synchronously is a rejection like any other, seen by the stages before it.
    const refuse: Stage<Trace> = () => {
      throw new Error('refused');
    };
    const seen: Trace = [];
    const guard: Stage<Trace> = async (t, next) => {
      try {
        return await next();
      } catch (err) {
        t.push(`caught ${(err as Error).message}`);
        throw err;
      }
    };
    await assert.rejects(compose([guard, refuse], async () => 'never')(seen), /refused/);
    assert.deepEqual(seen, ['caught refused']);
    const first = compose([refuse], async () => 'never')([]);
    assert.ok(first instanceof Promise, 'the composed function returns a rejection, never throws');
    await assert.rejects(first, /refused/);
  });

  test('a stage that calls next twice is refused: the rest runs once', async () => {
    let runs = 0;
    const twice: Stage<Trace> = async (_t, next) => {
      await next();
      return next();
    };
    await assert.rejects(compose([twice], async () => ++runs)([]), /next\(\) more than once/);
    assert.equal(runs, 1);
  });

  test('each call of the composed function is its own run', async () => {
    const run = compose([step('a')], async (t) => t.length);
    assert.equal(await run([]), 1);
    assert.equal(await run([]), 1);
  });
});

describe('the REST API runs its stages in D-4 order (src/api/surfaces.ts)', () => {
  let fixtures: Tenants;
  let http: ParleyHttpServer;
  let port: number;
  let handled = 0;
  let idempotencyRan = 0;
  const LIMITED = TARGET.apps.rate_limited!;

  before(async () => {
    fixtures = await loadTenants(FIXTURES_DIR);
    // The plan refuses every app but the demo one: a request that fails an earlier check too shows
    // which one answers.
    const rateLimiter: RateLimiter = {
      take: (app) => {
        if (app.id !== TARGET.app_id)
          throw apiError('rate_limit_exceeded', 'refused by the test plan', { headers: { 'retry-after': '7' } });
        return { 'x-ratelimit-remaining-requests': '99' };
      },
    };
    http = createHttpServer({
      routes: [
        {
          method: 'POST',
          pattern: '/apps/:app_id/things/:thing_id',
          route: {
            needsAgent: true,
            counted: true,
            idempotent: true,
            handle: async (ctx) => {
              handled++;
              // D-4: the body, then the resource.
              await parseBody(ctx, z.strictObject({ name: z.string() }));
              throw notFound(`Thing ${JSON.stringify(ctx.params.thing_id)}`, 'thing_id');
            },
          },
        },
      ],
      auth: new AuthService(fixtures),
      logger: pino({ level: 'silent' }),
      rateLimiter,
      idempotency: {
        run: async (ctx, next) => {
          idempotencyRan++;
          if (ctx.req.headers['idempotency-key'] === 'bad key') throw invalidRequest('bad key', 'Idempotency-Key', 'invalid_value');
          return next();
        },
      },
    });
    await new Promise<void>((r) => http.server.listen(0, '127.0.0.1', r));
    port = (http.server.address() as AddressInfo).port;
  });
  after(() => http.close());

  const post = (
    app: string,
    o: { key?: string | null; headers?: Record<string, string | string[]>; body?: unknown; method?: string } = {},
  ) => {
    const headers: Record<string, string | string[]> = { 'content-type': 'application/json', ...o.headers };
    if (o.key !== null && !('authorization' in headers)) headers.authorization = `Bearer ${o.key ?? KEY}`;
    return rawRequest(port, o.method ?? 'POST', `/v1/apps/${app}/things/thing_missing`, { headers, body: JSON.stringify(o.body ?? {}) });
  };
  const code = (r: { json: any }) => r.json?.error?.code ?? r.json?.error?.type;
  const badBody = { name: 'x', nope: 1 };

  test('each check answers before the next, and the handler never runs before the last', async () => {
    const cases: Array<[string, Awaited<ReturnType<typeof post>>, number, string]> = [
      ['405 before 401 (D-3)', await post('app_nope', { key: null, method: 'PUT' }), 405, 'method_not_allowed'],
      [
        'two Authorization headers before the key',
        await post('app_nope', { headers: { authorization: ['Bearer sk_live_a', 'Bearer sk_live_b'] } }),
        400,
        'invalid_value',
      ],
      ['the key (401) before the app', await post('app_nope', { key: null, body: badBody }), 401, 'invalid_api_key'],
      ['an unknown app (404) before the plan', await post('app_nope', { body: badBody }), 404, 'not_found'],
      ["another team's app (403) before the plan", await post(TARGET.apps.other_team!, { body: badBody }), 403, 'access_denied'],
      ['an inactive app (403) before the plan', await post(TARGET.apps.inactive!, { body: badBody }), 403, 'app_inactive'],
      ['no agent (403) before the plan', await post(TARGET.apps.no_agent!, { body: badBody }), 403, 'agent_unavailable'],
      [
        'the plan (429) before the Idempotency-Key and the body',
        await post(LIMITED, { headers: { 'idempotency-key': 'bad key' }, body: badBody }),
        429,
        'rate_limit_exceeded',
      ],
    ];
    for (const [what, r, status, expected] of cases) {
      assert.equal(r.status, status, `${what}: ${r.text}`);
      assert.equal(code(r), expected, what);
    }
    assert.equal(idempotencyRan, 0, 'no request reached the Idempotency-Key stage');
    assert.equal(handled, 0, 'no request reached the handler');
  });

  test('past the plan: the Idempotency-Key, then the body (400), then the resource (404); the plan headers on each', async () => {
    const keyed = await post(TARGET.app_id, { headers: { 'idempotency-key': 'bad key' }, body: badBody });
    assert.equal(keyed.status, 400);
    assert.equal(keyed.json.error.param, 'Idempotency-Key');
    assert.equal(handled, 0);
    const body = await post(TARGET.app_id, { body: badBody });
    assert.equal(body.status, 400);
    assert.equal(body.json.error.param, 'nope');
    const missing = await post(TARGET.app_id, { body: { name: 'x' } });
    assert.equal(missing.status, 404);
    assert.equal(missing.json.error.param, 'thing_id');
    assert.equal(handled, 2);
    for (const r of [keyed, body, missing]) assert.equal(r.headers['x-ratelimit-remaining-requests'], '99');
  });
});

test('D-91: a store that is never out of reach (the file store) gets no bound stage; one across a connection does', () => {
  const health = (reachable: 'always' | 'connected') => ({ reachable, available: () => true, isUnavailable: () => false });
  assert.equal(storeBound(health('always'), 5000), undefined);
  assert.equal(typeof storeBound(health('connected'), 5000), 'function');
});
