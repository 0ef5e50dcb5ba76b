// The error answers /openapi.json lists agree with the server: for each route of the REST API, the
// statuses its stages (src/http/server.ts: before routing, auth, the count, idempotency, the body) and
// its handler can answer are exactly those the document lists; and every error of the server's
// catalogue (src/core/api-errors.ts) that the REST API can answer is described under its status, with its
// type, its code and its headers. test/openapi.test.ts checks real answers against the document.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { describedRoutes, publishedDocuments } from '../src/api/routes.ts';
import { ERROR_STATUSES, METHOD_NOT_ALLOWED, OPENAPI_PATH } from '../src/contract/openapi.ts';
import { ERRORS, type ErrorName } from '../src/core/api-errors.ts';
import type { RouteDef } from '../src/http/router.ts';
import type { Route } from '../src/http/surface.ts';
import type { RestRoute } from '../src/api/rows.ts';

const doc = publishedDocuments().data as any;

/** The rows over services a handler never reaches here: each probe ends at the body or before. */
const ROUTES: RouteDef<RestRoute>[] = describedRoutes().rest;

/**
 * Whether a handler reads a JSON body of its own: run with a body that cannot be read, it stops there.
 * None does (D-118): a route reads its body by its row's schema before its handler runs.
 */
async function handlerReadsBody(route: Route<any, unknown>): Promise<boolean> {
  const unread = new Error('the body was read');
  const ctx: any = {
    params: { app_id: 'app_x', conversation_id: 'conv_x', response_id: 'resp_x' },
    query: new URLSearchParams(),
    req: { headers: {} },
    headers: {},
    app: { id: 'app_x', stream: false },
    admin: { member_id: 'mem_x', team_id: 'team_x', role: 'admin' },
    json: () => Promise.reject(unread),
  };
  try {
    await route.handle(ctx, {});
  } catch (err) {
    return err === unread;
  }
  return false;
}

/** Any request, before it is routed (server.ts `handle` and `clientError`): malformed, no Host, Expect, too slow, too large; and D-5. */
const BEFORE_ROUTING = ['400', '408', '417', '431', '500'];
/** The auth stage (§5, D-4, D-6): the key, then the app (unknown, another team's, inactive, no agent), then the resource. */
const AUTH = ['401', '403', '404'];
/** D-91: the store out of reach (the bound stage, first on every route). */
const STORE = ['503'];
/** D-121: the scenario stage, on every route: a scripted 429 (and 401, 408, 500, 503, listed above). */
const SCENARIO = ['429'];

/** What a handler raises beyond the stages, by route: what the probes cannot see, so that a row that leaves one out fails. */
const RAISED_BY_HANDLER: Record<string, string[]> = {
  // D-37: too many messages wait for the conversation's running reply.
  'POST /apps/:app_id/conversations/:conversation_id': ['409'],
  // D-36: the events of the response are no longer kept.
  'GET /apps/:app_id/responses/:response_id/events': ['410'],
};

/** The statuses the server can answer on a route, from its stages and its handler. */
async function statusesOf(def: RouteDef<RestRoute>): Promise<string[]> {
  const out = new Set([...BEFORE_ROUTING, ...AUTH, ...STORE, ...SCENARIO]);
  // D-23, D-110: a counted request past the plan (and, on a route that streams, past the cap of open streams; D-27: past the storage quota).
  if (def.route.counted) out.add('429');
  // Idempotency-Key: the key in use (409), or reused with another request (422).
  if (def.route.idempotent) for (const s of ['409', '422']) out.add(s);
  // D-2: a body over 1 MiB (413), not JSON (415).
  if (def.route.body) for (const s of ['413', '415']) out.add(s);
  for (const s of RAISED_BY_HANDLER[`${def.method} ${def.pattern}`] ?? []) out.add(s);
  return [...out].sort();
}

const templateOf = (pattern: string) => pattern.replace(/:(\w+)/g, '{$1}');
const listed = (op: any) => Object.keys(op.responses).filter((s) => s !== '200');

