// The HTTP server: request ids, routing, the pipeline stages (auth, rate limit, idempotency, plugged in
// from src/pipeline/), the one place that writes an answer (a JSON body, an event stream or the error
// object), one log line per request, and a graceful close that lets in-flight requests finish.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { AppT, KeyT } from '../core/tenants.ts';
import { newRequestId } from '../core/ids.ts';
import { boundUnreadBody, readJsonBody } from './body.ts';
import type { RequestContext, Visitor } from './context.ts';
import { lingeringClose } from './linger.ts';
import { ApiError, ERRORS, apiError, errorBody, internalError, invalidRequest } from './errors.ts';
import { Asset, EventStream, sendJson } from './reply.ts';
import { Router, type HttpMethod, type RouteDef } from './router.ts';
import { streamSse } from './sse.ts';
import { StreamGate } from './stream-gate.ts';

export interface Route {
  /** Send message and completion need an active agent (D-4). */
  needsAgent?: boolean;
  /** Counted against the app's plan (D-23). */
  counted?: boolean;
  /** Honours the Idempotency-Key header (see src/pipeline/idempotency.ts). */
  idempotent?: boolean;
  /** On the widget API: takes the publishable key (to open a visitor session), not a visitor token (D-48). */
  publishable?: boolean;
  /** Returns its answer: the JSON body of a 200, or an EventStream (see ./reply.ts). */
  handle(ctx: RequestContext): Promise<unknown>;
}

/** The auth stage (§5, D-4, D-6): throws 401/403/404, or returns who calls and the app they may use. */
export interface Authenticator {
  authenticate(authorization: string | undefined): KeyT;
  authorizeApp(key: KeyT, appId: string, needsAgent: boolean): AppT;
}

/** The rate-limit hook (D-23): throws a 429 ApiError, or returns headers for the counted request. */
export interface RateLimiter {
  /**
   * Counts the request (returning its D-23 headers) or throws (429, or 500 if it cannot be counted).
   * In one process it answers synchronously, so that concurrent requests cannot pass the limit
   * together; counts shared by several instances are taken in the database, and awaited.
   */
  take(app: AppT): Record<string, string> | Promise<Record<string, string>>;
}

/** The idempotency stage: runs `next` once per key, or answers for it (replay, 409, 422); wraps the answer `next` returns. */
export interface IdempotencyHook {
  run(ctx: RequestContext, next: () => Promise<unknown>): Promise<unknown>;
}

/**
 * A path space beside the REST API with its own gate in place of the REST API's auth and rate-limit
 * stages: the widget API (docs/widget.md, D-45). Its handlers are routes like the REST API's.
 */
export interface Surface {
  basePath: string;
  routes: RouteDef<Route>[];
  gate: SurfaceGate;
}

/** Who a surface's request is from, and the headers of its answer. */
export interface Admission {
  key: KeyT;
  app: AppT;
  visitor?: Visitor;
  /** Headers of the answer (e.g. rate-limit headers), an error's too. */
  headers: Record<string, string>;
}

export interface SurfaceGate {
  /**
   * First, on any known path of the surface: the headers every answer of the request carries (CORS),
   * or a refusal (throws: an origin the app does not list). `params` are the path's.
   */
  enter(req: IncomingMessage, params: Record<string, string>): Record<string, string>;
  /** A CORS preflight (OPTIONS) of a known path: the headers of its 204, given the path's methods. */
  preflight(req: IncomingMessage, allow: HttpMethod[]): Record<string, string>;
  /** Then, on a matched route: who calls, for which app (401/403/404/429), or throws. */
  admit(req: IncomingMessage, params: Record<string, string>, route: Route): Admission | Promise<Admission>;
}

