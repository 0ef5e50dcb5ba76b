// The stages of the request pipeline (src/http/compose.ts) over the services that check a request: thin
// wrappers, so that src/api/surfaces.ts lists in one place which checks each surface runs, in order.
import type { IncomingMessage } from 'node:http';
import type { AppT, KeyT } from '../core/tenants.ts';
import type { Stage } from '../http/compose.ts';
import { admitted, type Call, type RequestContext } from '../http/context.ts';
import type { Visitor } from '../core/callers.ts';
import { ApiError, apiError, invalidRequest } from '../core/api-errors.ts';
import { NoContent } from '../http/reply.ts';
import type { HttpMethod } from '../http/router.ts';
import type { StreamPool } from '../http/stream-gate.ts';
import type { Route } from '../http/surface.ts';
import type { Store } from '../store/types.ts';

/** The REST API's credential (§5, D-4, D-6): throws 401/403/404, or returns who calls and the app they may use. */
export interface Authenticator {
  authenticate(authorization: string | undefined): KeyT;
  authorizeApp(key: KeyT, appId: string, needsAgent: boolean): AppT;
}

/** D-23: throws a 429 ApiError, or returns headers for the counted request. */
export interface RateLimiter {
  /**
   * Counts the request (returning its D-23 headers) or throws (429, or 500 if it cannot be counted).
   * In one process it answers synchronously, so that concurrent requests cannot pass the limit
   * together; counts shared by several instances are taken in the database, and awaited.
   */
  take(app: AppT): Record<string, string> | Promise<Record<string, string>>;
}

/** Runs `next` once per Idempotency-Key, or answers for it (replay, 409, 422); wraps the answer `next` returns. */
export interface IdempotencyHook {
  run(ctx: RequestContext, next: () => Promise<unknown>): Promise<unknown>;
}

/** Who a gated surface's request is from, and the headers of its answers. */
export interface Admission {
  key: KeyT;
  app: AppT;
  visitor?: Visitor;
  /** Headers of the answer (e.g. rate-limit headers), an error's too. */
  headers: Record<string, string>;
  /** D-92: the pools the request's stream counts in, apart from the REST API's. */
  streams?: readonly StreamPool[];
  /** D-92: gives back what the request was charged, when its handler refuses it (a 4xx): no work, no charge. */
  refund?: () => Promise<void>;
}

/** A surface's own gate in place of the REST API's credential and rate limit (the widget API, D-45). */
export interface SurfaceGate {
  /**
   * First, on any known path of the surface: the headers every answer of the request carries (CORS),
   * or a refusal (throws: an origin the app does not list). `params` are the path's.
   */
  enter(req: IncomingMessage, params: Record<string, string>): Record<string, string>;
  /** A CORS preflight (OPTIONS) of a known path: the headers of its 204, given the path's methods. */
  preflight(req: IncomingMessage, allow: HttpMethod[]): Record<string, string>;
  /**
   * Then, on a matched route: who calls, for which app (401/403/404/429), or throws. `address` is the
   * client's (the call's, D-168).
   */
  admit(req: IncomingMessage, params: Record<string, string>, route: Route, address: string): Admission | Promise<Admission>;
  /** D-127: the key a request names, found before `admit` judges it, for its test run; undefined when none. */
  keyOf(req: IncomingMessage, params: Record<string, string>, route: Route): KeyT | undefined;
}

/**
 * D-171: every answer of a surface (a success, an error, a 405, a preflight) says `Cache-Control:
 * no-store`: it carries a caller's data, which no browser or proxy may keep. A stream keeps D-18's
 * `no-cache`, which its own head sets after these headers.
 */
export const noStore: Stage<Call> = (ctx, next) => {
  ctx.answerHeaders['cache-control'] = 'no-store';
  return next();
};

/** node keeps the first of two Authorization headers and drops the rest: an ambiguous request is a 400. */
export const singleAuthorization: Stage<Call> = (ctx, next) => {
  let n = 0;
  const raw = ctx.req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 13 && raw[i]!.toLowerCase() === 'authorization') n++;
  if (n > 1) throw invalidRequest('Send the Authorization header once: this request carries several.', 'Authorization', 'invalid_value');
  return next();
};

