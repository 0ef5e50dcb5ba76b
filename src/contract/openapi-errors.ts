// The error answers of the published contract (openapi.ts): which statuses an operation can give, the
// `type` and `code` each carries, and the headers that come with them (§7, D-1…D-5, D-23, D-27, D-110
// and the Idempotency-Key extension). test/openapi.test.ts checks this table against the server's
// error catalogue (src/core/api-errors.ts) and its routes, and every answer the server gives against it.

type Json = Record<string, unknown>;

/** The response headers the document names (D-3, D-23, D-27, Idempotency-Key). */
const HEADERS = {
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'string', pattern: '^[0-9]+$' } },
  'x-ratelimit-limit-requests': {
    description: 'D-23: requests allowed in the window that binds.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  'x-ratelimit-remaining-requests': { description: 'D-23: requests left in that window.', schema: { type: 'string', pattern: '^[0-9]+$' } },
  'x-ratelimit-reset-requests': {
    description: "D-23: time until the window's count resets, e.g. `12.5s`.",
    schema: { type: 'string', pattern: '^[0-9.]+s$' },
  },
  'x-should-retry': {
    description: 'D-27: `false` on a storage quota refusal, which waiting does not lift.',
    schema: { type: 'string', enum: ['false'] },
  },
} as const;
type HeaderName = keyof typeof HEADERS;

/** D-23, D-110: every counted request carries these, a refused one too. */
export const RATE_LIMIT_HEADERS = {
  'x-ratelimit-limit-requests': true,
  'x-ratelimit-remaining-requests': true,
  'x-ratelimit-reset-requests': true,
} as const;

/** Header objects by name, each marked required or not. */
export function headerObjects(headers: Partial<Record<HeaderName, boolean>>): Json {
  const out: Json = {};
  for (const [name, required] of Object.entries(headers) as [HeaderName, boolean][]) out[name] = { ...HEADERS[name], required };
  return out;
}

interface ErrorStatus {
  description: string;
  types: readonly string[];
  /** D-1…D-3 codes an `invalid_request_error` of this status carries (absent: any or none). */
  codes?: readonly string[];
  /** Headers of the answer: name → whether it is always there. */
  headers?: Partial<Record<HeaderName, boolean>>;
}

/**
 * Every error status the REST API answers, with the types and codes each carries. The server's
 * catalogue (src/core/api-errors.ts) sits above this layer, so test/openapi.test.ts compares the two.
 */
export const ERROR_STATUSES = {
  '400': {
    description:
      'D-1: a malformed or invalid request (body, query, a missing Host header, a bad Idempotency-Key, or a request that is not valid HTTP); D-29: a conversation whose history is full; D-120, D-122: a bad `Parley-Scenario`, or one (or `Parley-Test-Id`) sent to a server whose scenarios are off.',
    types: ['invalid_request_error'],
    codes: [
      'invalid_json',
      'missing_parameter',
      'invalid_type',
      'invalid_value',
      'unknown_parameter',
      'too_large',
      'invalid_cursor',
      'conversation_too_large',
      'malformed_request',
      'scenarios_disabled',
    ],
  },
  '401': { description: '§5, D-6: a missing or unknown secret key.', types: ['invalid_api_key'] },
  '403': {
    description: '§7, D-4, D-6: the key may not use this app (or is a publishable key), the app is disabled, or it has no agent.',
    types: ['access_denied', 'app_inactive', 'agent_unavailable'],
  },
  '404': { description: 'D-3, D-4, D-11: no such path, app or conversation (a soft-deleted one included).', types: ['not_found'] },
  '408': {
    description: 'The request (its headers or its body) did not arrive in time.',
    types: ['invalid_request_error'],
    codes: ['request_timeout'],
  },
  '409': {
    description:
      "Idempotency-Key: a request with this key is still running, or its answer was too large to keep. D-37 (resumable responses): too many messages already wait for the conversation's running reply (`Parley-Response-Id` names it).",
    types: ['invalid_request_error'],
    codes: ['idempotency_key_in_use', 'idempotency_replay_unavailable', 'conversation_busy'],
    headers: { 'Retry-After': false },
  },
  '410': {
    description: 'D-36 (resumable responses): the events of this response are no longer kept; its look-up still answers.',
    types: ['invalid_request_error'],
    codes: ['response_events_expired'],
  },
  '413': { description: 'D-2: a body over 1 MiB; it is read no further.', types: ['invalid_request_error'], codes: ['body_too_large'] },
  '415': {
    description: 'D-2: a body whose Content-Type is not JSON.',
    types: ['invalid_request_error'],
    codes: ['unsupported_media_type'],
  },
  '417': { description: 'An Expect header other than 100-continue.', types: ['invalid_request_error'], codes: ['expectation_failed'] },
  '422': {
    description: 'Idempotency-Key: the key was already used with another request.',
    types: ['invalid_request_error'],
    codes: ['idempotency_key_reused'],
  },
  '429': {
    description:
      "D-23, D-110: the app's plan allows no more requests now (`Retry-After` says when); too many streams open (code `too_many_streams`); " +
      'or D-27: the app has used its storage quota (code `storage_quota_exceeded`, no `Retry-After`, `x-should-retry: false`); ' +
      "or D-74, on send message and completion: the team's credits for the month are used up on a plan with a hard limit (code `credits_exhausted`, no `Retry-After`, `x-should-retry: false`); " +
      'or D-121, on any request: scripted by `Parley-Scenario: status=429`.',
    types: ['rate_limit_exceeded'],
    headers: { 'Retry-After': false, 'x-should-retry': false, ...RATE_LIMIT_HEADERS },
  },
  '431': { description: 'The request headers or URL are too large.', types: ['invalid_request_error'], codes: ['headers_too_large'] },
  '500': { description: 'D-5: an unexpected failure; the message names the request id and no internals.', types: ['internal_error'] },
  '503': {
    description:
      'D-91: the database is out of reach (restarting, cut off): the request was not done, or not finished within the bound (`--store-timeout`, 5 s by default). Retry after `Retry-After`. D-121: or scripted by `Parley-Scenario: status=503`.',
    types: ['service_unavailable'],
    codes: ['store_unavailable'],
    headers: { 'Retry-After': true },
  },
} as const satisfies Record<string, ErrorStatus>;
export type ErrorStatusCode = keyof typeof ERROR_STATUSES;

