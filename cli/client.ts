// A typed client of interface 1.0.0 (undici): one method per endpoint, typed errors, streams as async iterators.
//
// It talks to any implementation of the interface, not only Parley. Each answer is read with the
// contract's lenient schemas (the interface's defaults applied, unknown item types kept, only what a
// client needs required) and also checked against its `spec` schemas: a mismatch the client can live
// with is reported through `onDeviation`, not thrown. The raw body of every response stays available
// for callers that must print the API's JSON exactly.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { Agent, errors as undiciErrors, request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import * as C from '../src/contract/index.ts';
import {
  ErrorBody,
  EVENT_TYPES,
  LenientEventPayload,
  SpecEventPayload,
  type CreateCompletionRequestT,
  type CreateConversationRequestT,
  type EventPayload,
  type EventType,
  type SendMessageRequestT,
  type UpdateConversationRequestT,
} from '../src/contract/index.ts';

// ---------------------------------------------------------------------------------------------
// Types: the lenient reading layer, so that nothing an implementation may omit is promised to the caller.
// ---------------------------------------------------------------------------------------------

export type Conversation = z.infer<typeof C.LenientConversation>;
export type ConversationWithItems = z.infer<typeof C.LenientConversationWithItems>;
export type ConversationList = z.infer<typeof C.LenientConversationList>;
export type DeletionResult = z.infer<typeof C.LenientDeletionResult>;
/** A response; `error` is what D-17 adds to a failed one, optional since other implementations may omit it. */
export type MessageResponse = z.infer<typeof C.LenientResponse>;
export type Completion = z.infer<typeof C.LenientCompletion>;
export type AppConfig = z.infer<typeof C.LenientAppConfig>;
export type AppMetrics = z.infer<typeof C.LenientAppMetrics>;
export type ListQuery = { limit?: number | string; after?: string; before?: string; order?: 'asc' | 'desc'; external_user_id?: string };

/**
 * One event of a stream. `data` is typed by the reference payloads (D-16) for convenience, but only the
 * lenient payload was required: anything else may be missing with other servers.
 */
export type ClientStreamEvent = { [T in EventType]: { event: T; data: Partial<EventPayload<T>> & z.infer<(typeof LenientEventPayload)[T]>; raw: string } }[EventType];

/** An event whose name the interface does not list; only `EventStream.all()` yields them. */
export type UnknownStreamEvent = { event: string; data: undefined; raw: string; unknown: true };

export interface ApiResponse<T> {
  /** The lenient reading of the body (defaults filled in, extra fields kept). */
  data: T;
  /** The body exactly as received. */
  raw: string;
  status: number;
  headers: Record<string, string>;
  requestId: string | undefined;
  url: string;
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

export class ParleyError extends Error {
  override name = 'ParleyError';
}

/** The server answered with an error status (interface §7). */
export class ApiError extends ParleyError {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly param: string | null,
    readonly code: string | null,
    readonly raw: string,
    readonly headers: Record<string, string>,
    readonly requestId: string | undefined,
  ) {
    super(message);
  }
}

