// A loopback proxy in front of a reference server that breaks one rule: the "broken implementations"
// the conformance suite must catch. Bodies are buffered, so a hook sees (and may rewrite) all of it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxyRequest {
  method: string;
  /**
   * Below the base URL, without the query: `/apps/app_demo/conversations`. A request to the widget API
   * (D-45) keeps its whole path, `/widget/v1/apps/…`, so that no pattern of the REST API matches it.
   */
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  body: string;
  /** The body parsed as JSON, when it is JSON. */
  json?: any;
}

export interface SseBlock {
  event: string;
  data: any;
}

export interface ProxyResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  json?: any;
  /** Parsed SSE events, when the response is a stream; rewritten ones are re-serialized. */
  events?: SseBlock[];
  /**
   * The reference server cut the body short (D-124: `drop-after`, `reset-after`): `body` is what came
   * before the cut, and the client's connection is cut after it too, never ended cleanly.
   */
  cut?: boolean;
}

export interface ProxyTools {
  /** Sends a request to the reference server, unchanged by the hooks. */
  forward(req: ProxyRequest): Promise<ProxyResponse>;
  /** Sends a request to the reference server and gives its answer as it comes (a stream read at the hook's pace). */
  upstream(req: ProxyRequest, signal?: AbortSignal): Promise<Response>;
}

export interface ProxyOptions {
  /**
   * Requests whose stream goes through as it comes instead of whole once it ended (a slow app's, which
   * a client cancels or leaves mid-reply); response hooks do not see such a stream, nor its bytes.
   */
  passThrough?: (req: ProxyRequest) => boolean;
}

type MaybePromise<T> = T | Promise<T>;

export interface MutantHooks {
  /** Changes the request in place before it reaches the reference server (returns nothing), or answers it instead (returns the answer). */
  request?(req: ProxyRequest, tools: ProxyTools): MaybePromise<void> | MaybePromise<ProxyResponse | undefined>;
  /** Changes the response (edit `json` / `events` / `body` / `status` / `headers` in place). */
  response?(res: ProxyResponse, req: ProxyRequest, tools: ProxyTools): MaybePromise<void>;
  /** Answers the request itself, byte by byte (e.g. a stream that stalls); true when it did. */
  takeover?(req: ProxyRequest, res: http.ServerResponse, tools: ProxyTools): boolean;
  /** Sees each chunk of a stream that goes through (ProxyOptions.passThrough) before it is sent on, and may hold it back a while. */
  passChunk?(req: ProxyRequest, text: string): MaybePromise<void>;
  /**
   * The connection of a stream that went through (ProxyOptions.passThrough) closed before the stream
   * ended: the client left, or the reference server cut it (D-124), which an implementation sees as its
   * connection closing too (the hook runs before the cut reaches the client). `sent` is what the client got.
   */
  connectionClosed?(req: ProxyRequest, sent: string, tools: ProxyTools): MaybePromise<void>;
  /** Stops what the hooks started (a webhook relay), when the proxy closes. */
  close?(): Promise<void>;
}

export interface MutantProxy {
  baseUrl: string;
  close(): Promise<void>;
}

/** The body as it comes, and whether the server cut it short (a fetch body read rejects on a cut). */
async function readBody(r: Response): Promise<{ text: string; cut: boolean }> {
  const decoder = new TextDecoder();
  let text = '';
  try {
    for await (const chunk of (r.body ?? []) as AsyncIterable<Uint8Array>) text += decoder.decode(chunk, { stream: true });
    return { text: text + decoder.decode(), cut: false };
  } catch {
    return { text, cut: true };
  }
}

/** Sends `text` after the head already written, then ends the connection without ending the body, as the reference server cut it. */
function cutAfter(res: http.ServerResponse, text: string): void {
  res.write(text);
  // A FIN once what was written is out, without the chunked terminator: the client reads a body cut short.
  res.socket?.end();
}

