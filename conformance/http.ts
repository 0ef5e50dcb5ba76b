// The suite's HTTP client: one exchange per call, recorded for the report (as curl), JSON or SSE read
// incrementally under idle and total timeouts.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { describeNetworkError } from '../cli/core/error.ts';

export interface OutgoingRequest {
  method: string;
  /** Below the base URL, e.g. `/apps/app_1/conversations?limit=2`. */
  path: string;
  /** Serialized as JSON with `Content-Type: application/json`. */
  body?: unknown;
  /** Sent verbatim instead of `body` (malformed JSON, other content types). */
  raw?: string;
  /** The bearer key; `null` sends no Authorization header. Defaults to the target's key. */
  key?: string | null;
  headers?: Record<string, string>;
}

export interface SseEvent {
  event: string;
  data: string;
  /** `data` parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
  id?: string;
}

export interface SseResult {
  events: SseEvent[];
  comments: string[];
  /** Framing problems the parser reported (unknown fields, …). */
  parseErrors: string[];
  /** The stream closed before the idle/total timeout; false when the suite gave up waiting. */
  ended: boolean;
  timedOut?: 'idle' | 'total';
}

export interface Exchange {
  request: { method: string; url: string; headers: Record<string, string>; body?: string };
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON, or undefined. */
  json: unknown;
  sse?: SseResult;
  ms: number;
}

export class TransportError extends Error {
  override name = 'TransportError';
  constructor(
    message: string,
    readonly request: Exchange['request'],
  ) {
    super(message);
  }
}

export interface HttpClientOptions {
  baseUrl: string;
  apiKey: string;
  /** Time to the response headers, and the longest silence inside a body. */
  timeoutMs: number;
  /** Longest time for a whole body (SSE streams included). */
  totalMs: number;
  /** Aborts every request under way (the run was interrupted). */
  signal?: AbortSignal;
}

function isEventStream(h: Headers): boolean {
  return (h.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase() === 'text/event-stream';
}

export class HttpClient {
  constructor(readonly opts: HttpClientOptions) {}

  async send(r: OutgoingRequest): Promise<Exchange> {
    const headers: Record<string, string> = {};
    const key = r.key === undefined ? this.opts.apiKey : r.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let body: string | undefined;
    if (r.raw !== undefined) body = r.raw;
    else if (r.body !== undefined) {
      body = JSON.stringify(r.body);
      headers['content-type'] = 'application/json';
    }
    Object.assign(headers, r.headers);
    const request = { method: r.method, url: this.opts.baseUrl + r.path, headers, body };

    const ac = new AbortController();
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    let timedOut: 'idle' | 'total' | undefined;
    const arm = (ms: number, kind: 'idle' | 'total') => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = kind;
        ac.abort();
      }, ms);
    };
    const totalTimer = setTimeout(() => {
      timedOut = 'total';
      ac.abort();
    }, this.opts.totalMs);
    arm(this.opts.timeoutMs, 'idle');
    const stop = this.opts.signal;
    const onStop = () => ac.abort();
    if (stop?.aborted) onStop();
    stop?.addEventListener('abort', onStop, { once: true });
    try {
      let res: Response;
      try {
        res = await fetch(request.url, { method: r.method, headers, body, signal: ac.signal, redirect: 'manual' });
      } catch (err) {
        const why = timedOut ? `no response within ${this.opts.timeoutMs} ms` : stop?.aborted ? 'the run was interrupted' : describeNetworkError(err);
        throw new TransportError(why, request);
      }
      const sse = isEventStream(res.headers) ? newSseResult() : undefined;
      const parser = sse
        ? createParser({
            onEvent: (e: EventSourceMessage) => sse.events.push(toEvent(e)),
            onComment: (c) => sse.comments.push(c),
            onError: (e) => sse.parseErrors.push(e.message),
          })
        : undefined;
      const decoder = new TextDecoder();
      let text = '';
      if (res.body) {
        const reader = res.body.getReader();
        try {
          for (;;) {
            arm(this.opts.timeoutMs, 'idle');
            const { done, value } = await reader.read();
            if (done) break;
            const chunk = decoder.decode(value, { stream: true });
            text += chunk;
            parser?.feed(chunk);
          }
          const tail = decoder.decode();
          text += tail;
          parser?.feed(tail);
          if (sse) sse.ended = true;
        } catch (err) {
          if (!timedOut) {
            // The server cut the body short: what arrived is kept, and `ended` says it did not end well.
            if (!sse) throw new TransportError(`the response body was cut short: ${describeNetworkError(err)}`, request);
          } else if (!sse) {
            throw new TransportError(`the response body did not finish within ${timedOut === 'idle' ? this.opts.timeoutMs : this.opts.totalMs} ms`, request);
          }
          if (sse) sse.timedOut = timedOut;
          await reader.cancel().catch(() => {});
        }
      }
      let json: unknown;
      if (!sse) {
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
      }
      return { request, status: res.status, headers: res.headers, text, json, sse, ms: Math.round(performance.now() - started) };
    } finally {
      clearTimeout(timer);
      clearTimeout(totalTimer);
      stop?.removeEventListener('abort', onStop);
    }
  }
}