/** The server could not be reached, the connection broke, or a stream ended before its last event. */
export class ConnectionError extends ParleyError {
  override name = 'ConnectionError';
  constructor(
    readonly url: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** No answer (or, in a stream, no byte) within the timeout. */
export class TimeoutError extends ConnectionError {
  override name = 'TimeoutError';
}

/** The server answered 2xx with something a client cannot use (not JSON, or lacking what it needs). */
export class InvalidResponseError extends ParleyError {
  override name = 'InvalidResponseError';
  constructor(
    readonly url: string,
    message: string,
    /** The body, or the data of the event; '' when there is nothing more to show. */
    readonly raw: string,
    /** The event whose data `raw` is, for an event of a stream. */
    readonly event?: string,
  ) {
    super(message);
  }
}

/** The caller aborted the request (its AbortSignal fired). */
export class AbortedError extends ParleyError {
  override name = 'AbortedError';
}

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

export interface ClientOptions {
  /** Ends in `/v1` (§9). */
  baseUrl: string;
  apiKey: string;
  appId: string;
  /** Milliseconds to wait for the connection, the response headers, and (in a stream) each next chunk. */
  timeoutMs?: number;
  /** Check 2xx bodies and stream payloads against the contract's schemas (default true). */
  validate?: boolean;
  /** Called for each request and response, for --verbose. Never receives the key. */
  onTrace?: (line: string) => void;
  /** Called (once per distinct message) when an answer is usable but does not match the interface. */
  onDeviation?: (message: string) => void;
  /** Aborts every request of this client (the CLI: its output was closed). */
  signal?: AbortSignal;
  dispatcher?: Dispatcher;
}

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface RawRequest extends RequestOptions {
  method: string;
  /** Path below the base URL, e.g. `/apps/app_x/config`. */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
}

type Schema<T> = { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } } };
/** How an answer is read (`usable`) and what the interface says it is (`spec`). */
type Check<T> = { usable: Schema<T>; spec: Schema<unknown> };

const CHECK = {
  conversation: { usable: C.LenientConversation, spec: C.Conversation },
  conversationWithItems: { usable: C.LenientConversationWithItems, spec: C.ConversationWithItems },
  list: { usable: C.LenientConversationList, spec: C.ConversationList },
  deletion: { usable: C.LenientDeletionResult, spec: C.DeletionResult },
  // §2.3 gives defaults: an answer relying on them matches the interface.
  response: { usable: C.LenientResponse, spec: C.ResponseWithDefaults },
  completion: { usable: C.LenientCompletion, spec: C.Completion },
  config: { usable: C.LenientAppConfig, spec: C.AppConfig },
  metrics: { usable: C.LenientAppMetrics, spec: C.AppMetrics },
} satisfies Record<string, Check<unknown>>;

export const DEFAULT_TIMEOUT_MS = 60_000;

export class ParleyClient {
  readonly baseUrl: string;
  readonly appId: string;
  readonly timeoutMs: number;
  readonly #apiKey: string;
  readonly #options: ClientOptions;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #deviations = new Set<string>();

  constructor(options: ClientOptions) {
    this.#options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.appId = options.appId;
    this.#apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#ownsDispatcher = options.dispatcher === undefined;
    // undici's own timeouts stay as a backstop; the Deadline below is what honours timeoutMs.
    this.#dispatcher =
      options.dispatcher ?? new Agent({ connect: { timeout: this.timeoutMs }, headersTimeout: this.timeoutMs, bodyTimeout: this.timeoutMs });
  }

