// A typed client of interface 1.0.0 (undici): one method per endpoint, typed errors, streams as async iterators.
//
// It talks to any implementation of the interface, not only Parley: responses are checked against the
// contract's `spec` schemas (loose: extra fields are kept, D-n extras are never required), and the raw
// body of every response stays available for callers that must print the API's JSON exactly.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { Agent, errors as undiciErrors, request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  AppConfig,
  AppMetrics,
  Completion,
  Conversation,
  ConversationList,
  ConversationWithItems,
  DeletionResult,
  ErrorBody,
  EVENT_TYPES,
  Response,
  SpecEventPayload,
  type CreateCompletionRequestT,
  type CreateConversationRequestT,
  type EventPayload,
  type EventType,
  type ResponseErrorT,
  type SendMessageRequestT,
  type UpdateConversationRequestT,
} from '../src/contract/index.ts';

// ---------------------------------------------------------------------------------------------
// Types: the spec layer, so that nothing an implementation may omit is promised to the caller.
// ---------------------------------------------------------------------------------------------

export type Conversation = z.infer<typeof Conversation>;
export type ConversationWithItems = z.infer<typeof ConversationWithItems>;
export type ConversationList = z.infer<typeof ConversationList>;
export type DeletionResult = z.infer<typeof DeletionResult>;
/** A response; `error` is what D-17 adds to a failed one, optional since other implementations may omit it. */
export type MessageResponse = z.infer<typeof Response> & { error?: ResponseErrorT };
export type Completion = z.infer<typeof Completion> & { error?: ResponseErrorT };
export type AppConfig = z.infer<typeof AppConfig>;
export type AppMetrics = z.infer<typeof AppMetrics>;
export type ListQuery = { limit?: number | string; after?: string; before?: string; order?: 'asc' | 'desc'; external_user_id?: string };

/**
 * One event of a stream. `data` is typed by the reference payloads (D-16) for convenience, but only the
 * spec payload was checked: fields the interface leaves "not shown" may be missing with other servers.
 */
export type ClientStreamEvent = { [T in EventType]: { event: T; data: Partial<EventPayload<T>> & z.infer<(typeof SpecEventPayload)[T]>; raw: string } }[EventType];

/** An event whose name the interface does not list; only `EventStream.all()` yields them. */
export type UnknownStreamEvent = { event: string; data: undefined; raw: string; unknown: true };

