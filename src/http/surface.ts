// A surface is a path space of the server (the REST API, the widget API) with its routes and the stages
// a request to it passes before its route's handler. The stage lists are declared in one place,
// src/api/surfaces.ts; here they are composed, once per route at start, for the server to run.
import type { z } from 'zod';
import { compose, type Stage } from './compose.ts';
import { type Call, parseBody, type RequestContext } from './context.ts';
import { apiError } from '../core/api-errors.ts';
import { Router, type RouteDef } from './router.ts';

/**
 * What a scenario may shape on a route (D-123): `reply` runs the agent and may stream (send message, a
 * completion), `events` resumes a reply's events, `lookup` looks a response up; any route takes `status`.
 */
export type ScenarioRole = 'reply' | 'events' | 'lookup';

/**
 * A route of a surface. `B` is its body as its handler takes it: a route that reads none has `undefined`,
 * and one that reads one is declared with `withBody`, which types it by the route's schema.
 */
export interface Route<C = RequestContext, B = undefined> {
  /** Send message and completion need an active agent (D-4). */
  needsAgent?: boolean;
  /** Counted against the app's plan (D-23). */
  counted?: boolean;
  /** Honours the Idempotency-Key header (see src/pipeline/idempotency.ts). */
  idempotent?: boolean;
  /** On the widget API: takes the publishable key (to open a visitor session), not a visitor token (D-48). */
  publishable?: boolean;
  /** D-123: what a scenario may shape here. */
  scenario?: ScenarioRole;
  /**
   * The request body's schema (D-1, D-2), named once (D-118): the route reads the body with it after
   * its surface's stages, before its handler looks anything up (D-4), and its surface's document names it.
   */
  body?: z.ZodType<B>;
  /**
   * Returns its answer: the JSON body of a 200, or an EventStream (see ./reply.ts). `body` is the request's
   * body as the route's schema parsed it (no body reads as `{}`, D-1), undefined for a route without one.
   */
  handle(ctx: C, body: B): Promise<unknown>;
}

/**
 * Declares the rows of type `R` that read a body (D-118): a row names its schema `T` as `body` (one of
 * `S`, the schemas its surface's document names), and its handler takes the body as `T` parses it. A
 * plain row of type `R` cannot name a schema (its `body` parses to `undefined`), so every body is read so.
 */
export function withBody<R extends Route<never, undefined>, S extends z.ZodType = z.ZodType>() {
  type Context = Parameters<R['handle']>[0];
  return <T extends S>(row: Omit<R, 'body' | 'handle'> & { body: T; handle(ctx: Context, body: z.output<T>): Promise<unknown> }): R =>
    // The handler takes what the schema beside it parses: `R`'s `undefined` body stands for any.
    row as unknown as R;
}

/** `C` is what the surface's handlers take: a RequestContext, once its stages have said who calls. */
export interface Surface<C = RequestContext> {
  /** Where its paths start, e.g. `/v1`. */
  basePath: string;
  routes: RouteDef<Route<C>>[];
  /**
   * Stages of every request to a known path, whatever its method: their headers go on a 405 too, and
   * one may answer a method no route takes (a CORS preflight). D-3's 405 comes right after them.
   */
  enter?: Stage<Call>[];
  /** A route's stages, in the order they run, its handler last; `false` is a stage the route does not take. */
  stages(route: Route<C>): Array<Stage<Call> | false | undefined>;
  /** The call as the handlers take it, once the stages have said who calls; throws if they have not. */
  admitted(ctx: Call): C;
}

/** A request's way through a surface: its stages, then its handler's answer. */
export type Run = (ctx: Call) => Promise<unknown>;

/** A surface ready to serve: each route's stages and handler composed into one Run. */
export interface Mounted {
  basePath: string;
  /** `basePath/`, which every path below it starts with. */
  prefix: string;
  router: Router<Run>;
  /** A known path called with a method it does not have: the `enter` stages, then D-3's 405. */
  wrongMethod: Run;
}

export function mount<C>(s: Surface<C>): Mounted {
  const enter = s.enter ?? [];
  const run = (route: Route<C>): Run =>
    compose([...enter, ...s.stages(route).filter((stage) => stage !== false && stage !== undefined)], async (ctx) => {
      const call = s.admitted(ctx);
      // D-4: the body is read once every stage has passed, before the handler looks anything up.
      return route.handle(call, route.body && (await parseBody(ctx, route.body)));
    });
  return {
    basePath: s.basePath,
    prefix: `${s.basePath}/`,
    router: new Router(s.routes.map((d) => ({ method: d.method, pattern: d.pattern, route: run(d.route) }))),
    wrongMethod: compose(enter, async (ctx) => {
      throw apiError('method_not_allowed', `${ctx.req.method} is not allowed here; use ${ctx.allow.join(' or ')}.`, {
        headers: { allow: ctx.allow.join(', ') },
      });
    }),
  };
}

/**
 * The surface of a path and its route (a 405 is the surface's `wrongMethod`); an unknown path is 404
 * (D-3), outside every surface too, where the answer names the first surface's base URL.
 */
export function route(surfaces: readonly Mounted[], method: string, path: string) {
  const surface = surfaces.find((s) => path.startsWith(s.prefix) || path === s.basePath);
  if (!surface) throw apiError('not_found', `No such endpoint: ${method} ${path}. The base URL ends in ${surfaces[0]?.basePath}.`);
  const match = surface.router.match(method, path.slice(surface.basePath.length));
  if (match.kind === 'not_found') throw apiError('not_found', `No such endpoint: ${method} ${path}.`);
  return { surface, match };
}
