// The published contract: an OpenAPI 3.2 document generated from the zod schemas of this module's
// contract, served at `GET /openapi.json`. Nothing here restates a field: every schema comes from
// z.toJSONSchema (openapi-schemas.ts), every error answer from one table (openapi-errors.ts), and
// test/openapi.test.ts checks the document with an OpenAPI validator, against the server's routes and
// error catalogue, and against the server's own answers, so that it cannot drift from what the server does.
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
import { STREAM_EVENT_SCHEMA, componentSchemas, eventStream, schemaRef } from './openapi-schemas.ts';
import { CREDITS_WARNING_HEADER } from './admin.ts';

export { ERROR_STATUSES, METHOD_NOT_ALLOWED, errorStatusesOf, type ErrorStatusCode } from './openapi-errors.ts';
export { STREAM_EVENT_SCHEMA, eventSchemaId } from './openapi-schemas.ts';

type Json = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------

interface Operation extends ErrorTraits {
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
  /** Answers an event stream only (the resume endpoint, D-32). */
  sseOnly?: boolean;
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
/** D-74: a reply let through on a soft-limit plan whose team has used its month's credits. */
const creditsWarningHeader = {
  [CREDITS_WARNING_HEADER]: {
    description:
      "D-74: present only when the team's credits for the month are used up and the app's plan has a soft limit: the reply runs, and this says so.",
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
    // D-110 (revises D-23): a create counts against the plan; D-27: it may meet the storage quota.
    counted: true,
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
    okHeaders: { ...responseIdHeader, ...creditsWarningHeader },
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
    okHeaders: creditsWarningHeader,
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

function operationObject(op: Operation): Json {
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
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: op.body !== 'CreateConversationRequest',
            content: { 'application/json': { schema: schemaRef(op.body) } },
          },
        }
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