describe("/openapi.json's error answers agree with the server", () => {
  test('each route answers exactly the statuses the document lists for its operation, and every operation is a route', async () => {
    const operations = Object.entries<any>(doc.paths).flatMap(([template, item]) =>
      ['get', 'post', 'put', 'patch', 'delete'].filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${template}`),
    );
    assert.deepEqual(
      operations.filter((o) => o !== `GET ${OPENAPI_PATH}`).sort(),
      ROUTES.map((r) => `${r.method} ${templateOf(r.pattern)}`).sort(),
    );
    const mismatches: string[] = [];
    for (const def of ROUTES) {
      const op = doc.paths[templateOf(def.pattern)][def.method.toLowerCase()];
      const expected = await statusesOf(def);
      if (listed(op).join() !== expected.join()) mismatches.push(`${def.method} ${def.pattern}: lists ${listed(op)}, answers ${expected}`);
    }
    assert.deepEqual(mismatches, []);
    // The document itself is a page: no key, no body, only what any request can meet.
    assert.deepEqual(listed(doc.paths[OPENAPI_PATH].get), BEFORE_ROUTING);
  });

  test('D-118: no handler reads a body of its own; the route reads it by its row, which the document names', async () => {
    const own: string[] = [];
    for (const def of [...ROUTES, ...describedRoutes().admin])
      if (await handlerReadsBody(def.route)) own.push(`${def.method} ${def.pattern}`);
    assert.deepEqual(own, []);
    // The probe sees a handler that does.
    assert.equal(await handlerReadsBody({ handle: async (ctx: any) => ctx.json() }), true);
  });

  test('D-110: the counted routes are the creates and the replies', async () => {
    // D-110: creates count.
    assert.deepEqual(
      ROUTES.filter((r) => r.route.counted)
        .map((r) => `${r.method} ${r.pattern}`)
        .sort(),
      [
        'GET /apps/:app_id/responses/:response_id',
        'GET /apps/:app_id/responses/:response_id/events',
        'POST /apps/:app_id/completions',
        'POST /apps/:app_id/conversations',
        'POST /apps/:app_id/conversations/:conversation_id',
        'POST /apps/:app_id/responses/:response_id/cancel',
      ],
    );
  });

  test("every error of the server's catalogue that the REST API answers is described under its status", () => {
    // The widget API's own errors (docs/widget.md, D-45…D-59): its path space is not in this document.
    const widgetOnly = new Set<ErrorName>([
      'invalid_visitor_token',
      'visitor_token_expired',
      'invalid_identity',
      'identity_expired',
      'widget_disabled',
      'origin_not_allowed',
      'visitor_rate_limit',
      'address_rate_limit',
      'widget_budget',
      // The admin surface's (docs/control-plane.md, D-65): described by /admin/v1's own document.
      'invalid_admin_credential',
      'admin_role_required',
      'csrf_failed',
      'sign_in_throttled',
      'sign_in_busy',
      'last_admin',
      'email_taken',
      'limit_reached',
      'conversation_not_restorable',
      'limit_reached',
      // An admin surface's refusal of a webhook endpoint's URL (docs/webhooks.md, D-82).
      'invalid_webhook_url',
    ]);
    const faults: string[] = [];
    for (const [name, spec] of Object.entries(ERRORS) as [ErrorName, (typeof ERRORS)[ErrorName]][]) {
      if (widgetOnly.has(name)) continue;
      if (name === 'method_not_allowed') {
        // D-3: stated by the document's description (no operation lists it).
        assert.deepEqual(
          [METHOD_NOT_ALLOWED.status, METHOD_NOT_ALLOWED.types[0], METHOD_NOT_ALLOWED.code],
          [spec.status, spec.type, spec.code],
        );
        continue;
      }
      const described = (ERROR_STATUSES as Record<string, { types: readonly string[]; codes?: readonly string[] }>)[String(spec.status)];
      if (!described) {
        faults.push(`${name}: status ${spec.status} is not described`);
        continue;
      }
      if (!described.types.includes(spec.type)) faults.push(`${name}: type ${spec.type} is not among ${spec.status}'s`);
      if (described.codes && !described.codes.includes(spec.code ?? ''))
        faults.push(`${name}: code ${spec.code} is not among ${spec.status}'s`);
      const headers = Object.keys(doc.components.responses[`Error${spec.status}`].headers ?? {}).map((h) => h.toLowerCase());
      for (const h of Object.keys('headers' in spec ? (spec.headers ?? {}) : {})) {
        // `connection` is hop-by-hop: not part of an API's description.
        if (h !== 'connection' && !headers.includes(h)) faults.push(`${name}: header ${h} is not named by ${spec.status}`);
      }
    }
    assert.deepEqual(faults, []);
  });
});
