// Parley's surfaces, and the stages a request to each passes before its route's handler, in the order
// they run: the one place that says which check answers first. On every surface the `enter` stages run
// first, then D-3's 405, then the route's stages, then its handler; the first check that fails answers.
import { admitted } from '../http/context.ts';
import type { RouteDef } from '../http/router.ts';
import { createTransport, type HttpServerOptions, type ParleyHttpServer } from '../http/server.ts';
import { mount, type Route, type Surface } from '../http/surface.ts';
import {
  admit,
  authenticate,
  authorizeApp,
  cors,
  idempotency,
  noStore,
  preflight,
  rateLimit,
  singleAuthorization,
  storeBound,
  type Authenticator,
  type IdempotencyHook,
  type RateLimiter,
  type StoreHealth,
  type SurfaceGate,
} from '../pipeline/stages.ts';
import { adminCredential } from '../pipeline/admin-auth.ts';
import { type CreditCheck, credits } from '../pipeline/credits.ts';
import { testRun } from '../pipeline/test-runs.ts';
import type { TestRunService } from '../services/test-runs.ts';
import { SCENARIO_QUERY, scenario, type ScenarioOptions } from '../pipeline/scenario.ts';
import type { AccountService } from '../services/admin/accounts.ts';
import { ADMIN_BASE_PATH } from './admin/index.ts';
import type { AdminContext, AdminRoute } from './rows.ts';
import { WIDGET_BASE_PATH } from './widget.ts';

export interface RestApiOptions {
  routes: RouteDef<Route>[];
  auth: Authenticator;
  /** D-23's plans; without it nothing is counted. */
  rateLimiter?: RateLimiter;
  /** D-74: the team's credits, checked on the routes that run the agent; without it nothing is refused. */
  credits?: CreditCheck;
  idempotency?: IdempotencyHook;
  /** The path prefix of the base URL (§9; default /v1). */
  basePath?: string;
  /** D-91: the store, and how long a request may wait for it while it is out of reach. */
  store?: { health: StoreHealth; timeoutMs: number };
  /** D-125: the test runs, and the scripts their requests follow; without it no request takes part. */
  testRuns?: TestRunService;
  /** D-120, D-122: the scenarios of requests that carry one; without it they are off. */
  scenarios?: ScenarioOptions;
}

/**
 * The REST API, in D-4's order: one Authorization header (400) → the key (401) → the app exists and the
 * key may use it (404, 403) → the app is active (403) → its agent, for send message and completion (403)
 * → the request's turn in its test run (400 for a bad script, D-125, D-126; listed once answered) → a
 * scenario, its script's step or its own (400, or its scripted status, D-121: before anything is counted
 * or charged) → their team's credits (429, D-74) → the plan (429) → the Idempotency-Key; then the handler
 * reads the body (400) and the resource (404).
 */
export function restApi(o: RestApiOptions): Surface {
  return {
    basePath: o.basePath ?? '/v1',
    routes: o.routes,
    enter: [noStore],
    stages: (route) => [
      o.store && storeBound(o.store.health, o.store.timeoutMs),
      singleAuthorization,
      authenticate(o.auth),
      authorizeApp(o.auth, route),
      o.testRuns && testRun(o.testRuns),
      scenario(o.scenarios ?? OFF, route.scenario),
      route.needsAgent && o.credits && credits(o.credits),
      route.counted && o.rateLimiter && rateLimit(o.rateLimiter),
      route.idempotent && o.idempotency && idempotency(o.idempotency),
    ],
    admitted,
  };
}

export interface WidgetApiOptions {
  routes: RouteDef<Route>[];
  /** The widget's gate (src/pipeline/widget-gate.ts), in place of the REST API's key and plan. */
  gate: SurfaceGate;
  /** D-91, as the REST API's. */
  store?: RestApiOptions['store'];
  /** D-74, as the REST API's (after the gate, whose charge a refusal gives back). */
  credits?: CreditCheck;
  /** D-125, as the REST API's. */
  testRuns?: TestRunService;
  /** D-120, as the REST API's, also as the `scenario` query parameter. */
  scenarios?: ScenarioOptions;
}

/** Scenarios off: a request that carries one is refused (D-122). */
const OFF: ScenarioOptions = { enabled: false };

/**
 * The widget API, in D-54's order: the app (404) and its widget (403) → the origin (403), whose CORS
 * headers every later answer carries, a preflight's 204 too → one Authorization header (400) → the
 * request's turn in its test run (D-125, the app the path's, D-127 the publishable key it names) → a scenario (400, or its scripted status,
 * D-121) → the credential (401) → the key's team (403) → the app active and its agent (403) → D-52's limits (429)
 * → the team's credits for a send message (429, D-74, the limits' charge given back); then the route reads the body with its row's schema (400, D-118) and the handler the visitor's conversation (404), whose refusal gives the
 * budget back (D-92). Its streams count in the widget's own pools, apart from the REST API's (D-92).
 */
export function widgetApi(o: WidgetApiOptions): Surface {
  return {
    basePath: WIDGET_BASE_PATH,
    routes: o.routes,
    enter: [noStore, cors(o.gate), preflight(o.gate)],
    stages: (route) => [
      o.store && storeBound(o.store.health, o.store.timeoutMs),
      singleAuthorization,
      // D-127: a publishable key's script, the key found before the gate judges it.
      o.testRuns &&
        testRun(o.testRuns, (ctx) => ({ key: () => o.gate.keyOf(ctx.req, ctx.params, route), ownQuery: ctx.query.has(SCENARIO_QUERY) })),
      // Before the gate, whose limits would count a scripted status (D-121).
      scenario({ ...(o.scenarios ?? OFF), query: true }, route.scenario),
      admit(o.gate, route),
      route.needsAgent && o.credits && credits(o.credits),
    ],
    admitted,
  };
}

export interface AdminApiOptions {
  routes: RouteDef<AdminRoute>[];
  accounts: AccountService;
}

/**
 * The admin surface (D-65), in its own path space: one Authorization header (400) → the admin
 * credential, a personal access token or the session cookie and its CSRF token on a write (401, 403;
 * never an API key) → the role a change needs (403); then the route reads the body with its row's schema (400, D-118) and the handler the
 * team's resource (404).
 */
export function adminApi(o: AdminApiOptions): Surface<AdminContext> {
  return {
    basePath: ADMIN_BASE_PATH,
    routes: o.routes,
    enter: [noStore],
    stages: (route) => [singleAuthorization, adminCredential(o.accounts, route as AdminRoute)],
    admitted: (ctx) => {
      if (!ctx.admin) throw new Error('no stage of the admin surface said who calls');
      return ctx as AdminContext;
    },
  };
}

export interface ParleyServerOptions extends RestApiOptions, Omit<HttpServerOptions, 'surfaces'> {
  /** The widget API (docs/widget.md), beside the REST API. */
  widget?: WidgetApiOptions;
  /** The admin surface (docs/control-plane.md). */
  admin?: AdminApiOptions;
}

/** Parley's HTTP server: the REST API and the widget API over one transport (src/http/server.ts). */
export function createHttpServer(o: ParleyServerOptions): ParleyHttpServer {
  const surfaces = [mount(restApi(o)), ...(o.widget ? [mount(widgetApi(o.widget))] : []), ...(o.admin ? [mount(adminApi(o.admin))] : [])];
  return createTransport({ ...o, surfaces });
}
