// The published contract: an OpenAPI 3.2 document generated from the zod schemas of this module's
// contract, served at `GET /openapi.json`. Nothing here restates a field: every schema comes from
// z.toJSONSchema, and test/openapi.test.ts checks the document with an OpenAPI validator and against
// the server's own answers, so that it cannot drift from what the server does.
import { z } from 'zod';
import {
  AppConfig,
  AppMetrics,
  CreateCompletionRequest,
  CreateConversationRequest,
  DeletionResult,
  EVENT_TYPES,
  INTERFACE_VERSION,
  Item,
  LIMITS,
  ListConversationsQuery,
  Metadata,
  ReferenceCompletion,
  ReferenceConversation,
  ReferenceConversationList,
  ReferenceConversationWithItems,
  ReferenceErrorBody,
  ReferenceEventPayload,
  ReferenceResponse,
  LiveResponse,
  RESPONSE_ID_HEADER,
  SendMessageRequest,
  UpdateConversationRequest,
  Usage,
  ResponseError,
  OutputItem,
  type EventType,
} from './index.ts';

type Json = Record<string, unknown>;

const ref = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });

/** `response.output_text.delta` → `ResponseOutputTextDeltaEvent`. */
export function eventSchemaId(type: EventType): string {
  return `${type
    .split(/[._]/)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('')}Event`;
}

/** Every named schema of the document, by its component id. */
function namedSchemas(): Map<string, z.ZodType> {
  const named = new Map<string, z.ZodType>([
    ['Conversation', ReferenceConversation],
    ['ConversationWithItems', ReferenceConversationWithItems],
    ['ConversationList', ReferenceConversationList],
    ['DeletionResult', DeletionResult],
    ['Item', Item],
    ['OutputItem', OutputItem],
    ['Response', ReferenceResponse],
    ['LiveResponse', LiveResponse],
    ['Completion', ReferenceCompletion],
    ['Usage', Usage],
    ['ResponseError', ResponseError],
    ['AppConfig', AppConfig],
    ['AppMetrics', AppMetrics],
    ['Error', ReferenceErrorBody],
    ['CreateConversationRequest', CreateConversationRequest],
    ['UpdateConversationRequest', UpdateConversationRequest],
    ['SendMessageRequest', SendMessageRequest],
    ['CreateCompletionRequest', CreateCompletionRequest],
  ]);
  for (const type of EVENT_TYPES) named.set(eventSchemaId(type), ReferenceEventPayload[type]);
  return named;
}

function componentSchemas(): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of namedSchemas()) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io: 'output',
    uri: (id) => `#/components/schemas/${id}`,
    unrepresentable: 'any',
    override: ({ zodSchema, jsonSchema }) => {
      const js = jsonSchema as Json;
      // D-9: a refinement zod cannot express; its size rule is stated in words.
      if (zodSchema === Metadata) {
        js.type = 'object';
        js.description = `A JSON object of at most ${LIMITS.metadataBytes} bytes as compact UTF-8 JSON (D-9).`;
      }
      // zod names its startsWith check as a format; JSON Schema knows no such format (the pattern says it).
      if (js.format === 'starts_with') delete js.format;
    },
  });
  const out: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    const { $schema: _s, $id: _i, ...rest } = schema as Json;
    out[id] = rest;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Errors: which statuses an operation can answer, and what `type`/`code` each carries
// ---------------------------------------------------------------------------------------------

interface ErrorStatus {
  description: string;
  types: readonly string[];
  /** D-1…D-3 codes an `invalid_request_error` of this status carries (null: any or none). */
  codes?: readonly string[];
  /** Headers of the answer: name → whether it is always there. */
  headers?: Partial<Record<HeaderName, boolean>>;
}

/** The response headers the document names (D-3, D-23, Idempotency-Key). */
const HEADERS = {
  Allow: { description: 'D-3: the methods the path has.', schema: { type: 'string' } },
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
} as const;
type HeaderName = keyof typeof HEADERS;
const RATE_LIMIT_HEADERS = {
  'x-ratelimit-limit-requests': true,
  'x-ratelimit-remaining-requests': true,
  'x-ratelimit-reset-requests': true,
} as const;

function headerObjects(headers: Partial<Record<HeaderName, boolean>>): Json {
  const out: Json = {};
  for (const [name, required] of Object.entries(headers) as [HeaderName, boolean][]) out[name] = { ...HEADERS[name], required };
  return out;
}

/**
 * Every error status the server answers (§7, D-1…D-5, D-23 and the Idempotency-Key extension), with
 * the types and codes each carries. test/openapi.test.ts fails on an answer this does not describe;
 * once the server's errors come from one typed catalogue, this table should be derived from it.
 */