function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function parseSse(text: string): SseBlock[] {
  return text
    .split('\n\n')
    .filter((b) => b.trim() && !b.startsWith(':'))
    .map((b) => {
      const lines = b.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? 'message';
      const data = lines
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      return { event, data: parseJson(data) ?? data };
    });
}

export function serializeSse(events: SseBlock[]): string {
  return events.map((e) => `event: ${e.event}\ndata: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`).join('');
}

/**
 * After a hook: the body follows what the hook changed. Bytes it wrote itself win; else changed
 * events or JSON are re-serialized; untouched responses stay byte-identical.
 */
function syncBody(res: ProxyResponse, bodyBefore: string): void {
  if (res.body !== bodyBefore) return;
  if (res.events) {
    if (serializeSse(res.events) !== serializeSse(parseSse(res.body))) res.body = serializeSse(res.events);
  } else if (res.json !== undefined && JSON.stringify(res.json) !== JSON.stringify(parseJson(res.body)))
    res.body = JSON.stringify(res.json);
}

/**
 * Several mutants as one: request hooks in turn until one answers, response hooks in turn (each
 * sees the bytes the ones before it produced), the first takeover that takes the request.
 */
export function composeHooks(all: MutantHooks[]): MutantHooks {
  return {
    async request(req, tools) {
      for (const h of all) {
        const answer = await h.request?.(req, tools);
        if (answer) return answer;
      }
    },
    async response(res, req, tools) {
      for (const h of all) {
        const before = res.body;
        await h.response?.(res, req, tools);
        syncBody(res, before);
        // What the next hook edits must match the bytes so far.
        if (res.body !== before) {
          if (res.events) res.events = parseSse(res.body);
          else res.json = parseJson(res.body);
        }
      }
    },
    takeover(req, res, tools) {
      return all.some((h) => h.takeover?.(req, res, tools) ?? false);
    },
    async passChunk(req, text) {
      for (const h of all) await h.passChunk?.(req, text);
    },
    async connectionClosed(req, sent, tools) {
      for (const h of all) await h.connectionClosed?.(req, sent, tools);
    },
    async close() {
      for (const h of all) await h.close?.();
    },
  };
}

/** The widget API's path space beside the REST API's (docs/widget.md, D-45): served too, under its own path. */
export const WIDGET_PATH = '/widget/v1';
export const isWidget = (req: ProxyRequest) => req.path.startsWith(`${WIDGET_PATH}/`);
/** The admin surface (docs/control-plane.md), where the webhook cases register their endpoints (D-81). */
export const ADMIN_PATH = '/admin/v1';
/** Served beside the APIs, at the server's root: the widget's script (D-55). */
const ROOT_ASSETS = new Set(['/widget.js']);
/** Paths kept whole (not below the REST API's base path): the widget API's, the admin surface's and the root assets. */
const outsideApi = (path: string) => path.startsWith(`${WIDGET_PATH}/`) || path.startsWith(`${ADMIN_PATH}/`) || ROOT_ASSETS.has(path);