  /** The same client for another app (or key), sharing the connection pool. */
  with(overrides: Partial<Pick<ClientOptions, 'appId' | 'apiKey' | 'validate'>>): ParleyClient {
    return new ParleyClient({ ...this.#options, ...overrides, apiKey: overrides.apiKey ?? this.#apiKey, dispatcher: this.#dispatcher });
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  // §4.1–4.5 ------------------------------------------------------------------------------------

  createConversation(body: CreateConversationRequestT = {}, opts: RequestOptions = {}): Promise<ApiResponse<Conversation>> {
    return this.#json({ ...opts, method: 'POST', path: this.#app('/conversations'), body }, CHECK.conversation);
  }

  listConversations(query: ListQuery = {}, opts: RequestOptions = {}): Promise<ApiResponse<ConversationList>> {
    return this.#json({ ...opts, method: 'GET', path: this.#app('/conversations'), query }, CHECK.list);
  }

  /**
   * Every page from `query` on, following the cursors (D-12): `last_id` as `after`, or `first_id` as
   * `before` when walking backwards from a `before` cursor. A server that answers `has_more: true`
   * with a cursor already followed would loop forever: that is an InvalidResponseError.
   */
  async *listAllConversations(query: ListQuery = {}, opts: RequestOptions = {}): AsyncGenerator<ApiResponse<ConversationList>> {
    let q = { ...query };
    const backwards = q.before !== undefined;
    const followed = new Set([backwards ? q.before : q.after]);
    for (;;) {
      const page = await this.listConversations(q, opts);
      yield page;
      const { has_more, data } = page.data;
      if (!has_more || data.length === 0) return;
      const cursor = backwards ? (page.data.first_id ?? data[0]!.id) : (page.data.last_id ?? data.at(-1)!.id);
      if (followed.has(cursor)) {
        // The page itself was yielded already: nothing more to show with the error.
        throw new InvalidResponseError(page.url, `has_more is true but the cursor ${cursor} was followed already: the list would never end`, '');
      }
      followed.add(cursor);
      q = backwards ? { ...q, before: cursor } : { ...q, after: cursor };
    }
  }

  getConversation(id: string, opts: RequestOptions = {}): Promise<ApiResponse<ConversationWithItems>> {
    return this.#json({ ...opts, method: 'GET', path: this.#app(`/conversations/${enc(id)}`) }, CHECK.conversationWithItems);
  }

  updateConversation(id: string, body: UpdateConversationRequestT, opts: RequestOptions = {}): Promise<ApiResponse<Conversation>> {
    return this.#json({ ...opts, method: 'PATCH', path: this.#app(`/conversations/${enc(id)}`), body }, CHECK.conversation);
  }

  deleteConversation(id: string, opts: RequestOptions = {}): Promise<ApiResponse<DeletionResult>> {
    return this.#json({ ...opts, method: 'DELETE', path: this.#app(`/conversations/${enc(id)}`) }, CHECK.deletion);
  }

  // §4.6 ----------------------------------------------------------------------------------------

  /**
   * Sends a message. The reply is a stream or one JSON response depending on `stream`, or on the app's
   * default when `stream` is omitted, so the result says which one it is.
   */
  async sendMessage(
    conversationId: string,
    body: SendMessageRequestT,
    opts: RequestOptions = {},
  ): Promise<{ kind: 'response'; response: ApiResponse<MessageResponse> } | { kind: 'stream'; stream: EventStream }> {
    const req: RawRequest = { ...opts, method: 'POST', path: this.#app(`/conversations/${enc(conversationId)}`), body };
    const res = await this.#send(req);
    if (isEventStream(res.headers)) return { kind: 'stream', stream: this.#stream(res) };
    return { kind: 'response', response: await this.#finishJson(res, CHECK.response) };
  }

  // §4.7 ----------------------------------------------------------------------------------------

  async createCompletion(body: CreateCompletionRequestT & { stream?: false }, opts: RequestOptions = {}): Promise<ApiResponse<Completion>> {
    return this.#json({ ...opts, method: 'POST', path: this.#app('/completions'), body }, CHECK.completion);
  }

  async streamCompletion(body: Omit<CreateCompletionRequestT, 'stream'>, opts: RequestOptions = {}): Promise<EventStream> {
    const res = await this.#send({ ...opts, method: 'POST', path: this.#app('/completions'), body: { ...body, stream: true } });
    if (!isEventStream(res.headers)) {
      const raw = await readBody(res);
      throw new InvalidResponseError(res.url, `expected an event stream, got ${res.headers['content-type'] ?? 'no content type'}`, raw);
    }
    return this.#stream(res);
  }

  // §4.8, §4.9 ----------------------------------------------------------------------------------

  getConfig(opts: RequestOptions = {}): Promise<ApiResponse<AppConfig>> {
    return this.#json({ ...opts, method: 'GET', path: this.#app('/config') }, CHECK.config);
  }

  getMetrics(opts: RequestOptions = {}): Promise<ApiResponse<AppMetrics>> {
    return this.#json({ ...opts, method: 'GET', path: this.#app('/metrics') }, CHECK.metrics);
  }

  // Plumbing ------------------------------------------------------------------------------------

  /** Any request; a non-2xx answer throws ApiError. The body is returned unparsed when it is not JSON. */
  async request(req: RawRequest): Promise<ApiResponse<unknown>> {
    const res = await this.#send(req);
    const raw = await readBody(res);
    let data: unknown = raw;
    try {
      data = JSON.parse(raw);
    } catch {
      // Not JSON: the text is the data.
    }
    return { data, raw, status: res.status, headers: res.headers, requestId: res.headers['x-request-id'], url: res.url };
  }

  get #validate(): boolean {
    return this.#options.validate !== false;
  }

  #app(suffix: string): string {
    return `/apps/${enc(this.appId)}${suffix}`;
  }

  #stream(res: SentResponse): EventStream {
    return new EventStream(res, this.#validate, (m) => this.#deviation(m));
  }

  #deviation(message: string): void {
    if (this.#deviations.has(message)) return;
    this.#deviations.add(message);
    this.#options.onDeviation?.(message);
  }

  async #json<T>(req: RawRequest, check: Check<T>): Promise<ApiResponse<T>> {
    return this.#finishJson(await this.#send(req), check);
  }

  async #finishJson<T>(res: SentResponse, check: Check<T>): Promise<ApiResponse<T>> {
    const raw = await readBody(res);
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new InvalidResponseError(res.url, `the server answered ${res.status} with a body that is not JSON`, raw);
    }
    let data = parsed as T;
    if (this.#validate) {
      const usable = check.usable.safeParse(parsed);
      if (!usable.success) throw new InvalidResponseError(res.url, `the server's answer is not usable: ${describeIssues(usable.error.issues)}`, raw);
      data = usable.data;
      const spec = check.spec.safeParse(parsed);
      if (!spec.success) this.#deviation(`the answer of ${res.method} ${res.url} does not match the interface: ${describeIssues(spec.error.issues)}`);
    }
    return { data, raw, status: res.status, headers: res.headers, requestId: res.headers['x-request-id'], url: res.url };
  }

  /** Sends the request; resolves once headers arrive with a 2xx, throws ApiError/ConnectionError otherwise. */
  async #send(req: RawRequest): Promise<SentResponse> {
    const url = this.#url(req);
    const headers: Record<string, string> = { accept: 'application/json, text/event-stream', ...req.headers, authorization: `Bearer ${this.#apiKey}` };
    let payload: string | undefined;
    if (req.body !== undefined) {
      payload = JSON.stringify(req.body);
      headers['content-type'] ??= 'application/json';
    }
    const trace = this.#options.onTrace;
    trace?.(`> ${req.method} ${url}`);
    if (trace) for (const [k, v] of Object.entries(headers)) trace(`> ${k}: ${k === 'authorization' ? 'Bearer [redacted]' : v}`);
    if (trace && payload !== undefined) trace(`> ${payload}`);
    const started = performance.now();
    const deadline = new Deadline(this.timeoutMs);
    const signals = [req.signal, this.#options.signal, deadline.signal].filter((s): s is AbortSignal => s !== undefined);
    const networkError = (err: unknown) => this.#networkError(err, url, req.signal, deadline);
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, { method: req.method as Dispatcher.HttpMethod, headers, body: payload, signal: AbortSignal.any(signals), dispatcher: this.#dispatcher });
    } catch (err) {
      deadline.clear();
      throw networkError(err);
    }
    deadline.headersArrived();
    const flat = flattenHeaders(res.headers);
    trace?.(`< ${res.statusCode} (${Math.round(performance.now() - started)} ms)${flat['x-request-id'] ? ` x-request-id: ${flat['x-request-id']}` : ''}${flat['content-type'] ? ` content-type: ${flat['content-type']}` : ''}`);
    const sent: SentResponse = { url, method: req.method, status: res.statusCode, headers: flat, body: res.body, deadline, networkError };
    if (res.statusCode < 200 || res.statusCode >= 300) throw await toApiError(sent);
    return sent;
  }

  #url(req: RawRequest): string {
    const url = new URL(this.baseUrl + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    return url.toString();
  }

  #networkError(err: unknown, url: string, signal: AbortSignal | undefined, deadline: Deadline): ParleyError {
    if (err instanceof ParleyError) return err;
    const seconds = `${this.timeoutMs / 1000}s`;
    if (signal?.aborted || this.#options.signal?.aborted) return new AbortedError('the request was cancelled', { cause: err });
    if (deadline.expired) return new TimeoutError(url, deadline.answered ? `the server went silent for ${seconds}` : `no answer within ${seconds}`, { cause: err });
    if (err instanceof undiciErrors.HeadersTimeoutError) return new TimeoutError(url, `no answer within ${seconds}`, { cause: err });
    if (err instanceof undiciErrors.BodyTimeoutError) return new TimeoutError(url, `the server went silent for ${seconds}`, { cause: err });
    if (err instanceof undiciErrors.ConnectTimeoutError) return new TimeoutError(url, `could not connect within ${seconds}`, { cause: err });
    return new ConnectionError(url, describeNetworkError(err), { cause: err });
  }
}

/**
 * The timeout of one request: from sending it to its headers, then the longest silence in its body.
 * undici's headersTimeout and bodyTimeout run on its coarse "fast timers" (lib/util/timers.js: a
 * clock that ticks every 499 ms), so below about a second they fire late, and a body timer refreshed
 * by chunks more often than it ticks never fires at all. This one is a plain Node timer, restarted
 * by every chunk, that aborts the request.
 */
class Deadline {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  /** Whether the headers arrived, i.e. whether an expiry is a silent body rather than no answer. */
  answered = false;

