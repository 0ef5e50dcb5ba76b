// The client's one error family (as openai-node's core/error.ts): every failure a caller can meet is a
// ParleyError, and its class says what went wrong; the words for network failures live here too, for
// the CLI and the conformance suite alike.
import { ErrorBody } from '../../src/contract/errors.ts';

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

  /** The error of a non-2xx answer: its error object, or, when it has none, its status and an excerpt. */
  static fromBody(status: number, raw: string, headers: Record<string, string>): ApiError {
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      // Not JSON (a proxy's HTML page, say): keep the status and a short excerpt.
    }
    const parsed = ErrorBody.safeParse(body);
    const requestId = headers['x-request-id'];
    if (parsed.success) {
      const e = parsed.data.error;
      return new ApiError(status, e.type, e.message, e.param ?? null, e.code ?? null, raw, headers, requestId);
    }
    const excerpt = raw.trim().replace(/\s+/g, ' ').slice(0, 200);
    return new ApiError(
      status,
      'http_error',
      `HTTP ${status} without an error object${excerpt ? `: ${excerpt}` : ''}`,
      null,
      null,
      raw,
      headers,
      requestId,
    );
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

/**
 * The cursors a walk of a list has followed: a server answering `has_more` with a cursor followed
 * already would make the walk loop forever, which `follow` throws as an InvalidResponseError.
 */
export class FollowedCursors {
  private readonly seen = new Set<string>();

  constructor(first?: string) {
    if (first !== undefined) this.seen.add(first);
  }

  /** `cursor`, the next page's, unless it was followed already (from the page at `url`). */
  follow(cursor: string, url: string): string {
    if (this.seen.has(cursor))
      throw new InvalidResponseError(url, `has_more is true but the cursor ${cursor} was followed already: the list would never end`, '');
    this.seen.add(cursor);
    return cursor;
  }
}

/** The caller aborted the request (its AbortSignal fired). */
export class AbortedError extends ParleyError {
  override name = 'AbortedError';
}

/** The first issues of a schema check, as `path: message`. */
export function describeIssues(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  return issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join('.') || '(body)'}: ${i.message}`)
    .join('; ');
}

/**
 * A network failure in words a user can act on. undici puts the system code on the error (or on the
 * first of an AggregateError's errors); fetch wraps it as the `cause` of a "fetch failed" TypeError.
 */
export function describeNetworkError(err: unknown): string {
  type Coded = { code?: string; message?: string; errors?: Coded[]; cause?: Coded };
  const e = (err ?? {}) as Coded;
  const inner = e.cause ?? e;
  const code = e.code ?? e.errors?.[0]?.code ?? inner.code ?? inner.errors?.[0]?.code;
  if (code === 'ECONNREFUSED') return 'connection refused (is the server running?)';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'the connection was closed by the server';
  const message = e.message || e.errors?.[0]?.message || String(err);
  const detail = code ?? (e.cause ? e.cause.message : undefined);
  return detail ? `${message} (${detail})` : message;
}