export const ERROR_STATUSES = {
  '400': {
    description:
      'D-1: a malformed or invalid request (body, query, a missing Host header, a bad Idempotency-Key, or a request that is not valid HTTP).',
    types: ['invalid_request_error'],
    codes: [
      'invalid_json',
      'missing_parameter',
      'invalid_type',
      'invalid_value',
      'unknown_parameter',
      'too_large',
      'invalid_cursor',
      'malformed_request',
    ],
  },
  '401': { description: '§5, D-6: a missing or unknown secret key.', types: ['invalid_api_key'] },
  '403': {
    description: '§7, D-4, D-6: the key may not use this app (or is a publishable key), the app is disabled, or it has no agent.',
    types: ['access_denied', 'app_inactive', 'agent_unavailable'],
  },
  '404': { description: 'D-3, D-4, D-11: no such path, app or conversation (a soft-deleted one included).', types: ['not_found'] },
  '405': {
    description: 'D-3: a known path with a method it does not have; the Allow header lists those it has.',
    types: ['invalid_request_error'],
    codes: ['method_not_allowed'],
    headers: { Allow: true },
  },
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
    description: "D-23: the app's plan allows no more requests now, or it has too many streams open.",
    types: ['rate_limit_exceeded'],
    headers: { 'Retry-After': true, ...RATE_LIMIT_HEADERS },
  },
  '431': { description: 'The request headers or URL are too large.', types: ['invalid_request_error'], codes: ['headers_too_large'] },
  '500': { description: 'D-5: an unexpected failure; the message names the request id and no internals.', types: ['internal_error'] },
} as const satisfies Record<string, ErrorStatus>;
export type ErrorStatusCode = keyof typeof ERROR_STATUSES;

