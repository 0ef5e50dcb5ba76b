// Every error the server can answer, in one table: its status, its §7 type and its code. ApiError is
// the one error type of the service; `errorBody` the one builder of the error object (§7, D-1…D-5),
// for answers written by the server and for those written on a raw socket (node's `clientError`).
import type { z } from 'zod';
import { ERROR_STATUS, type ErrorBodyT, type ErrorTypeT } from '../contract/index.ts';

export type ApiErrorType = ErrorTypeT | 'invalid_request_error' | 'service_unavailable';

interface ErrorSpec {
  status: number;
  type: ApiErrorType;
  /** The error object's `code` (null for the §7 errors the interface leaves without one). */
  code: string | null;
  /** Headers every answer of this error carries. */
  headers?: Readonly<Record<string, string>>;
}

/** A §7 error type with the status the interface fixes for it. */
const s7 = (type: ErrorTypeT, code: string | null = null): ErrorSpec => ({ status: ERROR_STATUS[type], type, code });
/** A bad request (D-1…D-3), type `invalid_request_error`. */
const bad = <S extends number>(status: S, code: string, headers?: Record<string, string>) => ({
  status,
  type: 'invalid_request_error' as const,
  code,
  headers,
});

/**
 * The catalogue, by name (the name is the code, or the §7 type for errors without a code). A newcomer
 * reads here every answer that is not a 2xx; nothing else builds an error object.
 */