/** D-3: what a known path answers to a method it does not have; no operation lists it, so the document's description states it. */
export const METHOD_NOT_ALLOWED = {
  status: 405,
  types: ['invalid_request_error'],
  code: 'method_not_allowed',
  header: 'Allow',
} as const;

/** The response object of an error status: the Error schema, its `type` (and `code`) narrowed. */
export function errorResponse(status: ErrorStatusCode, errorRef: Json): Json {
  const e: ErrorStatus = ERROR_STATUSES[status];
  const narrowed: Json = { type: { enum: [...e.types] } };
  if (e.codes) narrowed.code = { enum: [...e.codes] };
  return {
    description: e.description,
    ...(e.headers ? { headers: headerObjects(e.headers) } : {}),
    content: {
      'application/json': {
        schema: { allOf: [errorRef, { type: 'object', properties: { error: { type: 'object', properties: narrowed } } }] },
      },
    },
  };
}

/** What decides an operation's error statuses. */
export interface ErrorTraits {
  /** Takes a JSON body (400 of its rules, 413, 415). */
  body?: unknown;
  /** Behind the key and the app (§5, D-4: 401, 403, 404); false only for the document itself. */
  authenticated?: boolean;
  /** D-23, D-110: counted against the plan (429 and the rate-limit headers). */
  counted?: boolean;
  /** Honours Idempotency-Key (409, 422). */
  idempotent?: boolean;
  /** Statuses its handler raises beyond the stages' (409 of D-37, 410 of D-36). */
  extraStatuses?: readonly ErrorStatusCode[];
}

/** Any request, on any path, before it is routed: malformed HTTP, a missing Host (400), 408, 417, 431, and D-5's 500. */
const BEFORE_ROUTING: readonly ErrorStatusCode[] = ['400', '408', '417', '431', '500'];

/** The error statuses of an operation, in the order of the server's stages (D-4), sorted. */
export function errorStatusesOf(op: ErrorTraits): ErrorStatusCode[] {
  const out = new Set<ErrorStatusCode>(BEFORE_ROUTING);
  // D-91: every route of the API may find the store out of reach.
  // D-121: and a scenario's `status=` may script 401, 408, 429, 500 and 503 on any of them (docs/scenarios.md).
  if (op.authenticated !== false) for (const s of ['401', '403', '404', '429', '503'] as const) out.add(s);
  if (op.counted) out.add('429');
  if (op.idempotent) for (const s of ['409', '422'] as const) out.add(s);
  if (op.body) for (const s of ['413', '415'] as const) out.add(s);
  for (const s of op.extraStatuses ?? []) out.add(s);
  return [...out].sort();
}
