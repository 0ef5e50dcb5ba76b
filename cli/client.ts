// A typed client of interface 1.0.0 (undici): one method per endpoint, typed errors, streams as async iterators.
//
// It talks to any implementation of the interface, not only Parley. Each answer is read with the
// contract's lenient schemas (the interface's defaults applied, unknown item types kept, only what a
// client needs required) and also checked against its `spec` schemas: a mismatch the client can live
// with is reported through `onDeviation`, not thrown. The raw body of every response stays available
// for callers that must print the API's JSON exactly.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, errors as undiciErrors, request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import * as C from '../src/contract/index.ts';
import type {
  CreateCompletionRequestT,
  CreateConversationRequestT,
  SendMessageRequestT,
  UpdateConversationRequestT,
} from '../src/contract/index.ts';
import {
  AbortedError,
  ApiError,
  ConnectionError,
  FollowedCursors,
  InvalidResponseError,
  ParleyError,
  TimeoutError,
  describeIssues,
  describeNetworkError,
} from './core/error.ts';
import { Deadline, flattenHeaders, isEventStream, readBody, type SentResponse } from './core/response.ts';
import { EventStream, type Resumer } from './core/streaming.ts';
import { USER_AGENT } from './version.ts';
import { CREDITS_WARNING_HEADER } from '../src/contract/admin.ts';

// The error family and the stream live in core/ (as in openai-node); importers of the client get them here too.
export { AbortedError, ApiError, ConnectionError, InvalidResponseError, ParleyError, TimeoutError } from './core/error.ts';
export { EventStream, type ClientStreamEvent, type Resumer, type UnknownStreamEvent } from './core/streaming.ts';
export type { SentResponse } from './core/response.ts';

// ---------------------------------------------------------------------------------------------
// Types: the lenient reading layer, so that nothing an implementation may omit is promised to the caller.
// ---------------------------------------------------------------------------------------------

export type Conversation = z.infer<typeof C.LenientConversation>;
export type ConversationWithItems = z.infer<typeof C.LenientConversationWithItems>;
export type ConversationList = z.infer<typeof C.LenientConversationList>;
export type DeletionResult = z.infer<typeof C.LenientDeletionResult>;
/** A response; `error` is what D-17 adds to a failed one, optional since other implementations may omit it. Looked up (D-32), its status may be `in_progress`. */
export type MessageResponse = z.infer<typeof C.LenientResponse>;
export type Completion = z.infer<typeof C.LenientCompletion>;
export type AppConfig = z.infer<typeof C.LenientAppConfig>;
export type AppMetrics = z.infer<typeof C.LenientAppMetrics>;
export type ListQuery = { limit?: number | string; after?: string; before?: string; order?: 'asc' | 'desc'; external_user_id?: string };

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
  /**
   * Told (once per distinct text) of a warning the server sends beside a usable answer: D-74's
   * `parley-credits-warning` when a soft plan's credits are used up and the reply runs all the same.
   */
  onWarning?: (message: string) => void;
  /** Told when a dropped stream resumes by itself (D-32), e.g. to say so on stderr. */
  onResume?: Resumer['onResume'];
  /** Aborts every request of this client (the CLI: its output was closed). */
  signal?: AbortSignal;
  dispatcher?: Dispatcher;
  /** Retries of a refused (429) or unreachable request (D-62); none by default. */
  retry?: RetryPolicy;
  /** Headers of every request the command makes (`--scenario`, `--test-id`: D-120), not of the resumes the client makes itself. */
  headers?: Record<string, string>;
}

/**
 * D-62: how often a request is tried again, and how long a wait is acceptable. A 429 is retried after
 * its Retry-After when that is at most `maxWaitMs` (a longer one, a day's limit, is reported at once);
 * a network failure only when repeating cannot apply the request twice: the connection was refused
 * (nothing was sent), the method is idempotent (RFC 9110 §9.2.2), or it carries an Idempotency-Key,
 * which the client puts on every POST itself when retries are on.
 */
