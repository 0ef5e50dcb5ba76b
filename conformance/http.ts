// The suite's HTTP client: one exchange per call, recorded for the report (as curl), JSON or SSE read
// incrementally under idle and total timeouts.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { describeNetworkError } from '../cli/core/error.ts';
import { retryAfterMs, sleep, type Pacer } from './pace.ts';

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
  /** Sent below this base URL instead of the target's: the widget API, which has its own path space (D-45). */
  baseUrl?: string;
  /**
   * Called with each SSE event as it arrives (its index in the stream); returning 'leave' closes the
   * connection there, as a client that goes away would (the stream is then `left`, not `ended`).
   */
  onEvent?: (event: SseEvent, index: number) => 'leave' | undefined;
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
  /** The suite closed the connection on purpose (OutgoingRequest.onEvent), after this many events. */
  left?: number;
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
  /** Spaces the requests (--rate-limit, the counted-requests budget); shared by the cases and the cleanup. */
  pacer?: Pacer;
  /** A 429 is sent again after its Retry-After, up to `max` times, when the wait is at most `maxWaitMs`. */
  retry429?: { max: number; maxWaitMs: number; unless?: (path: string) => boolean };
}

function isEventStream(h: Headers): boolean {
  return (h.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase() === 'text/event-stream';
}

export class HttpClient {
  /** Requests sent (retries included), and 429s sent again after their Retry-After. */
  readonly stats = { sent: 0, retried429: 0 };

  constructor(readonly opts: HttpClientOptions) {}

  /** One exchange; a 429 is retried after its Retry-After within the bounds of `retry429`. */
  async send(r: OutgoingRequest): Promise<Exchange> {
    const retry = this.opts.retry429;
    for (let attempt = 0; ; attempt++) {
      await this.opts.pacer?.before(r.method, r.path, this.opts.signal);
      this.stats.sent++;
      const ex = await this.#exchange(r);
      // x-should-retry: false says that waiting frees nothing (a storage quota, D-27).
      const final = ex.headers.get('x-should-retry') === 'false';
      if (ex.status !== 429 || final || !retry || attempt >= retry.max || retry.unless?.(r.path) || this.opts.signal?.aborted) return ex;
      // Without Retry-After: 1 s, 2 s, 4 s…
      const wait = retryAfterMs(ex.headers.get('retry-after')) ?? 1000 * 2 ** attempt;
      if (wait > retry.maxWaitMs) return ex;
      this.stats.retried429++;
      await sleep(wait, this.opts.signal);
    }
  }

  async #exchange(r: OutgoingRequest): Promise<Exchange> {
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
    const request = { method: r.method, url: (r.baseUrl ?? this.opts.baseUrl) + r.path, headers, body };

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
        const why = timedOut
          ? `no response within ${this.opts.timeoutMs} ms`
          : stop?.aborted
            ? 'the run was interrupted'
            : describeNetworkError(err);
        throw new TransportError(why, request);
      }
      const sse = isEventStream(res.headers) ? newSseResult() : undefined;
      const parser = sse
        ? createParser({
            onEvent: (e: EventSourceMessage) => {
              if (sse.left !== undefined) return;
              const event = toEvent(e);
              sse.events.push(event);
              if (sse.left === undefined && r.onEvent?.(event, sse.events.length - 1) === 'leave') {
                sse.left = sse.events.length;
                ac.abort();
              }
            },
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
          if (sse?.left !== undefined) {
            await reader.cancel().catch(() => {});
            return {
              request,
              status: res.status,
              headers: res.headers,
              text,
              json: undefined,
              sse,
              ms: Math.round(performance.now() - started),
            };
          }
          if (!timedOut) {
            // The server cut the body short: what arrived is kept, and `ended` says it did not end well.
            if (!sse) throw new TransportError(`the response body was cut short: ${describeNetworkError(err)}`, request);
          } else if (!sse) {
            throw new TransportError(
              `the response body did not finish within ${timedOut === 'idle' ? this.opts.timeoutMs : this.opts.totalMs} ms`,
              request,
            );
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