function newSseResult(): SseResult {
  return { events: [], comments: [], parseErrors: [], ended: false };
}

function toEvent(e: EventSourceMessage): SseEvent {
  let json: unknown;
  try {
    json = JSON.parse(e.data);
  } catch {
    json = undefined;
  }
  // WHATWG SSE: an event without an `event:` field is a "message" event.
  return { event: e.event ?? 'message', data: e.data, json, ...(e.id !== undefined ? { id: e.id } : {}) };
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

const BODY_SHOWN = 600;

/** The request as a curl command; keys are replaced by the names of environment variables. */
export function toCurl(req: Exchange['request'], secrets: Array<[string, string]>): string {
  const redact = (s: string) => secrets.reduce((acc, [secret, name]) => (secret ? acc.split(secret).join(name) : acc), s);
  const parts = ['curl', '-sS', '-X', req.method, shellQuote(req.url)];
  for (const [k, v] of Object.entries(req.headers)) {
    const value = redact(v);
    // A variable must stay outside single quotes to expand.
    parts.push('-H', value.includes('$') ? `"${k}: ${value.replace(/"/g, '\\"')}"` : shellQuote(`${k}: ${value}`));
  }
  if (req.body !== undefined) {
    const body = redact(req.body);
    parts.push('--data-binary', shellQuote(body.length > BODY_SHOWN ? `${body.slice(0, BODY_SHOWN)}…` : body));
    if (body.length > BODY_SHOWN) parts.push(`# body shown up to ${BODY_SHOWN} of ${Buffer.byteLength(req.body)} bytes`);
  }
  return parts.join(' ');
}

/**
 * What came back, for a report: status, the headers that matter, and the body, shortened to `max`
 * characters: its start, and for a stream its end too (where a missing or late event shows).
 */
export function describeResponse(ex: Exchange, secrets: Array<[string, string]>, max = 1500): string {
  const shown = ['content-type', 'allow', 'retry-after', 'cache-control'];
  const headers = shown.flatMap((h) => (ex.headers.get(h) !== null ? [`${h}: ${ex.headers.get(h)}`] : []));
  let body = secrets.reduce((acc, [secret, name]) => (secret ? acc.split(secret).join(name) : acc), ex.text);
  if (body.length > max) {
    const head = ex.sse ? Math.floor(max / 2) : max;
    const tail = max - head;
    body = `${body.slice(0, head)}… (${body.length - max} characters left out)${tail > 0 ? ` …${body.slice(-tail)}` : ''}`;
  }
  const end = ex.sse ? (ex.sse.ended ? '' : `\n(stream not finished: ${ex.sse.timedOut ?? 'cut short'})`) : '';
  return `HTTP ${ex.status}${headers.length ? '\n' + headers.join('\n') : ''}\n\n${body}${end}`;
}
