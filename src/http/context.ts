// What a handler receives: the request, its resolved app, and helpers to read it once; and the same
// request on its way through its surface's stages, before they have said who calls.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { AppT, KeyT } from '../core/tenants.ts';
import type { AdminCaller, Visitor } from '../core/callers.ts';
import type { IdempotencyClaim } from '../core/claims.ts';
import type { Scenario } from '../core/scenario.ts';
import { readJsonBody } from './body.ts';
import { fromZodError, invalidRequest } from '../core/api-errors.ts';
import type { HttpMethod } from './router.ts';
import type { TrustedProxies } from './client-address.ts';
import type { StreamGate, StreamPool } from './stream-gate.ts';

export interface RequestContext {
  req: IncomingMessage;
  requestId: string;
  /**
   * The client's address by D-92's one rule (./client-address.ts; D-168: every use of an address, the
   * per-address limits, the sign-in throttle and the audit, takes it from here).
   */
  readonly address: string;
  params: Record<string, string>;
  query: URLSearchParams;
  log: Logger;
  key: KeyT;
  app: AppT;
  /** Set on the widget API once the visitor token is verified. */
  visitor?: Visitor;
  /** Set on the admin surface once the admin credential is verified. */
  admin?: AdminCaller;
  /** Aborted when the client goes away before the answer is complete (D-19; a reply may then run on, D-34). */
  signal: AbortSignal;
  /** Headers of the answer if it succeeds (the response's id, a replay's mark); see Call.answerHeaders. */
  headers: Record<string, string>;
  /** Call before a stream starts: admits it under the app's cap of open streams, or throws 429. */
  beginStream?: () => void;
  /**
   * The JSON body (undefined when there is none), read and parsed on the first call; the same
   * promise after. Idempotency fingerprints it, then the route validates it with its row's schema (D-1, D-2, D-118).
   */
  json(): Promise<unknown>;
  /**
   * Set by the idempotency stage when the request carries an Idempotency-Key: the work saves it with
   * itself, in one step of the store, so that a crash can never keep one without the other.
   */
  claim?: IdempotencyClaim;
  /**
   * Set by the idempotency stage on a keyed request: the handler names how a retry with the same key
   * joins its work while it still runs (D-30: a cut send message continues the same response), and
   * the response it produces, which a retry on another instance follows from the store.
   */
  joinable?: (join: (retry: RequestContext) => Promise<unknown>, responseId?: string) => void;
  /** The request's scenario (D-120), set by the scenario stage when it carries one. */
  scenario?: Scenario;
}

/**
 * A call: a request on its way through its surface's stages (src/http/compose.ts): they say who calls (`key`,
 * `app`, `visitor`) and add the headers of every answer; the handler then takes it as a RequestContext.
 */
export interface Call extends Omit<RequestContext, 'key' | 'app'> {
  key?: KeyT;
  app?: AppT;
  /** The methods the path takes, when the request's method is not one of them (a 405, a CORS preflight). */
  allow: HttpMethod[];
  /** Headers of every answer of this request, an error's too: a surface's CORS headers, D-23's rate-limit headers. */
  answerHeaders: Record<string, string>;
  /** The pools a stream of this request counts in (D-92: the widget's own); unset, its app's pool. */
  streamPools?: readonly StreamPool[];
  /** The request was answered without its work (D-91's 503): the work stops as if the client had left. */
  abandon?(): void;
}

/** The call as a handler takes it, once a stage has said who calls (a surface whose stages never do is a bug). */
export function admitted(ctx: Call): RequestContext {
  if (ctx.key === undefined || ctx.app === undefined) throw new Error('no stage of this surface said who calls');
  return ctx as RequestContext;
}

/**
^ * The Call of a request the server (./server.ts) serves. Its query, log and abort signal are made on
 * first use: most requests never ask for them, and each showed in the per-request profile (bench/lab/profile.ts).
 */
export class HttpCall implements Call {
  params: Record<string, string> = {};
  allow: HttpMethod[] = [];
  key?: KeyT;
  app?: AppT;
  visitor?: Visitor;
  admin?: AdminCaller;
  claim?: IdempotencyClaim;
  joinable?: Call['joinable'];
  scenario?: Scenario;
  streamPools?: readonly StreamPool[];
  readonly answerHeaders: Record<string, string> = {};
  readonly headers: Record<string, string> = {};
  private parsedQuery?: URLSearchParams;
  private childLog?: Logger;
  private abort?: AbortController;
  private body?: Promise<unknown>;
  private left = false;
  private client?: string;

  constructor(
    readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    readonly requestId: string,
    private readonly serverLog: Logger,
    private readonly streams: StreamGate,
    private readonly proxies: TrustedProxies,
  ) {}

  get address(): string {
    return (this.client ??= this.proxies.clientOf(this.req));
  }

  get query(): URLSearchParams {
    if (!this.parsedQuery) {
      const url = this.req.url ?? '';
      const q = url.indexOf('?');
      this.parsedQuery = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
    }
    return this.parsedQuery;
  }

  get log(): Logger {
    return (this.childLog ??= this.serverLog.child({ req_id: this.requestId }));
  }

  get signal(): AbortSignal {
    if (!this.abort) {
      this.abort = new AbortController();
      // Asked for after the client already left: it is aborted from the start.
      if (this.left) this.abort.abort(new Error('client disconnected'));
    }
    return this.abort.signal;
  }

  /** The client went away before its answer was complete: the work that asked for the signal stops (D-19). */
  clientLeft(): void {
    this.left = true;
    this.abort?.abort(new Error('client disconnected'));
  }

  abandon(): void {
    this.clientLeft();
  }

  beginStream(): void {
    if (this.streamPools) this.streams.enterAll(this.streamPools, this.res);
    else this.streams.enter(admitted(this).app.id, this.res);
  }

  json(): Promise<unknown> {
    return (this.body ??= readJsonBody(this.req));
  }
}

/** Reads the JSON body and validates it with a contract schema (D-1, D-2): a route's with its row's (./surface.ts, D-118). */
export async function parseBody<S extends z.ZodType>(ctx: Pick<RequestContext, 'json'>, schema: S): Promise<z.infer<S>> {
  // No body reads as `{}` (all-optional bodies accept it); a JSON `null` is a body that is not an object (D-1).
  const body = await ctx.json();
  const raw = body === undefined ? {} : body;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw fromZodError(parsed.error, raw);
  return parsed.data;
}

/** Validates the query string; a repeated parameter is an error rather than a silent pick. */
export function parseQuery<S extends z.ZodType>(ctx: Pick<RequestContext, 'query'>, schema: S): z.infer<S> {
  const raw: Record<string, string> = Object.create(null);
  for (const [k, v] of ctx.query) {
    if (k in raw) throw invalidRequest(`The query parameter ${k} may be given only once.`, k, 'invalid_value');
    raw[k] = v;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw fromZodError(parsed.error, raw);
  return parsed.data;
}