export const ERRORS = {
  // §7 (D-4, D-6): who may call what.
  invalid_api_key: s7('invalid_api_key'),
  access_denied: s7('access_denied'),
  /** D-6: a publishable key is for the widget only. */
  publishable_key: s7('access_denied', 'publishable_key'),
  app_inactive: s7('app_inactive'),
  // The admin surface (docs/control-plane.md, D-65).
  /** No, an unknown or an expired session or access token; an API key presented to /admin/v1 (§7's 401 type, its own code). */
  invalid_admin_credential: s7('invalid_api_key', 'invalid_admin_credential'),
  /** A viewer's write. */
  admin_role_required: s7('access_denied', 'admin_role_required'),
  /** A cookie-authenticated write without the session's X-CSRF-Token. */
  csrf_failed: s7('access_denied', 'csrf_failed'),
  /** D-69: a pair or an address backing off after failed sign-ins. */
  sign_in_throttled: s7('rate_limit_exceeded', 'sign_in_throttled'),
  last_admin: bad(409, 'last_admin'),
  email_taken: bad(409, 'email_taken'),
  /** A cap of the records a team (D-173) or an app (D-169: webhook endpoints per app) may have is reached; the message names it. */
  limit_reached: bad(409, 'limit_reached'),
  /** D-73: a restore of a conversation that is not deleted, or whose history was purged. */
  conversation_not_restorable: bad(409, 'conversation_not_restorable'),
  // The widget API (docs/widget.md, D-45…D-59).
  /** D-49: a visitor token that is missing, malformed or not signed by this server. */
  invalid_visitor_token: s7('invalid_api_key', 'invalid_visitor_token'),
  /** D-49: a visitor token past its expiry: the widget asks for a new one. */
  visitor_token_expired: s7('invalid_api_key', 'visitor_token_expired'),
  /** D-50: a host page's signed identity that is malformed or not signed with the app's identity secret. */
  invalid_identity: s7('access_denied', 'invalid_identity'),
  /** D-50: a signed identity older than its lifetime (or dated in the future). */
  identity_expired: s7('access_denied', 'identity_expired'),
  /** D-47: an app the tenants give no widget. */
  widget_disabled: s7('access_denied', 'widget_disabled'),
  /** D-53: a page whose origin the app does not list. */
  origin_not_allowed: s7('access_denied', 'origin_not_allowed'),
  agent_unavailable: s7('agent_unavailable'),
  /** D-3, D-11: an unknown path, app or conversation (another app's and soft-deleted ones too). */
  not_found: s7('not_found'),
  /** D-23: the plan's limit per minute or per day (`Retry-After` says when). */
  rate_limit_exceeded: s7('rate_limit_exceeded'),
  /** D-52: the widget's limits: one visitor, one address, the app's widget budget (apart from its REST plan). */
  visitor_rate_limit: s7('rate_limit_exceeded', 'visitor_rate_limit'),
  address_rate_limit: s7('rate_limit_exceeded', 'address_rate_limit'),
  widget_budget: s7('rate_limit_exceeded', 'widget_budget'),
  /**
   * D-27: the app's stored conversations have reached its plan's storage quota. Waiting frees
   * nothing, so no `Retry-After`, and `x-should-retry: false` keeps the usual clients from retrying.
   */
  storage_quota_exceeded: { ...s7('rate_limit_exceeded', 'storage_quota_exceeded'), headers: { 'x-should-retry': 'false' } },
  /**
   * D-74: the team's credits for the month are used up and the app's plan has a hard limit. Nothing
   * frees them before the month ends (or the plan changes): `x-should-retry: false`, no `Retry-After`.
   */
  credits_exhausted: { ...s7('rate_limit_exceeded', 'credits_exhausted'), headers: { 'x-should-retry': 'false' } },
  /** Too many open SSE streams for one app (docs/reliability.md). */
  too_many_streams: { ...s7('rate_limit_exceeded', 'too_many_streams'), headers: { 'retry-after': '1' } },
  /** D-5: says nothing of its cause. */
  internal_error: s7('internal_error'),
  /**
   * D-91: the store (PostgreSQL) is out of reach, restarting or cut off: the request was not done, or
   * not finished within the bound (`--store-timeout`); retry it in a moment.
   */
  store_unavailable: { status: 503, type: 'service_unavailable', code: 'store_unavailable', headers: { 'retry-after': '1' } },
  /** D-166: the password hashing pool's queue is full (a burst of sign-ins); no password was checked. */
  sign_in_busy: { status: 503, type: 'service_unavailable', code: 'sign_in_busy', headers: { 'retry-after': '1' } },

  // 400 (D-1): the body, the query or a header breaks a rule.
  invalid_json: bad(400, 'invalid_json'),
  missing_parameter: bad(400, 'missing_parameter'),
  unknown_parameter: bad(400, 'unknown_parameter'),
  invalid_type: bad(400, 'invalid_type'),
  invalid_value: bad(400, 'invalid_value'),
  /** A string or collection over its LIMITS (the contract's schemas raise it). */
  too_large: bad(400, 'too_large'),
  invalid_cursor: bad(400, 'invalid_cursor'),
  /** D-122: a request with `Parley-Scenario` or `Parley-Test-Id` to a server whose scenarios are off. */
  scenarios_disabled: bad(400, 'scenarios_disabled'),
  /** D-82: a webhook endpoint's URL that may not be reached (its address refused, not http(s)). */
  invalid_webhook_url: bad(400, 'invalid_webhook_url'),
  /** D-29: the conversation's stored history has reached its limit; a new conversation is needed. */
  conversation_too_large: bad(400, 'conversation_too_large'),
  /** What node's parser refuses (answered on the raw socket). */
  malformed_request: bad(400, 'malformed_request'),
  // The other 4xx of the HTTP layer.
  method_not_allowed: bad(405, 'method_not_allowed'),
  request_timeout: bad(408, 'request_timeout'),
  /** A retry while the first request with this Idempotency-Key still runs. */
  idempotency_key_in_use: bad(409, 'idempotency_key_in_use', { 'retry-after': '1' }),
  /** The key's answer was too large to keep: the request is not run again. */
  idempotency_replay_unavailable: bad(409, 'idempotency_replay_unavailable'),
  /** D-2: the body is not read further, and the connection goes once the answer is out. */
  body_too_large: bad(413, 'body_too_large', { connection: 'close' }),
  unsupported_media_type: bad(415, 'unsupported_media_type'),
  /** The client may be holding its body back until a 100 that will not come. */
  expectation_failed: bad(417, 'expectation_failed', { connection: 'close' }),
  /** D-37: a message while a reply of the same conversation runs; `Parley-Response-Id` names that reply. */
  conversation_busy: bad(409, 'conversation_busy', { 'retry-after': '1' }),
  /** D-36: a resume of a response whose events are no longer kept (its look-up still answers). */
  response_events_expired: bad(410, 'response_events_expired'),
  idempotency_key_reused: bad(422, 'idempotency_key_reused'),
  headers_too_large: bad(431, 'headers_too_large'),
} as const satisfies Record<string, ErrorSpec>;

export type ErrorName = keyof typeof ERRORS;
/** The codes of a 400 (D-1): what `invalidRequest` and the contract's custom rules may name. */
export type InvalidRequestCode = { [K in ErrorName]: (typeof ERRORS)[K]['status'] extends 400 ? K : never }[ErrorName];

export function isInvalidRequestCode(code: unknown): code is InvalidRequestCode {
  return typeof code === 'string' && Object.hasOwn(ERRORS, code) && ERRORS[code as ErrorName].status === 400;
}

/** The error object of §7: all four fields, always (D-1). */
export function errorBody(name: ErrorName, message: string, param: string | null = null): ErrorBodyT {
  const spec: ErrorSpec = ERRORS[name];
  return { error: { message, type: spec.type, param, code: spec.code } };
}