export interface ApiResponse<T> {
  data: T;
  /** The body exactly as received. */
  raw: string;
  status: number;
  headers: Record<string, string>;
  requestId: string | undefined;
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

/** The server answered 2xx with something that is not what the interface describes. */
export class InvalidResponseError extends ParleyError {
  override name = 'InvalidResponseError';
  constructor(
    readonly url: string,
    message: string,
    readonly raw: string,
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
  /** Check 2xx bodies and stream payloads against the contract's spec schemas (default true). */
  validate?: boolean;
  /** Called for each request and response, for --verbose. Never receives the key. */
  onTrace?: (line: string) => void;
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

export const DEFAULT_TIMEOUT_MS = 60_000;

export class ParleyClient {
  readonly baseUrl: string;
  readonly appId: string;
  readonly timeoutMs: number;
  readonly #apiKey: string;
  readonly #options: ClientOptions;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;

  constructor(options: ClientOptions) {
    this.#options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.appId = options.appId;
    this.#apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#ownsDispatcher = options.dispatcher === undefined;
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
    return this.#json({ ...opts, method: 'POST', path: this.#app('/conversations'), body }, Conversation);
  }

  listConversations(query: ListQuery = {}, opts: RequestOptions = {}): Promise<ApiResponse<ConversationList>> {
    return this.#json({ ...opts, method: 'GET', path: this.#app('/conversations'), query }, ConversationList);
  }

  /**
   * Every page from `query` on, following the cursors (D-12): `last_id` as `after`, or `first_id` as
   * `before` when walking backwards from a `before` cursor.
   */
  async *listAllConversations(query: ListQuery = {}, opts: RequestOptions = {}): AsyncGenerator<ApiResponse<ConversationList>> {
    let q = { ...query };
    for (;;) {
      const page = await this.listConversations(q, opts);
      yield page;
      const { has_more, first_id, last_id } = page.data;
      if (!has_more || page.data.data.length === 0) return;
      q = q.before !== undefined ? { ...q, before: first_id ?? undefined } : { ...q, after: last_id ?? undefined };
    }
  }

  getConversation(id: string, opts: RequestOptions = {}): Promise<ApiResponse<ConversationWithItems>> {
    return this.#json({ ...opts, method: 'GET', path: this.#app(`/conversations/${enc(id)}`) }, ConversationWithItems);
  }

  updateConversation(id: string, body: UpdateConversationRequestT, opts: RequestOptions = {}): Promise<ApiResponse<Conversation>> {
    return this.#json({ ...opts, method: 'PATCH', path: this.#app(`/conversations/${enc(id)}`), body }, Conversation);
  }

  deleteConversation(id: string, opts: RequestOptions = {}): Promise<ApiResponse<DeletionResult>> {
    return this.#json({ ...opts, method: 'DELETE', path: this.#app(`/conversations/${enc(id)}`) }, DeletionResult);
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
    if (isEventStream(res.headers)) return { kind: 'stream', stream: new EventStream(res, this.#validate) };
    return { kind: 'response', response: await this.#finishJson(res, Response) };
  }

  // §4.7 ----------------------------------------------------------------------------------------

  async createCompletion(body: CreateCompletionRequestT & { stream?: false }, opts: RequestOptions = {}): Promise<ApiResponse<Completion>> {
    return this.#json({ ...opts, method: 'POST', path: this.#app('/completions'), body }, Completion);
  }

  async streamCompletion(body: Omit<CreateCompletionRequestT, 'stream'>, opts: RequestOptions = {}): Promise<EventStream> {
    const res = await this.#send({ ...opts, method: 'POST', path: this.#app('/completions'), body: { ...body, stream: true } });
    if (!isEventStream(res.headers)) {
      const raw = await res.body.text();
      throw new InvalidResponseError(res.url, `expected an event stream, got ${res.headers['content-type'] ?? 'no content type'}`, raw);
    }
    return new EventStream(res, this.#validate);
  }

  // §4.8, §4.9 ----------------------------------------------------------------------------------

  getConfig(opts: RequestOptions = {}): Promise<ApiResponse<AppConfig>> {
    return this.#json({ ...opts, method: 'GET', path: this.#app('/config') }, AppConfig);
  }

  getMetrics(opts: RequestOptions = {}): Promise<ApiResponse<AppMetrics>> {
    return this.#json({ ...opts, method: 'GET', path: this.#app('/metrics') }, AppMetrics);
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
    return { data, raw, status: res.status, headers: res.headers, requestId: res.headers['x-request-id'] };
  }

  get #validate(): boolean {
    return this.#options.validate !== false;
  }

  #app(suffix: string): string {
    return `/apps/${enc(this.appId)}${suffix}`;
  }

  async #json<T>(req: RawRequest, schema: Schema<T>): Promise<ApiResponse<T>> {
    return this.#finishJson(await this.#send(req), schema);
  }

  async #finishJson<T>(res: SentResponse, schema: Schema<T>): Promise<ApiResponse<T>> {
    const raw = await readBody(res);
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new InvalidResponseError(res.url, `the server answered ${res.status} with a body that is not JSON`, raw);
    }
    let data = parsed as T;
    if (this.#validate) {
      const checked = schema.safeParse(parsed);
      if (!checked.success) throw new InvalidResponseError(res.url, `the server's answer does not match the interface: ${describeIssues(checked.error.issues)}`, raw);
      // The parsed value, not the schema output, so that nothing the server sent is dropped or reordered.
    }
    return { data, raw, status: res.status, headers: res.headers, requestId: res.headers['x-request-id'] };
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
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, { method: req.method as Dispatcher.HttpMethod, headers, body: payload, signal: req.signal, dispatcher: this.#dispatcher });
    } catch (err) {
      throw this.#networkError(err, url, req.signal);
    }
    const flat = flattenHeaders(res.headers);
    trace?.(`< ${res.statusCode} (${Math.round(performance.now() - started)} ms)${flat['x-request-id'] ? ` x-request-id: ${flat['x-request-id']}` : ''}${flat['content-type'] ? ` content-type: ${flat['content-type']}` : ''}`);
    const sent: SentResponse = { url, status: res.statusCode, headers: flat, body: res.body, signal: req.signal, networkError: (e) => this.#networkError(e, url, req.signal) };
    if (res.statusCode < 200 || res.statusCode >= 300) throw await toApiError(sent);
    return sent;
  }

  #url(req: RawRequest): string {
    const url = new URL(this.baseUrl + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    return url.toString();
  }

  #networkError(err: unknown, url: string, signal: AbortSignal | undefined): ParleyError {
    if (err instanceof ParleyError) return err;
    if (signal?.aborted) return new AbortedError('the request was cancelled', { cause: err });
    const seconds = `${this.timeoutMs / 1000}s`;
    if (err instanceof undiciErrors.HeadersTimeoutError) return new TimeoutError(url, `no answer within ${seconds}`, { cause: err });
    if (err instanceof undiciErrors.BodyTimeoutError) return new TimeoutError(url, `the server went silent for ${seconds}`, { cause: err });
    if (err instanceof undiciErrors.ConnectTimeoutError) return new TimeoutError(url, `could not connect within ${seconds}`, { cause: err });
    return new ConnectionError(url, describeNetworkError(err), { cause: err });
  }
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

interface SentResponse {
  url: string;
  status: number;
  headers: Record<string, string>;
  body: Dispatcher.ResponseData['body'];
  signal: AbortSignal | undefined;
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
  #used = false;

  constructor(res: SentResponse, validate: boolean) {
    this.#res = res;
    this.#validate = validate;
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
    const body = this.#res.body;
    try {
      try {
        for await (const chunk of body) {
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
      throw new InvalidResponseError(this.url, `the data of a ${name} event is not JSON`, m.data);
    }
    if (this.#validate) {
      const checked = SpecEventPayload[name as EventType].safeParse(data);
      if (!checked.success) throw new InvalidResponseError(this.url, `a ${name} event does not match the interface: ${describeIssues(checked.error.issues)}`, m.data);
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

async function readBody(res: SentResponse): Promise<string> {
  try {
    return await res.body.text();
  } catch (err) {
    throw res.networkError(err);
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