/** `upstream` is the reference server's base URL (ending in /v1); the proxy serves `basePath`, and the widget API. */
export async function startMutantProxy(
  upstream: string,
  hooks: MutantHooks,
  basePath = '/v1',
  opts: ProxyOptions = {},
): Promise<MutantProxy> {
  const upstreamUrl = new URL(upstream);
  const fetchUpstream = (preq: ProxyRequest, signal?: AbortSignal): Promise<Response> => {
    const qs = preq.query.toString();
    const target = `${upstreamUrl.origin}${outsideApi(preq.path) ? '' : upstreamUrl.pathname}${preq.path}${qs ? `?${qs}` : ''}`;
    const sendBody = preq.json !== undefined && preq.body !== '' ? JSON.stringify(preq.json) : preq.body;
    return fetch(target, {
      method: preq.method,
      headers: preq.headers,
      body: preq.method === 'GET' || preq.method === 'HEAD' || sendBody === '' ? undefined : sendBody,
      signal,
    });
  };
  const headersOf = (r: Response): Record<string, string> => {
    const rh: Record<string, string> = {};
    r.headers.forEach((v, k) => {
      if (!['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'date'].includes(k)) rh[k] = v;
    });
    return rh;
  };
  const answerOf = async (r: Response, rh: Record<string, string>): Promise<ProxyResponse> => {
    const { text, cut } = await readBody(r);
    const sse = (rh['content-type'] ?? '').startsWith('text/event-stream');
    return {
      status: r.status,
      headers: rh,
      body: text,
      ...(sse ? { events: parseSse(text) } : { json: parseJson(text) }),
      ...(cut ? { cut } : {}),
    };
  };
  const forward = async (preq: ProxyRequest): Promise<ProxyResponse> => {
    const r = await fetchUpstream(preq);
    return answerOf(r, headersOf(r));
  };
  const tools: ProxyTools = { forward, upstream: fetchUpstream };
  /** A stream of `preq` sent on as it comes; true when the answer was one (else the caller goes on with `buffered`). */
  const streamThrough = async (preq: ProxyRequest, res: http.ServerResponse): Promise<ProxyResponse | true> => {
    const ac = new AbortController();
    const r = await fetchUpstream(preq, ac.signal);
    const rh = headersOf(r);
    if (!(rh['content-type'] ?? '').startsWith('text/event-stream') || !r.body) return answerOf(r, rh);
    res.writeHead(r.status, rh);
    let sent = '';
    // Set once the stream ended or was cut upstream: a close after that is not the client leaving.
    let ended = false;
    res.once('close', () => {
      if (ended) return;
      ac.abort();
      void hooks.connectionClosed?.(preq, sent, tools);
    });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of r.body as AsyncIterable<Uint8Array>) {
        const text = decoder.decode(chunk, { stream: true });
        await hooks.passChunk?.(preq, text);
        sent += text;
        res.write(chunk);
      }
      ended = true;
      res.end();
    } catch {
      // The client left (the close handler aborted the upstream read), or the reference server cut the
      // stream: then the hook sees the connection close before the client sees the cut.
      if (ac.signal.aborted) return true;
      ended = true;
      await hooks.connectionClosed?.(preq, sent, tools);
      cutAfter(res, '');
    }
    return true;
  };
  const server = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://proxy');
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && !['host', 'connection', 'content-length', 'transfer-encoding'].includes(k)) headers[k] = v;
      const widget = outsideApi(url.pathname);
      if (!widget && !url.pathname.startsWith(`${basePath}/`)) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'not found', type: 'not_found', param: null, code: null } }));
        return;
      }
      const path = widget ? url.pathname : `/${url.pathname.slice(basePath.length + 1)}`;
      const preq: ProxyRequest = { method: req.method ?? 'GET', path, query: url.searchParams, headers, body, json: parseJson(body) };
      if (hooks.takeover?.(preq, res, tools)) return;
      const short = await hooks.request?.(preq, tools);
      const through = !short && opts.passThrough?.(preq) ? await streamThrough(preq, res) : undefined;
      if (through === true) return;
      const pres: ProxyResponse = short ? short : (through ?? (await forward(preq)));
      // A hook's own answer may give only `json`: its body is that JSON.
      if (short && pres.body === '' && pres.json !== undefined) pres.body = JSON.stringify(pres.json);
      const bodyBefore = pres.body;
      await hooks.response?.(pres, preq, tools);
      syncBody(pres, bodyBefore);
      if (pres.cut) {
        res.writeHead(pres.status, pres.headers);
        cutAfter(res, pres.body);
        return;
      }
      res.writeHead(pres.status, { ...pres.headers, 'content-length': Buffer.byteLength(pres.body) });
      res.end(pres.body);
    } catch (err) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `proxy: ${(err as Error).message}`, type: 'internal_error', param: null, code: null } }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}${basePath}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }).then(() => hooks.close?.()),
  };
}