export interface ErrorOptions {
  param?: string | null;
  /** Headers of this answer beyond the catalogue's (e.g. `Allow`, a computed `Retry-After`). */
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly status: number;
  readonly type: ApiErrorType;
  readonly param: string | null;
  readonly code: string | null;
  /** Response headers: the catalogue's, then this answer's own. */
  readonly headers: Record<string, string>;

  constructor(
    readonly errorName: ErrorName,
    message: string,
    opts: ErrorOptions = {},
  ) {
    super(message);
    const spec: ErrorSpec = ERRORS[errorName];
    this.name = 'ApiError';
    this.status = spec.status;
    this.type = spec.type;
    this.param = opts.param ?? null;
    this.code = spec.code;
    this.headers = { ...spec.headers, ...opts.headers };
  }

  toBody(): ErrorBodyT {
    return errorBody(this.errorName, this.message, this.param);
  }
}

/** An error of the catalogue. */
export function apiError(name: ErrorName, message: string, opts: ErrorOptions = {}): ApiError {
  return new ApiError(name, message, opts);
}

/** D-1: a 400 `invalid_request_error`. */
export function invalidRequest(message: string, param: string | null, code: InvalidRequestCode): ApiError {
  return new ApiError(code, message, { param });
}

export function notFound(what: string, param: string | null = null): ApiError {
  return apiError('not_found', `${what} not found`, { param });
}

/** D-5: the message of an unexpected failure says nothing of its cause. */
export function internalError(requestId: string): ApiError {
  return apiError('internal_error', `The server had an unexpected error. Quote request id ${requestId} when reporting it.`);
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/**
 * D-1: turns the first zod issue into the error object: `param` is the dotted path of the field,
 * `code` says which rule it broke, and the message names both in plain words.
 */
export function fromZodError(error: z.ZodError, input: unknown, paramPrefix = ''): ApiError {
  const issue = error.issues[0]!;
  // An issue about the body itself has no path: its param is null and its name "the request body".
  const dotted = (path: readonly PropertyKey[]) => (path.length === 0 && !paramPrefix ? null : paramPrefix + path.map(String).join('.'));
  const named = (param: string | null) => param ?? 'The request body';
  // A missing field next to an unknown one is most often a typo (`messages` for `message`): say both.
  const missing = (path: readonly PropertyKey[]) => {
    const param = dotted(path);
    const parent = JSON.stringify(path.slice(0, -1));
    const stray = error.issues.find((i) => i.code === 'unrecognized_keys' && JSON.stringify(i.path) === parent);
    const hint = stray?.code === 'unrecognized_keys' ? ` (unknown parameter given: ${dotted([...stray.path, stray.keys[0]!])})` : '';
    return invalidRequest(`Missing required parameter: ${named(param)}${hint}.`, param, 'missing_parameter');
  };
  switch (issue.code) {
    case 'unrecognized_keys': {
      const key = issue.keys[0]!;
      const param = dotted([...issue.path, key])!;
      return invalidRequest(`Unknown parameter: ${param}.`, param, 'unknown_parameter');
    }
    case 'invalid_type': {
      const param = dotted(issue.path);
      const got = valueAt(input, issue.path);
      if (got === undefined) return missing(issue.path);
      return invalidRequest(`${named(param)} must be of type ${issue.expected} (got ${typeName(got)}).`, param, 'invalid_type');
    }
    case 'invalid_value':
    case 'invalid_union': {
      const param = dotted(issue.path);
      const got = valueAt(input, issue.path);
      if (got === undefined) return missing(issue.path);
      // Name the allowed values and what was sent, like every other rule's message (D-1).
      if ('values' in issue) {
        const allowed = issue.values.map((v) => JSON.stringify(v));
        const rule = allowed.length === 1 ? `must be ${allowed[0]}` : `must be one of ${allowed.join(', ')}`;
        return invalidRequest(`${named(param)} ${rule} (got ${shown(got)}).`, param, 'invalid_value');
      }
      return invalidRequest(`${named(param)} has an invalid value.`, param, 'invalid_value');
    }
    case 'custom': {
      const params = (issue.params ?? {}) as { apiCode?: string; param?: string };
      const param = params.param ?? dotted(issue.path);
      return invalidRequest(issue.message, param, isInvalidRequestCode(params.apiCode) ? params.apiCode : 'invalid_value');
    }
    default: {
      const param = dotted(issue.path);
      return invalidRequest(`${named(param)}: ${issue.message}.`, param, 'invalid_value');
    }
  }
}

/** A value quoted for an error message: JSON, cut short so that a message stays one readable line. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}