/** D-6: the secret key (401). */
export function authenticate(auth: Authenticator): Stage<Call> {
  return (ctx, next) => {
    ctx.key = auth.authenticate(ctx.req.headers.authorization);
    return next();
  };
}

/** D-4: the app exists and the key may use it (404, 403), is active (403), has an agent if the route needs one (403). */
export function authorizeApp(auth: Authenticator, route: Route): Stage<Call> {
  const needsAgent = route.needsAgent ?? false;
  return (ctx, next) => {
    if (!ctx.key) throw new Error('authorizeApp runs after authenticate');
    ctx.app = auth.authorizeApp(ctx.key, ctx.params.app_id!, needsAgent);
    return next();
  };
}

/** D-23: the app's plan (429); its headers go on every answer of a counted request, an error's too. */
export function rateLimit(limiter: RateLimiter): Stage<Call> {
  return async (ctx, next) => {
    if (!ctx.app) throw new Error('rateLimit runs after authorizeApp');
    Object.assign(ctx.answerHeaders, await limiter.take(ctx.app));
    return next();
  };
}

/** Idempotency-Key: runs the rest once per key, or answers for it (src/pipeline/idempotency.ts). */
export function idempotency(hook: IdempotencyHook): Stage<Call> {
  return (ctx, next) => hook.run(admitted(ctx), next);
}

/** D-47, D-53: the app and its widget (404, 403), the origin (403); the CORS headers go on every answer. */
export function cors(gate: SurfaceGate): Stage<Call> {
  return (ctx, next) => {
    Object.assign(ctx.answerHeaders, gate.enter(ctx.req, ctx.params));
    return next();
  };
}

/** D-53: a CORS preflight (OPTIONS, which no route takes) is a 204 with the methods of its path. */
export function preflight(gate: SurfaceGate): Stage<Call> {
  return async (ctx, next) =>
    ctx.req.method === 'OPTIONS' && ctx.allow.length > 0 ? new NoContent(gate.preflight(ctx.req, ctx.allow)) : next();
}

/** D-54: the credential (401), the key's team (403), the app active with its agent (403), the limits (429). */
export function admit(gate: SurfaceGate, route: Route): Stage<Call> {
  return async (ctx, next) => {
    const admission = await gate.admit(ctx.req, ctx.params, route, ctx.address);
    ctx.key = admission.key;
    ctx.app = admission.app;
    ctx.visitor = admission.visitor;
    ctx.streamPools = admission.streams;
    Object.assign(ctx.answerHeaders, admission.headers);
    const refund = admission.refund;
    if (!refund) return next();
    try {
      return await next();
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) await refund();
      throw err;
    }
  };
}

/** What D-91's bound needs of the store (src/store/types.ts `Store`). */
export type StoreHealth = Pick<Store, 'reachable' | 'available' | 'isUnavailable'>;

/** After the bound, a request still at work is looked at this often (a long reply with the store up is normal). */
const LOOK_AGAIN_MS = 1_000;

/**
 * D-91: a request made while the store is out of reach gets an answer within `ms`: its own, or 503
 * `store_unavailable` (its work then stops as if its client had left). An error that says the store
 * is out of reach is that 503 too, whenever it comes.
 */
export function storeBound(store: StoreHealth, ms: number): Stage<Call> | undefined {
  // A store that is never out of reach (the file store): no stage, nothing spent per request.
  if (store.reachable === 'always') return undefined;
  const available = store.available.bind(store);
  const unavailable = store.isUnavailable.bind(store);
  const refusal = () => apiError('store_unavailable', 'The database is out of reach for now; retry in a moment.');
  return async (ctx, next) => {
    const work = next().catch((err: unknown) => {
      throw unavailable(err) ? refusal() : err;
    });
    let timer: NodeJS.Timeout | undefined;
    let cutShort = false;
    const cut = new Promise<never>((_, reject) => {
      const look = (wait: number) => {
        timer = setTimeout(() => {
          if (available()) return look(LOOK_AGAIN_MS);
          cutShort = true;
          reject(refusal());
        }, wait);
      };
      look(ms);
    });
    try {
      return await Promise.race([work, cut]);
    } catch (err) {
      if (cutShort) {
        // Answered without it: the work's own outcome has no one to go to.
        work.catch(() => {});
        ctx.abandon?.();
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  };
}
