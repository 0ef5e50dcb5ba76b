// The published contract: an OpenAPI 3.2 document served at `GET /openapi.json`, generated from the REST
// API's route rows (src/api/*.ts: each says its operation, schemas and traits) and the zod schemas of
// this module. Nothing here restates a field or a route: every schema comes from z.toJSONSchema
// (openapi-schemas.ts), every error answer from one table (openapi-errors.ts), every operation from its
// row; test/openapi.test.ts checks the served document with an OpenAPI validator and against the
// server's own answers.
import { IDEMPOTENCY_KEY_SYNTAX, INTERFACE_VERSION, LIMITS, ListConversationsQuery, RESPONSE_ID_HEADER } from './index.ts';
import {
  ERROR_STATUSES,
  METHOD_NOT_ALLOWED,
  RATE_LIMIT_HEADERS,
  errorResponse,
  errorStatusesOf,
  headerObjects,
  type ErrorStatusCode,
  type ErrorTraits,
} from './openapi-errors.ts';
import {
  REQUESTS,
  type RequestSchema,
  STREAM_EVENT_SCHEMA,
  componentIdOf,
  componentSchemas,
  eventStream,
  schemaRef,
} from './openapi-schemas.ts';
import { CREDITS_WARNING_HEADER } from './admin.ts';

export { ERROR_STATUSES, METHOD_NOT_ALLOWED, errorStatusesOf, type ErrorStatusCode } from './openapi-errors.ts';
export { STREAM_EVENT_SCHEMA, eventSchemaId, type RequestSchema } from './openapi-schemas.ts';

type Json = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Operations: each is described by its route row (src/api/*.ts), with the traits its stages read.
// ---------------------------------------------------------------------------------------------

/** What a route row of the REST API says of itself for the document, beside its method and pattern. */
export interface RestOperation extends ErrorTraits {
  operationId: string;
  summary: string;
  /** The request body's schema, which the route reads it with; the document names its component id (D-118). */
  body?: RequestSchema;
  /** The body may be left out (create conversation: every field has a default; no body reads as `{}`, D-1). */
  bodyOptional?: boolean;
  query?: Json[];
  /** The success answer: a component schema id; `stream` adds the SSE alternative. */
  ok: string;
  stream?: boolean;
  /** Answers an event stream only (the resume endpoint, D-32). */
  sseOnly?: boolean;
  /** Headers of the 200 beyond the rate-limit ones. */
  okHeaders?: Record<string, Json>;
}

/** A route row as the document reads it: `:name` segments in the pattern, below the base path. */
export interface DescribedRoute<O> {
  method: string;
  pattern: string;
  route: O;
}

/** The path parameters of the REST API, by name: a path item lists those its pattern has. */
const PATH_PARAMETERS: Record<string, Json> = {
  app_id: { name: 'app_id', in: 'path', required: true, schema: { type: 'string', minLength: 1 }, description: 'The app (§4).' },
  conversation_id: {
    name: 'conversation_id',
    in: 'path',
    required: true,
    schema: { type: 'string', minLength: 1 },
    description: 'A conversation of the app (D-7: `conv_…`).',
  },
  response_id: {
    name: 'response_id',
    in: 'path',
    required: true,
    schema: { type: 'string', minLength: 1 },
    description: 'A response of the app (`resp_…`, D-31: named by `Parley-Response-Id`).',
  },
  test_id: {
    name: 'test_id',
    in: 'path',
    required: true,
    schema: { type: 'string', minLength: 1 },
    description: "D-125: a test id, as `Parley-Test-Id` gave it (a key's id for its script, D-127).",
  },
};
/** D-31: send message names its response before the body. */
export const RESPONSE_ID_HEADER_DOC = {
  [RESPONSE_ID_HEADER]: {
    description: 'D-31 (resumable responses): the id of the response this request produces, before the body, in both modes.',
    schema: { type: 'string' },
  },
};
/** D-74: a reply let through on a soft-limit plan whose team has used its month's credits. */
export const CREDITS_WARNING_HEADER_DOC = {
  [CREDITS_WARNING_HEADER]: {
    description:
      "D-74: present only when the team's credits for the month are used up and the app's plan has a soft limit: the reply runs, and this says so.",
    schema: { type: 'string' },
  },
};

/** §4.2, D-10, D-12: the list's query parameters, one per key of ListConversationsQuery. */
export function listConversationsQuery(): Json[] {
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

/** D-32: where a resume starts, as the query and as an EventSource's reconnecting header. */
export const RESUME_EVENTS_PARAMETERS: Json[] = [
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
];

/**
 * §4.6, §4.7: one endpoint, two answers, chosen by the request's `stream` (not by `Accept`): the content
 * type of the 200 says which came. A generated client reads the JSON one as the operation's result and
 * the stream's `data:` lines as ResponseStreamEvent.
 */
const STREAM_CHOICE =
  "Chosen by the request's `stream`, not by `Accept` (§4.6, §4.7): `stream: false` (or, on send message, the app's default off) answers " +
  '`application/json`, the resource; `stream: true` (or the default on) answers `text/event-stream`, the events of §6, each `data:` line ' +
  `a JSON ${STREAM_EVENT_SCHEMA} whose \`type\` names its event (D-16…D-18; a client that leaves does not stop the reply, D-34).`;

const errorRef = (status: ErrorStatusCode): Json => ({ $ref: `#/components/responses/Error${status}` });

function operationObject(op: RestOperation): Json {
  const counted = op.counted || op.okHeaders ? { ...(op.counted ? headerObjects(RATE_LIMIT_HEADERS) : {}), ...op.okHeaders } : undefined;
  const responses: Json = {
    '200': {
      description: op.sseOnly
        ? 'An event stream (§6) whose events carry `id: <sequence number>` (D-32).'
        : op.stream
          ? STREAM_CHOICE
          : 'Success.',
      ...(counted ? { headers: counted } : {}),
      content: op.sseOnly
        ? { 'text/event-stream': eventStream() }
        : {
            'application/json': { schema: schemaRef(op.ok) },
            ...(op.stream ? { 'text/event-stream': eventStream() } : {}),
          },
    },
  };
  for (const status of errorStatusesOf(op)) responses[status] = errorRef(status);
  const parameters: Json[] = [...(op.query ?? [])];
  if (op.idempotent) parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
  // D-120: every request of the API may carry a scenario (docs/scenarios.md).
  parameters.push({ $ref: '#/components/parameters/ParleyScenario' }, { $ref: '#/components/parameters/ParleyTestId' });
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: !op.bodyOptional,
            content: { 'application/json': { schema: schemaRef(componentIdOf(REQUESTS, op.body)) } },
          },
        }
      : {}),
    responses,
  };
}