  constructor(ms: number) {
    this.#timer = setTimeout(() => this.#controller.abort(), ms);
    // The open socket keeps the process alive while a request is under way; the timer need not.
    this.#timer.unref();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get expired(): boolean {
    return this.#controller.signal.aborted;
  }

  headersArrived(): void {
    this.answered = true;
    this.#timer.refresh();
  }

  /** Something arrived: the wait starts again. */
  refresh(): void {
    if (!this.expired) this.#timer.refresh();
  }

  clear(): void {
    clearTimeout(this.#timer);
  }
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

interface SentResponse {
  url: string;
  method: string;
  status: number;
  headers: Record<string, string>;
  body: Dispatcher.ResponseData['body'];
  deadline: Deadline;
  networkError(err: unknown): ParleyError;
}

const KNOWN_EVENTS = new Set<string>(EVENT_TYPES);

/**
 * The events of one SSE response (§6), in order, as an async iterator. Unknown event names and SSE
 * comments (D-18) are skipped. The iterator ends after `response.completed` or `response.failed`; a
 * stream that ends before either throws ConnectionError. Leaving the loop early closes the connection.
 */
export class EventStream implements AsyncIterable<ClientStreamEvent> {
  readonly url: string;
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly requestId: string | undefined;
  #res: SentResponse;
  #validate: boolean;
  #onDeviation: (message: string) => void;
  #used = false;

  constructor(res: SentResponse, validate: boolean, onDeviation: (message: string) => void = () => {}) {
    this.#res = res;
    this.#validate = validate;
    this.#onDeviation = onDeviation;
    this.url = res.url;
    this.status = res.status;
    this.headers = res.headers;
    this.requestId = res.headers['x-request-id'];
  }

  [Symbol.asyncIterator](): AsyncGenerator<ClientStreamEvent> {
    return this.#iterate(false) as AsyncGenerator<ClientStreamEvent>;
  }

  /** Every event in order, also those with names the interface does not list (extensions), for raw output. */
  all(): AsyncGenerator<ClientStreamEvent | UnknownStreamEvent> {
    return this.#iterate(true);
  }

  async *#iterate(includeUnknown: boolean): AsyncGenerator<ClientStreamEvent | UnknownStreamEvent> {
    if (this.#used) throw new ParleyError('a stream can be iterated only once');
    this.#used = true;
    const pending: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (m) => pending.push(m) });
    const decoder = new TextDecoder();
    const { body, deadline } = this.#res;
    try {
      try {
        for await (const chunk of body) {
          deadline.refresh();
          parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
          while (pending.length > 0) {
            const m = pending.shift()!;
            const event = this.#toEvent(m);
            if (event !== undefined) yield event;
            else if (includeUnknown) yield { event: m.event ?? 'message', data: undefined, raw: m.data, unknown: true };
            if (event?.event === 'response.completed' || event?.event === 'response.failed') return;
          }
        }
      } catch (err) {
        if (err instanceof ParleyError) throw err;
        throw this.#res.networkError(err);
      }
      // A last event not followed by a blank line is incomplete by the SSE rules: it is dropped.
      throw new ConnectionError(this.url, 'the stream ended before response.completed or response.failed');
    } finally {
      deadline.clear();
      // Also when the caller leaves the loop early: the connection is not reused half-read.
      if (!body.readableEnded) body.destroy();
    }
  }

