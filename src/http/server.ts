// The HTTP transport: request ids, routing to a surface, running its stages (./surface.ts), the one
// place that writes an answer (a JSON body, an event stream or the error object), one log line per
// request, and a graceful close that lets in-flight requests finish.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { newRequestId } from '../core/ids.ts';
import { answerClientError } from './client-error.ts';
import { HttpCall } from './context.ts';
import { TrustedProxies } from './client-address.ts';
import { type RefusalLedger, refusalOf } from '../store/refusals.ts';
import { ApiError, apiError, internalError, invalidRequest } from '../core/api-errors.ts';
import { StreamGate } from './stream-gate.ts';
import type { WireScenario } from './sse-scenario.ts';
import { shapesWire } from '../core/scenario.ts';
import { type Mounted, route } from './surface.ts';
import { sendBounded, writeReply } from './write.ts';

export interface HttpServerOptions {
  /** The path spaces served, each with its stages composed (see ./surface.ts); the first is the REST API. */
  surfaces: readonly Mounted[];
  /**
   * What is served by exact path to GET and HEAD, outside the base URL and without a key: the widget's
   * script and the playground (an Asset), the OpenAPI document (a JSON value).
   */
  pages?: ReadonlyMap<string, () => Promise<unknown>>;
  logger: Logger;
  /** Slow clients (slowloris): the whole header block, and the whole request, must arrive within these. */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** Open SSE streams per app (default MAX_STREAMS_PER_APP). */
  maxStreamsPerApp?: number;
  /** D-18: interval of `: keep-alive` comments on silent streams. */
  keepAliveMs?: number;
  /** D-92, D-168: whose X-Forwarded-For names a request's client (`--trust-proxy`); default none. */
  proxies?: TrustedProxies;
  /** D-157: where an app's requests refused for credits, a rate limit or the storage quota are counted. */
  refusals?: Pick<RefusalLedger, 'count'>;
}

/** Defaults that no honest client meets on loopback or a LAN, and that free a stalled socket quickly. */
const TIMEOUTS = { headersMs: 10_000, requestMs: 30_000 } as const;

export interface ParleyHttpServer {
  server: http.Server;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), then closes every socket. */
  close(graceMs?: number): Promise<void>;
}