/** Where the document is served, outside the versioned API and without a key. */
export const OPENAPI_PATH = '/openapi.json';

/** Builds the document from the REST API's route rows, in their order. */
export function buildOpenApiDocument(routes: readonly DescribedRoute<RestOperation>[]): Json {
  const paths: Record<string, Json> = {};
  for (const { method, pattern, route } of routes) {
    const names = [...pattern.matchAll(/:(\w+)/g)].map((m) => m[1]!);
    const item = (paths[pattern.replace(/:(\w+)/g, '{$1}')] ??= { parameters: names.map((name) => PATH_PARAMETERS[name]) });
    item[method.toLowerCase()] = operationObject(route);
  }
  const documentResponses: Json = {
    '200': {
      description: 'The OpenAPI document.',
      content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
    },
  };
  for (const status of errorStatusesOf({ authenticated: false })) documentResponses[status] = errorRef(status);
  paths[OPENAPI_PATH] = {
    servers: [{ url: '/', description: 'Outside the versioned base path.' }],
    get: { operationId: 'getOpenApiDocument', summary: 'This document', security: [], responses: documentResponses },
  };
  const responses: Json = {};
  for (const status of Object.keys(ERROR_STATUSES) as ErrorStatusCode[])
    responses[`Error${status}`] = errorResponse(status, schemaRef('Error'));
  return {
    openapi: '3.2.0',
    info: {
      title: 'Parley: conversational agent service',
      version: INTERFACE_VERSION,
      description:
        'The interface 1.0.0 and the decisions where it is silent (docs/interface.md, docs/decisions.md). An unknown path answers 404; ' +
        `D-3: a known path called with a method it does not have answers ${METHOD_NOT_ALLOWED.status}, an Error whose type is ` +
        `\`${METHOD_NOT_ALLOWED.types[0]}\` and code \`${METHOD_NOT_ALLOWED.code}\`, with an \`${METHOD_NOT_ALLOWED.header}\` header listing the methods it has.`,
      license: { name: 'MIT', identifier: 'MIT' },
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
          // The header's value: the key, or the key quoted with each character escaped at most.
          schema: { type: 'string', minLength: 1, maxLength: 2 * LIMITS.idempotencyKeyChars + 2 },
          description: `Runs the request once per key; a retry with the same key and body gets the first answer (header \`idempotent-replayed: true\`). The key: ${IDEMPOTENCY_KEY_SYNTAX}.`,
        },
        ParleyScenario: {
          name: 'Parley-Scenario',
          in: 'header',
          required: false,
          schema: { type: 'string' },
          description:
            'D-120…D-124, a testing tool (docs/scenarios.md): directives separated by `;` that make this request fail as a test asks: ' +
            '`status=<code>` (401, 408, 409 on send message, 429, 500, 503; `retry-after=<s>`), `ttft=<ms>`, `tps`, `chunk`, `jitter`, `seed`, ' +
            '`drop-after=<n>`, `reset-after=<n>`, `stall-after=<n>:<ms>`, `fail-after=<n>`, `malformed-after=<n>`, `duplicate=<n>`, `cursor-expired`. ' +
            'A bad one is 400 `invalid_value`; on a server whose scenarios are off, 400 `scenarios_disabled`.',
        },
        ParleyTestId: {
          name: 'Parley-Test-Id',
          in: 'header',
          required: false,
          schema: { type: 'string' },
          description:
            'D-122: names the test run a request belongs to (docs/scenarios.md); 400 `scenarios_disabled` where scenarios are off.',
        },
      },
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: '§5, D-6: a secret key `sk_live_…`.' } },
    },
  };
}