export interface RetryPolicy {
  retries: number;
  maxWaitMs: number;
  /** Said before each wait, and when a wait is refused. */
  onRetry?: (message: string) => void;
}

/** Methods whose repetition has the effect of one request (RFC 9110 §9.2.2). */
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface RawRequest extends RequestOptions {
  method: string;
  /** Path below the base URL, e.g. `/apps/app_x/config`. */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** A body sent as is (`parley api --input`), instead of `body` as JSON. */
  rawBody?: string;
  headers?: Record<string, string>;
  /** A resume the client makes by itself (D-32): sent without the command's own headers (its scenario). */
  bare?: boolean;
}

type Schema<T> = {
  safeParse(
    v: unknown,
  ): { success: true; data: T } | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } };
};
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
  // Resumable responses (an extension, D-32): a looked-up response may be in progress.
  liveResponse: { usable: C.LenientResponse, spec: C.LiveResponse },
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
  readonly #warnings = new Set<string>();

  constructor(options: ClientOptions) {
    this.#options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.appId = options.appId;
    this.#apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#ownsDispatcher = options.dispatcher === undefined;
    // undici's own timeouts stay as a backstop; the Deadline below is what honours timeoutMs.
    this.#dispatcher =
      options.dispatcher ??
      new Agent({ connect: { timeout: this.timeoutMs }, headersTimeout: this.timeoutMs, bodyTimeout: this.timeoutMs });
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
    const followed = new FollowedCursors(backwards ? q.before : q.after);
    for (;;) {
      const page = await this.listConversations(q, opts);
      yield page;
      const { has_more, data } = page.data;
      if (!has_more || data.length === 0) return;
      // The page itself was yielded already: the error has nothing more to show.
      const cursor = followed.follow(backwards ? (page.data.first_id ?? data[0]!.id) : (page.data.last_id ?? data.at(-1)!.id), page.url);
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
    // D-32: a conversation's stream comes back by itself when it drops (where the server resumes).
    if (isEventStream(res.headers)) return { kind: 'stream', stream: this.#stream(res, this.#resumer(opts)) };
    return { kind: 'response', response: await this.#finishJson(res, CHECK.response) };
  }

  // Resumable responses, an extension (docs/responses.md, D-30…D-39) --------------------------------

  /** D-32: a response as it is now (`in_progress` while the agent replies). */
  getResponse(id: string, opts: RequestOptions = {}): Promise<ApiResponse<MessageResponse>> {
    return this.#json({ ...opts, method: 'GET', path: this.#app(`/responses/${enc(id)}`) }, CHECK.liveResponse);
  }

  /** D-32: the events of a response after sequence number `startingAfter` (default: all), then the live ones. */
  async streamResponseEvents(id: string, startingAfter = -1, opts: RequestOptions & { resume?: boolean } = {}): Promise<EventStream> {
    const res = await this.#send(this.#resumeRequest(id, startingAfter, opts));
    if (!isEventStream(res.headers)) {
      const raw = await readBody(res);
      throw new InvalidResponseError(res.url, `expected an event stream, got ${res.headers['content-type'] ?? 'no content type'}`, raw);
    }
    const stream = this.#stream(res, opts.resume === false ? undefined : this.#resumer(opts));
    stream.responseId ??= id;
    stream.lastSequence = startingAfter;
    return stream;
  }

  /** D-33: stops a running response; answers it once saved (a finished one unchanged). */
  cancelResponse(id: string, opts: RequestOptions = {}): Promise<ApiResponse<MessageResponse>> {
    return this.#json({ ...opts, method: 'POST', path: this.#app(`/responses/${enc(id)}/cancel`) }, CHECK.liveResponse);
  }

  #resumeRequest(id: string, after: number, opts: RequestOptions): RawRequest {
    return { ...opts, method: 'GET', path: this.#app(`/responses/${enc(id)}/events`), query: { starting_after: after } };
  }

  #resumer(opts: RequestOptions & { onResume?: Resumer['onResume'] }): Resumer {
    return {
      resume: (id, after) => this.#send({ ...this.#resumeRequest(id, after, opts), bare: true }),
      onResume: (id, after, cause) => {
        this.#options.onTrace?.(`* stream dropped (${cause.message}); resuming ${id} after event ${after}`);
        this.#options.onResume?.(id, after, cause);
      },
    };
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

  /** Any request, its body left unread (to stream it as it arrives); a non-2xx answer throws ApiError. */
  open(req: RawRequest): Promise<SentResponse> {
    return this.#send(req);
  }

  get #validate(): boolean {
    return this.#options.validate !== false;
  }

  #app(suffix: string): string {
    return `/apps/${enc(this.appId)}${suffix}`;
  }

  #stream(res: SentResponse, resumer?: Resumer): EventStream {
    return new EventStream(res, this.#validate, (m) => this.#deviation(m), resumer);
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
      if (!usable.success)
        throw new InvalidResponseError(res.url, `the server's answer is not usable: ${describeIssues(usable.error.issues)}`, raw);
      data = usable.data;
      const spec = check.spec.safeParse(parsed);
      if (!spec.success)
        this.#deviation(`the answer of ${res.method} ${res.url} does not match the interface: ${describeIssues(spec.error.issues)}`);
    }
    return { data, raw, status: res.status, headers: res.headers, requestId: res.headers['x-request-id'], url: res.url };
  }

  /** Sends the request, again as the retry policy allows (D-62); resolves once a 2xx's headers arrive. */
  async #send(req: RawRequest): Promise<SentResponse> {
    const policy = this.#options.retry;
    if (!policy || policy.retries <= 0) return this.#sendOnce(req);
    const headers = { ...req.headers };
    // D-62: one key for every attempt, so that the server applies the request at most once.
    const keyed = Object.keys(headers).some((k) => k.toLowerCase() === 'idempotency-key');
    if (req.method.toUpperCase() === 'POST' && !keyed) headers['idempotency-key'] = randomUUID();
    const repeatable = keyed || req.method.toUpperCase() === 'POST' || IDEMPOTENT_METHODS.has(req.method.toUpperCase());
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#sendOnce({ ...req, headers });
      } catch (err) {
        const waitMs = attempt < policy.retries ? retryDelay(err, attempt, repeatable) : undefined;
        if (waitMs === undefined) throw err;
        const what = err instanceof ApiError ? `${err.status} ${err.type}` : (err as Error).message;
        if (waitMs > policy.maxWaitMs) {
          policy.onRetry?.(
            `not retrying: the server asks to wait ${Math.ceil(waitMs / 1000)} s, more than the ${policy.maxWaitMs / 1000} s --retry waits (a daily limit?)`,
          );
          throw err;
        }
        policy.onRetry?.(`retry ${attempt + 1}/${policy.retries} in ${(waitMs / 1000).toFixed(waitMs < 1000 ? 1 : 0)} s (${what})`);
        await sleep(waitMs, undefined, {
          signal: AbortSignal.any([req.signal, this.#options.signal].filter((s): s is AbortSignal => s !== undefined)),
        }).catch(() => {
          throw new AbortedError('the request was cancelled');
        });
      }
    }
  }

  async #sendOnce(req: RawRequest): Promise<SentResponse> {
    const url = this.#url(req);
    const headers: Record<string, string> = {
      accept: 'application/json, text/event-stream',
      ...(req.bare ? {} : this.#options.headers),
      ...req.headers,
    };
    if (!Object.keys(headers).some((k) => k.toLowerCase() === 'user-agent')) headers['user-agent'] = USER_AGENT;
    // Signing in to the admin surface (D-79) is the one request sent without a credential.
    if (this.#apiKey !== '') headers.authorization = `Bearer ${this.#apiKey}`;
    let payload: string | undefined;
    if (req.rawBody !== undefined) {
      payload = req.rawBody;
      if (!Object.keys(headers).some((k) => k.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    } else if (req.body !== undefined) {
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
      res = await request(url, {
        method: req.method as Dispatcher.HttpMethod,
        headers,
        body: payload,
        signal: AbortSignal.any(signals),
        dispatcher: this.#dispatcher,
      });
    } catch (err) {
      deadline.clear();
      throw networkError(err);
    }
    deadline.headersArrived();
    const flat = flattenHeaders(res.headers);
    trace?.(
      `< ${res.statusCode} (${Math.round(performance.now() - started)} ms)${flat['x-request-id'] ? ` x-request-id: ${flat['x-request-id']}` : ''}${flat['content-type'] ? ` content-type: ${flat['content-type']}` : ''}`,
    );
    // D-31: the reply's id, said before its first event, so that it can be cancelled while it runs (D-33).
    if (trace && flat[C.RESPONSE_ID_HEADER]) trace(`< ${C.RESPONSE_ID_HEADER}: ${flat[C.RESPONSE_ID_HEADER]}`);
    const sent: SentResponse = { url, method: req.method, status: res.statusCode, headers: flat, body: res.body, deadline, networkError };
    if (res.statusCode < 200 || res.statusCode >= 300) throw ApiError.fromBody(sent.status, await readBody(sent), sent.headers);
    const warning = flat[CREDITS_WARNING_HEADER];
    if (warning && !this.#warnings.has(warning)) {
      this.#warnings.add(warning);
      this.#options.onWarning?.(warning);
    }
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
    if (deadline.expired)
      return new TimeoutError(url, deadline.answered ? `the server went silent for ${seconds}` : `no answer within ${seconds}`, {
        cause: err,
      });
    if (err instanceof undiciErrors.HeadersTimeoutError) return new TimeoutError(url, `no answer within ${seconds}`, { cause: err });
    if (err instanceof undiciErrors.BodyTimeoutError) return new TimeoutError(url, `the server went silent for ${seconds}`, { cause: err });
    if (err instanceof undiciErrors.ConnectTimeoutError)
      return new TimeoutError(url, `could not connect within ${seconds}`, { cause: err });
    return new ConnectionError(url, describeNetworkError(err), { cause: err });
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/**
 * D-62: the wait before the next attempt after `err`, or undefined when it must not be repeated. A 429
 * (and a 409 for a key still in use) ran nothing; a 408, a busy conversation and a server error may pass
 * later, and are repeated when the request is (its key makes the server apply it once); never after
 * `x-should-retry: false`. Its Retry-After (seconds or an HTTP date), else 1, 2, 4 s. A refused
 * connection sent nothing; any other network failure may have applied the request.
 */
export function retryDelay(err: unknown, attempt: number, repeatable: boolean): number | undefined {
  const backoff = 500 * 2 ** attempt;
  if (err instanceof ApiError) {
    if (err.headers['x-should-retry'] === 'false') return undefined;
    const ranNothing = err.status === 429 || (err.status === 409 && err.code === 'idempotency_key_in_use');
    const passing = err.status === 408 || (err.status === 409 && err.code === 'conversation_busy') || err.status >= 500;
    if (!ranNothing && !(passing && repeatable)) return undefined;
    const header = err.headers['retry-after'];
    if (header === undefined) return 1000 * 2 ** attempt;
    if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
    const date = Date.parse(header);
    return Number.isNaN(date) ? 1000 * 2 ** attempt : Math.max(0, date - Date.now());
  }
  if (err instanceof AbortedError || !(err instanceof ConnectionError)) return undefined;
  const cause = (err.cause ?? {}) as { code?: string; errors?: Array<{ code?: string }> };
  const refused = cause.code === 'ECONNREFUSED' || cause.errors?.some((e) => e.code === 'ECONNREFUSED') === true;
  return refused || repeatable ? backoff : undefined;
}

function enc(segment: string): string {
  return encodeURIComponent(segment);
}