export interface HttpServerOptions {
  routes: RouteDef<Route>[];
  /** Path spaces beside the REST API (the widget API). */
  surfaces?: Surface[];
  /**
   * What is served by exact path to GET and HEAD, outside the base URL and without a key: the widget's
   * script and the playground (an Asset), the OpenAPI document (a JSON value).
   */
  pages?: ReadonlyMap<string, () => Promise<unknown>>;
  auth: Authenticator;
  logger: Logger;
  rateLimiter?: RateLimiter;
  idempotency?: IdempotencyHook;
  /** The path prefix of the base URL (§9). */
  basePath?: string;
  /** Slow clients (slowloris): the whole header block, and the whole request, must arrive within these. */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** Open SSE streams per app (default MAX_STREAMS_PER_APP). */
  maxStreamsPerApp?: number;
  /** D-18: interval of `: keep-alive` comments on silent streams. */
  keepAliveMs?: number;
}

/** Defaults that no honest client meets on loopback or a LAN, and that free a stalled socket quickly. */
const TIMEOUTS = { headersMs: 10_000, requestMs: 30_000 } as const;

export interface ParleyHttpServer {
  server: http.Server;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), then closes every socket. */
  close(graceMs?: number): Promise<void>;
}

export function createHttpServer(opts: HttpServerOptions): ParleyHttpServer {
  const router = new Router(opts.routes);
  const surfaces = (opts.surfaces ?? []).map((s) => ({ ...s, router: new Router(s.routes) }));
  const basePath = opts.basePath ?? '/v1';
  const log = opts.logger;
  const inFlight = new Set<Promise<void>>();
  const streams = new StreamGate(opts.maxStreamsPerApp);
  /** Responses not yet started, so that a close can tell their clients not to come back. */
  const pending = new Set<ServerResponse>();
  let closing = false;

  /** Requests whose Expect header node does not handle itself (anything but 100-continue). */
  const unmetExpectations = new WeakSet<IncomingMessage>();
  /** Sockets whose request was answered while its body still arrived (see clientError). */
  const answeredEarly = new WeakSet<Socket>();

  /** The one place an answer is written: a handler's (`reply`: a JSON body or an EventStream), or an error's. */
  async function write(req: IncomingMessage, res: ServerResponse, reply: unknown, headers: Record<string, string>): Promise<void> {
    if (reply instanceof EventStream)
      await streamSse(res, reply.events, { keepAliveMs: opts.keepAliveMs, headers, numbering: reply.numbering });
    else if (reply instanceof Asset) {
      res.writeHead(reply.status, {
        ...headers,
        ...reply.headers,
        'content-type': reply.contentType,
        'content-length': Buffer.byteLength(reply.body),
      });
      res.end(req.method === 'HEAD' ? undefined : reply.body);
    } else send(req, res, 200, reply, headers);
  }

  /** Sends a JSON answer; a body left unread is bounded (D-2), and a closing answer closes its socket. */
  function send(req: IncomingMessage, res: ServerResponse, status: number, body: unknown, headers: Record<string, string>): void {
    const final = boundUnreadBody(req, res, headers);
    sendJson(res, status, body, final);
    if (final.connection === 'close') res.once('finish', () => lingeringClose(req));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const requestId = newRequestId();
    res.setHeader('x-request-id', requestId);
    // While closing, every answer tells the client to open a new connection (to the next server).
    if (closing) res.setHeader('connection', 'close');
    else pending.add(res);
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const fullPath = q === -1 ? rawUrl : rawUrl.slice(0, q);
    let appId: string | undefined;
    // The child logger and the AbortController are made only when a handler asks for them: most
    // requests never do, and both showed in the per-request profile (bench/profile.ts).
    let reqLog: Logger | undefined;
    const getLog = () => (reqLog ??= log.child({ req_id: requestId }));
    let abort: AbortController | undefined;
    let closed = false;
    /** Headers of every answer of this request, an error's too: D-23's rate-limit headers, a surface's CORS headers. */
    let answerHeaders: Record<string, string> = {};

    // One listener for everything a request does when it ends (each one showed in the profile).
    res.once('close', () => {
      pending.delete(res);
      closed = true;
      // Answered before its body was all in: node's request timeout must not answer it a second time.
      if (res.writableFinished && !req.complete) {
        const socket = req.socket;
        answeredEarly.add(socket);
        req.once('end', () => answeredEarly.delete(socket));
      }
      if (!res.writableFinished) abort?.abort(new Error('client disconnected'));
      // One line per request; the path only (no query, no headers, so no key or user content).
      log.info(
        {
          req_id: requestId,
          method: req.method,
          path: fullPath,
          status: res.statusCode,
          ms: Math.round((performance.now() - started) * 100) / 100,
          app_id: appId,
          aborted: !res.writableFinished || undefined,
        },
        'request',
      );
    });

    try {
      // node would answer these two by itself, with an empty body and no request id.
      if (req.headers.host === undefined && req.httpVersion === '1.1') {
        throw invalidRequest('The Host header is missing: HTTP/1.1 requires it.', 'Host', 'missing_parameter');
      }
      if (unmetExpectations.has(req)) {
        throw apiError('expectation_failed', 'The only Expect header this server meets is "100-continue".', { param: 'Expect' });
      }
      const page = opts.pages?.get(fullPath);
      if (page) {
        if (req.method !== 'GET' && req.method !== 'HEAD')
          throw apiError('method_not_allowed', `${req.method} is not allowed here; use GET.`, { headers: { allow: 'GET, HEAD' } });
        await write(req, res, await page(), {});
        return;
      }
      const surface = surfaces.find((s) => fullPath === s.basePath || fullPath.startsWith(`${s.basePath}/`));
      const base = surface?.basePath ?? basePath;
      if (fullPath !== base && !fullPath.startsWith(`${base}/`)) {
        throw apiError('not_found', `No such endpoint: ${req.method} ${fullPath}. The base URL ends in ${basePath}.`);
      }
      const match = (surface?.router ?? router).match(req.method ?? 'GET', fullPath.slice(base.length));
      if (match.kind === 'not_found') throw apiError('not_found', `No such endpoint: ${req.method} ${fullPath}.`);
      appId = match.kind === 'found' ? match.params.app_id : undefined;
      if (surface) {
        answerHeaders = surface.gate.enter(req, match.params);
        if (req.method === 'OPTIONS' && match.kind === 'method_not_allowed') {
          res.writeHead(204, { ...answerHeaders, ...surface.gate.preflight(req, match.allow) });
          res.end();
          return;
        }
      }
      if (match.kind === 'method_not_allowed') {
        throw apiError('method_not_allowed', `${req.method} is not allowed here; use ${match.allow.join(' or ')}.`, {
          headers: { allow: match.allow.join(', ') },
        });
      }
      const { route, params } = match;
      // node keeps the first of two Authorization headers and drops the rest: an ambiguous request.
      if (headerCount(req, 'authorization') > 1) {
        throw invalidRequest('Send the Authorization header once: this request carries several.', 'Authorization', 'invalid_value');
      }
      let key: KeyT;
      let app: AppT;
      let visitor: Visitor | undefined;
      if (surface) {
        const admitted = await surface.gate.admit(req, params, route);
        ({ key, app, visitor } = admitted);
        answerHeaders = { ...answerHeaders, ...admitted.headers };
      } else {
        key = opts.auth.authenticate(req.headers.authorization);
        app = opts.auth.authorizeApp(key, params.app_id!, route.needsAgent ?? false);
        if (route.counted && opts.rateLimiter) answerHeaders = await opts.rateLimiter.take(app);
      }
      let query: URLSearchParams | undefined;
      let body: Promise<unknown> | undefined;
      const ctx: RequestContext = {
        req,
        requestId,
        params,
        // Parsed only for the routes that read it (lists); a get has no query.
        get query() {
          return (query ??= new URLSearchParams(q === -1 ? '' : rawUrl.slice(q + 1)));
        },
        get log() {
          return getLog();
        },
        key,
        app,
        visitor,
        get signal() {
          if (!abort) {
            abort = new AbortController();
            // Asked for after the client already left: it is aborted from the start.
            if (closed && !res.writableFinished) abort.abort(new Error('client disconnected'));
          }
          return abort.signal;
        },
        headers: { ...answerHeaders },
        beginStream: () => streams.enter(app.id, res),
        json: () => (body ??= readJsonBody(req)),
      };
      const reply =
        route.idempotent && opts.idempotency ? await opts.idempotency.run(ctx, () => route.handle(ctx)) : await route.handle(ctx);
      if (reply === undefined) throw new Error(`${req.method} ${fullPath}: the handler answered nothing`);
      await write(req, res, reply, ctx.headers);
    } catch (err) {
      const apiErr = err instanceof ApiError ? err : internalError(requestId);
      // A client that went away mid-body is not a server fault.
      const clientGone = closed && !res.writableFinished;
      if (!(err instanceof ApiError) && !clientGone) getLog().error({ err }, 'unexpected error');
      if (res.headersSent || res.destroyed) {
        // Too late for an error object: end the response so the client sees it cut short.
        res.destroy();
        return;
      }
      // D-2: an oversized body (413) is not read further; the connection goes once the answer is out.
      send(req, res, apiErr.status, apiErr.toBody(), { ...answerHeaders, ...apiErr.headers });
    }
  }

  const headersTimeout = opts.headersTimeoutMs ?? TIMEOUTS.headersMs;
  const requestTimeout = Math.max(opts.requestTimeoutMs ?? TIMEOUTS.requestMs, headersTimeout);
  const serverOptions: http.ServerOptions = {
    headersTimeout,
    requestTimeout,
    // How often node looks for expired requests; its 30 s default would let a stalled socket live that long.
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 2))),
    // A missing Host is answered by handle(), with the error object and a request id.
    requireHostHeader: false,
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const p = handle(req, res).catch((err) => log.error({ err }, 'request handler failed'));
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };
  const server = http.createServer(serverOptions, onRequest);
  // An Expect other than 100-continue (which node meets by itself): a 417 from handle(), not node's empty one.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    unmetExpectations.add(req);
    onRequest(req, res);
  });

  // node:http answers malformed requests and over-long headers by itself with an empty body;
  // this gives them the error object too.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // Nothing is ever written after a connection's answer but its close: a pipelining client would
    // take a late 408 for the answer to its next request.
    if (!socket.writable || answeredEarly.has(socket) || (err.code === 'ECONNRESET' && !socket.bytesWritten)) {
      socket.destroy();
      return;
    }
    const name =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? 'headers_too_large'
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? 'request_timeout'
          : 'malformed_request';
    const status = ERRORS[name].status;
    const requestId = newRequestId();
    log.warn({ req_id: requestId, code: err.code, status }, 'client error');
    const message =
      name === 'headers_too_large'
        ? 'The request headers or URL are too large.'
        : name === 'request_timeout'
          ? 'The request took too long to arrive.'
          : malformedMessage(err.code);
    const body = JSON.stringify(errorBody(name, message));
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nx-request-id: ${requestId}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });

  async function close(graceMs = 10_000): Promise<void> {
    closing = true;
    for (const res of pending) if (!res.headersSent) res.setHeader('connection', 'close');
    pending.clear();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
      timer.unref();
    });
    await Promise.race([Promise.allSettled([...inFlight]), grace]);
    clearTimeout(timer);
    server.closeAllConnections();
    await closed;
  }

  return { server, close };
}

/** How many times a header came, whatever node merged or dropped (it keeps one Authorization). */
function headerCount(req: IncomingMessage, lowerName: string): number {
  let n = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === lowerName.length && raw[i]!.toLowerCase() === lowerName) n++;
  return n;
}

/** What a user can fix: the URL most often carries an unencoded space or non-ASCII character. */
function malformedMessage(code: string | undefined): string {
  if (code === 'HPE_INVALID_URL') return 'The request URL is not valid: percent-encode spaces and non-ASCII characters (é is %C3%A9).';
  return 'The request is not valid HTTP.';
}