  #toEvent(m: EventSourceMessage): ClientStreamEvent | undefined {
    const name = m.event ?? 'message';
    if (!KNOWN_EVENTS.has(name)) return undefined;
    let data: unknown;
    try {
      data = JSON.parse(m.data);
    } catch {
      throw new InvalidResponseError(this.url, `the data of a ${name} event is not JSON`, m.data, name);
    }
    if (this.#validate) {
      const usable = LenientEventPayload[name as EventType].safeParse(data);
      if (!usable.success) throw new InvalidResponseError(this.url, `a ${name} event is not usable: ${describeIssues(usable.error.issues)}`, m.data, name);
      const spec = SpecEventPayload[name as EventType].safeParse(data);
      if (!spec.success) this.#onDeviation(`a ${name} event of ${this.url} does not match the interface: ${describeIssues(spec.error.issues)}`);
      data = usable.data;
    }
    return { event: name, data, raw: m.data } as ClientStreamEvent;
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

function enc(segment: string): string {
  return encodeURIComponent(segment);
}

function isEventStream(headers: Record<string, string>): boolean {
  return (headers['content-type'] ?? '').toLowerCase().startsWith('text/event-stream');
}

function flattenHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** The whole body as text; each chunk restarts the deadline, so a slow but steady body is not cut. */
async function readBody(res: SentResponse): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  try {
    for await (const chunk of res.body) {
      res.deadline.refresh();
      text += decoder.decode(chunk as Uint8Array, { stream: true });
    }
    return text + decoder.decode();
  } catch (err) {
    throw res.networkError(err);
  } finally {
    res.deadline.clear();
  }
}

async function toApiError(res: SentResponse): Promise<ApiError> {
  const raw = await readBody(res);
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    // Not JSON (a proxy's HTML page, say): keep the status and a short excerpt.
  }
  const parsed = ErrorBody.safeParse(body);
  const requestId = res.headers['x-request-id'];
  if (parsed.success) {
    const e = parsed.data.error;
    return new ApiError(res.status, e.type, e.message, e.param ?? null, e.code ?? null, raw, res.headers, requestId);
  }
  const excerpt = raw.trim().replace(/\s+/g, ' ').slice(0, 200);
  return new ApiError(res.status, 'http_error', `HTTP ${res.status} without an error object${excerpt ? `: ${excerpt}` : ''}`, null, null, raw, res.headers, requestId);
}

function describeIssues(issues: Array<{ path: PropertyKey[]; message: string }>): string {
  return issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join('.') || '(body)'}: ${i.message}`)
    .join('; ');
}

function describeNetworkError(err: unknown): string {
  const e = err as { code?: string; message?: string; errors?: Array<{ code?: string; message?: string }> };
  const code = e?.code ?? e?.errors?.[0]?.code;
  const message = e?.message || e?.errors?.[0]?.message || String(err);
  if (code === 'ECONNREFUSED') return 'connection refused (is the server running?)';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'the connection was closed by the server';
  return code ? `${message} (${code})` : message;
}