function errorResponse(status: ErrorStatusCode): Json {
  const e: ErrorStatus = ERROR_STATUSES[status];
  const narrowed: Json = { type: { enum: [...e.types] } };
  if (e.codes) narrowed.code = { enum: [...e.codes] };
  return {
    description: e.description,
    ...(e.headers ? { headers: headerObjects(e.headers) } : {}),
    content: {
      'application/json': {
        schema: { allOf: [ref('Error'), { type: 'object', properties: { error: { type: 'object', properties: narrowed } } }] },
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------

interface Operation {
  method: 'get' | 'post' | 'patch' | 'delete';
  path: string;
  operationId: string;
  summary: string;
  body?: string;
  query?: Json[];
  /** The success answer: a component schema id; `stream` adds the SSE alternative. */
  ok: string;
  stream?: boolean;
  /** D-4: send message and completion need the app's agent. */
  needsAgent?: boolean;
  /** D-23: counted against the plan (429 and the rate-limit headers). */
  counted?: boolean;
  /** Honours Idempotency-Key (409, 422). */
  idempotent?: boolean;
  /** Answers an event stream only (the resume endpoint, D-32). */
  sseOnly?: boolean;
  /** Statuses beyond D-4's (409 of D-37, 410 of D-36). */
  extraStatuses?: ErrorStatusCode[];
  /** Headers of the 200 beyond the rate-limit ones. */
  okHeaders?: Record<string, Json>;
}

const appId = { name: 'app_id', in: 'path', required: true, schema: { type: 'string', minLength: 1 }, description: 'The app (§4).' };
const responseId = {
  name: 'response_id',
  in: 'path',
  required: true,
  schema: { type: 'string', minLength: 1 },
  description: 'A response of the app (`resp_…`, D-31: named by `Parley-Response-Id`).',
};
/** D-31: send message names its response before the body. */
const responseIdHeader = {
  [RESPONSE_ID_HEADER]: {
    description: 'D-31 (resumable responses): the id of the response this request produces, before the body, in both modes.',
    schema: { type: 'string' },
  },
};
const conversationId = {
  name: 'conversation_id',
  in: 'path',
  required: true,
  schema: { type: 'string', minLength: 1 },
  description: 'A conversation of the app (D-7: `conv_…`).',
};

/** §4.2, D-10, D-12: the list's query parameters, one per key of ListConversationsQuery. */
function listQuery(): Json[] {
  const described: Record<string, Json> = {
    limit: {
      schema: { type: 'integer', minimum: LIMITS.listLimitMin, maximum: LIMITS.listLimitMax, default: LIMITS.listLimitDefault },
      description: 'D-12: digits only; outside 1…100 is a 400, never clamped.',
    },
    after: {
      schema: { type: 'string', minLength: 1 },
      description: 'D-12: the page after this conversation id, in the requested order. Not with `before`.',
    },
    before: {
      schema: { type: 'string', minLength: 1 },
      description: 'D-12: the page before this conversation id, in the requested order. Not with `after`.',
    },
    order: { schema: { type: 'string', enum: ['asc', 'desc'], default: 'desc' }, description: '§4.2: by creation time.' },
    external_user_id: {
      schema: { type: 'string', minLength: 1, maxLength: LIMITS.externalUserIdChars },
      description: "D-10 (an extension): only this user's conversations.",
    },
  };
  return Object.keys(ListConversationsQuery.shape).map((name) => ({ name, in: 'query', required: false, ...described[name] }));
}

const OPERATIONS: Operation[] = [
  {
    method: 'post',
    path: '/apps/{app_id}/conversations',
    operationId: 'createConversation',
    summary: '§4.1 Create a conversation',
    body: 'CreateConversationRequest',
    ok: 'Conversation',
    idempotent: true,
  },
  {
    method: 'get',
    path: '/apps/{app_id}/conversations',
    operationId: 'listConversations',
    summary: '§4.2 List conversations',
    query: listQuery(),
    ok: 'ConversationList',
  },
  {
    method: 'get',
    path: '/apps/{app_id}/conversations/{conversation_id}',
    operationId: 'getConversation',
    summary: '§4.3 Get a conversation with its items',
    ok: 'ConversationWithItems',
  },
  {
    method: 'patch',
    path: '/apps/{app_id}/conversations/{conversation_id}',
    operationId: 'updateConversation',
    summary: '§4.4 Rename a conversation (D-13)',
    body: 'UpdateConversationRequest',
    ok: 'Conversation',
  },
  {
    method: 'delete',
    path: '/apps/{app_id}/conversations/{conversation_id}',
    operationId: 'deleteConversation',
    summary: '§4.5 Soft-delete a conversation (D-11)',
    ok: 'DeletionResult',
  },
  {
    method: 'post',
    path: '/apps/{app_id}/conversations/{conversation_id}',
    operationId: 'sendMessage',
    summary: '§4.6 Send a message; the reply is JSON or an event stream (§6)',
    body: 'SendMessageRequest',
    ok: 'Response',
    stream: true,
    needsAgent: true,
    counted: true,
    idempotent: true,
    extraStatuses: ['409'],
    okHeaders: responseIdHeader,
  },
  // Resumable responses (an extension, docs/responses.md, D-30…D-39).
  {
    method: 'get',
    path: '/apps/{app_id}/responses/{response_id}',
    operationId: 'getResponse',
    summary: 'D-32 Look up a response: `in_progress` while it runs, then as it ended',
    ok: 'LiveResponse',
    counted: true,
  },
  {
    method: 'get',
    path: '/apps/{app_id}/responses/{response_id}/events',
    operationId: 'resumeResponseEvents',
    summary:
      'D-32 The events after `starting_after` (or `Last-Event-ID`) as first sent, then the live ones to the terminal one; each with an `id:` line',
    query: [
      {
        name: 'starting_after',
        in: 'query',
        required: false,
        schema: { type: 'integer', minimum: -1, default: -1 },
        description: 'D-32: the last sequence number seen; -1 for every event.',
      },
      {
        name: 'Last-Event-ID',
        in: 'header',
        required: false,
        schema: { type: 'integer', minimum: -1 },
        description: 'D-32: as an EventSource sends it on reconnecting; wins over `starting_after`.',
      },
    ],
    ok: 'LiveResponse',
    sseOnly: true,
    counted: true,
    extraStatuses: ['410'],
  },
  {
    method: 'post',
    path: '/apps/{app_id}/responses/{response_id}/cancel',
    operationId: 'cancelResponse',
    summary: 'D-33 Cancel a running response (it ends failed, code `cancelled`); a finished one is returned unchanged',
    ok: 'LiveResponse',
    counted: true,
  },
  {
    method: 'post',
    path: '/apps/{app_id}/completions',
    operationId: 'createCompletion',
    summary: '§4.7 Create a one-shot completion; JSON or an event stream (§6)',
    body: 'CreateCompletionRequest',
    ok: 'Completion',
    stream: true,
    needsAgent: true,
    counted: true,
    idempotent: true,
  },
  {
    method: 'get',
    path: '/apps/{app_id}/config',
    operationId: 'getAppConfig',
    summary: "§4.8 Get the app's configuration",
    ok: 'AppConfig',
  },
  {
    method: 'get',
    path: '/apps/{app_id}/metrics',
    operationId: 'getAppMetrics',
    summary: "§4.9 Get the app's metrics (D-24)",
    ok: 'AppMetrics',
  },
];

/** The error statuses an operation can answer, in the order of D-4's checks. */
export function errorStatusesOf(op: Pick<Operation, 'body' | 'counted' | 'idempotent' | 'extraStatuses'>): ErrorStatusCode[] {
  const out: ErrorStatusCode[] = ['400', '401', '403', '404', '408', '417', '431'];
  if (op.idempotent) out.push('409', '422');
  for (const s of op.extraStatuses ?? []) if (!out.includes(s)) out.push(s);
  if (op.body) out.push('413', '415');
  if (op.counted) out.push('429');
  out.push('500');
  return out.sort() as ErrorStatusCode[];
}

/** §6 with OpenAPI 3.2's itemSchema: one SSE event per item, its `data` a JSON payload of its event. */
function eventStream(): Json {
  return {
    itemSchema: {
      type: 'object',
      required: ['event', 'data'],
      properties: {
        event: { type: 'string', enum: [...EVENT_TYPES] },
        data: { type: 'string' },
        id: { type: 'string' },
        retry: { type: 'integer' },
      },
      oneOf: EVENT_TYPES.map((type) => ({
        properties: {
          event: { const: type },
          data: { contentMediaType: 'application/json', contentSchema: ref(eventSchemaId(type)) },
        },
      })),
    },
  };
}

function operationObject(op: Operation): Json {
  const counted = op.counted || op.okHeaders ? { ...(op.counted ? headerObjects(RATE_LIMIT_HEADERS) : {}), ...op.okHeaders } : undefined;
  const responses: Json = {
    '200': {
      description: op.sseOnly
        ? 'An event stream (§6) whose events carry `id: <sequence number>` (D-32).'
        : op.stream
          ? "JSON, or with `stream: true` (or the app's default, §4.6) an event stream (§6, D-16…D-18; a client that leaves no longer stops the reply, D-34)."
          : 'Success.',
      ...(counted ? { headers: counted } : {}),
      content: op.sseOnly
        ? { 'text/event-stream': eventStream() }
        : {
            'application/json': { schema: ref(op.ok) },
            ...(op.stream ? { 'text/event-stream': eventStream() } : {}),
          },
    },
  };
  for (const status of errorStatusesOf(op)) responses[status] = { $ref: `#/components/responses/Error${status}` };
  const parameters: Json[] = [...(op.query ?? [])];
  if (op.idempotent) parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? { requestBody: { required: op.body !== 'CreateConversationRequest', content: { 'application/json': { schema: ref(op.body) } } } }
      : {}),
    responses,
  };
}

/** Where the document is served, outside the versioned API and without a key. */
export const OPENAPI_PATH = '/openapi.json';

/** Builds the document; `servers` defaults to the reference server's default address. */
export function buildOpenApiDocument(): Json {
  const paths: Record<string, Json> = {};
  for (const op of OPERATIONS) {
    const item = (paths[op.path] ??= {
      parameters: op.path.includes('{conversation_id}')
        ? [appId, conversationId]
        : op.path.includes('{response_id}')
          ? [appId, responseId]
          : [appId],
    });
    item[op.method] = operationObject(op);
  }
  paths[OPENAPI_PATH] = {
    servers: [{ url: '/', description: 'Outside the versioned base path.' }],
    get: {
      operationId: 'getOpenApiDocument',
      summary: 'This document',
      security: [],
      responses: { '200': { description: 'The OpenAPI document.', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  };
  const responses: Json = {};
  for (const status of Object.keys(ERROR_STATUSES) as ErrorStatusCode[]) responses[`Error${status}`] = errorResponse(status);
  return {
    openapi: '3.2.0',
    info: {
      title: 'Parley: conversational agent service',
      version: INTERFACE_VERSION,
      description:
        'The interface 1.0.0 and the decisions D-1…D-24 where it is silent (docs/interface.md, docs/decisions.md). ' +
        'A known path called with a method it does not have answers 405 (components.responses.Error405); an unknown path 404.',
    },
    // The schemas are plain JSON Schema 2020-12 (z.toJSONSchema's target), without OpenAPI's keywords.
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: '/v1', description: '§9: the base path carries the version.' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas: componentSchemas(),
      responses,
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          schema: { type: 'string', minLength: 1, maxLength: 255 },
          description:
            'Runs the request once per key; a retry with the same key and body gets the first answer (header `idempotent-replayed: true`).',
        },
      },
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: '§5, D-6: a secret key `sk_live_…`.' } },
    },
  };
}

let cached: Json | undefined;
/** The document as served (built once: it depends on nothing but the contract). */
export function openApiDocument(): Json {
  return (cached ??= buildOpenApiDocument());
}