export function createTransport(opts: HttpServerOptions): ParleyHttpServer {
  const surfaces = opts.surfaces;
  const log = opts.logger;
  const inFlight = new Set<Promise<void>>();
  const streams = new StreamGate(opts.maxStreamsPerApp);
  const proxies = opts.proxies ?? TrustedProxies.none;
  /** Responses not yet started, so that a close can tell their clients not to come back. */
  const pending = new Set<ServerResponse>();
  let closing = false;
  /** Requests whose Expect header node does not handle itself (anything but 100-continue). */
  const unmetExpectations = new WeakSet<IncomingMessage>();
  /** Sockets whose request was answered while its body still arrived (see ./client-error.ts). */
  const answeredEarly = new WeakMap<Socket, IncomingMessage>();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const requestId = newRequestId();
    res.setHeader('x-request-id', requestId);
    // While closing, every answer tells the client to open a new connection (to the next server).
    if (closing) res.setHeader('connection', 'close');
    else pending.add(res);
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
    const ctx = new HttpCall(req, res, requestId, log, streams, proxies);
    let appId: string | undefined;
    let closed = false;
    /** The error answered, for the log line: its type and code say why, its message is not logged. */
    let failure: ApiError | undefined;

    // One listener for everything a request does when it ends (each one showed in the profile).
    res.once('close', () => {
      pending.delete(res);
      closed = true;
      // Answered before its body was all in: node's request timeout must not answer it a second time.
      if (res.writableFinished && !req.complete) {
        const socket = req.socket;
        answeredEarly.set(socket, req);
        req.once('end', () => answeredEarly.delete(socket));
      }
      if (!res.writableFinished) ctx.clientLeft();
      // One line per request; the path only (no query, no headers, so no key or user content), and an
      // error's type and code only (its message may quote the request).
      log.info(
        {
          req_id: requestId,
          method: req.method,
          path,
          status: res.statusCode,
          ms: Math.round((performance.now() - started) * 100) / 100,
          app_id: appId,
          error_type: failure?.type,
          error_code: failure?.code ?? undefined,
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
      const page = opts.pages?.get(path);
      if (page) {
        if (req.method !== 'GET' && req.method !== 'HEAD')
          throw apiError('method_not_allowed', `${req.method} is not allowed here; use GET.`, { headers: { allow: 'GET, HEAD' } });
        return await writeReply(req, res, await page(), {});
      }
      const { surface, match } = route(surfaces, req.method ?? 'GET', path);
      ctx.params = match.params;
      if (match.kind === 'found') appId = match.params.app_id;
      else ctx.allow = match.allow;
      const reply = await (match.kind === 'found' ? match.route(ctx) : surface.wrongMethod(ctx));
      if (reply === undefined) throw new Error(`${req.method} ${path}: the handler answered nothing`);
      await writeReply(req, res, reply, { ...ctx.answerHeaders, ...ctx.headers }, opts.keepAliveMs, wireOf(ctx));
    } catch (err) {
      const apiErr = err instanceof ApiError ? err : internalError(requestId);
      // A client that went away mid-body is not a server fault.
      const clientGone = closed && !res.writableFinished;
      if (err instanceof ApiError || !clientGone) failure = apiErr;
      const refused = appId === undefined ? null : refusalOf(apiErr.status, apiErr.code);
      if (refused) opts.refusals?.count(appId!, refused);
      if (!(err instanceof ApiError) && !clientGone) ctx.log.error({ err }, 'unexpected error');
      if (res.headersSent || res.destroyed) {
        // Too late for an error object: end the response so the client sees it cut short.
        res.destroy();
        return;
      }
      // D-2: an oversized body (413) is not read further; the connection goes once the answer is out.
      sendBounded(req, res, apiErr.status, apiErr.toBody(), { ...ctx.answerHeaders, ...apiErr.headers });
    }
  }

  const server = http.createServer(serverOptions(opts), onRequest);
  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    const p = handle(req, res).catch((err) => log.error({ err }, 'request handler failed'));
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  }
  // An Expect other than 100-continue (which node meets by itself): a 417 from handle(), not node's empty one.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    unmetExpectations.add(req);
    onRequest(req, res);
  });
  server.on('clientError', answerClientError(log, answeredEarly));

  async function close(graceMs = 10_000): Promise<void> {
    closing = true;
    for (const res of pending) if (!res.headersSent) res.setHeader('connection', 'close');
    pending.clear();
    await closeGracefully(server, inFlight, graceMs);
  }

  return { server, close };
}

/** D-124: the wire's directives of a request's scenario, a stall bounded by its app's maximum reply duration. */
function wireOf(ctx: HttpCall): WireScenario | undefined {
  const s = ctx.scenario;
  if (!s || !shapesWire(s)) return undefined;
  return { scenario: s, boundMs: (ctx.app?.responses.max_duration_seconds ?? 0) * 1000 };
}

function serverOptions(opts: HttpServerOptions): http.ServerOptions {
  const headersTimeout = opts.headersTimeoutMs ?? TIMEOUTS.headersMs;
  return {
    headersTimeout,
    requestTimeout: Math.max(opts.requestTimeoutMs ?? TIMEOUTS.requestMs, headersTimeout),
    // How often node looks for expired requests; its 30 s default would let a stalled socket live that long.
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 2))),
    // A missing Host is answered by handle(), with the error object and a request id.
    requireHostHeader: false,
  };
}

/** Stops accepting, lets `inFlight` finish for up to `graceMs`, then closes every socket. */
async function closeGracefully(server: http.Server, inFlight: Set<Promise<void>>, graceMs: number): Promise<void> {
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
