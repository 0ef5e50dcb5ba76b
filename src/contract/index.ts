// The one contract: zod schemas of every resource, request, event and error of interface 1.0.0
// (plus the project's decisions D-1…D-24), shared by the server, the CLI and the conformance suite.
//
// Two layers, each field described once:
// - `spec` schemas hold exactly what interface.md states, loose about extensions and about what it
//   leaves "not shown"; the conformance suite's `spec` profile judges other implementations by them.
// - `reference` schemas extend them with the D-n decisions; the server produces them, the CLI relies
//   on them and the conformance `reference` profile checks them.
import { z } from 'zod';

export const INTERFACE_VERSION = '1.0.0';

/** Limits of interface §8 and the decisions that pin the ones it leaves open. */
export const LIMITS = {
  /** §8, D-9: UTF-8 bytes of the compact JSON of `metadata`. */
  metadataBytes: 16_384,
  /** Not in the interface: bounds recursion before anything walks a hostile document. */
  jsonDepth: 64,
  /** §8: prompt length in characters (Unicode code points). */
  promptChars: 32_000,
  /** D-15: message content length in characters. */
  contentChars: 32_000,
  /** D-8: custom title length. */
  titleChars: 256,
  /** D-10: external_user_id length. */
  externalUserIdChars: 256,
  /** §8: list `limit`. */
  listLimitMin: 1,
  listLimitMax: 100,
  listLimitDefault: 20,
  /** D-2: request body cap. */
  bodyBytes: 1024 * 1024,
} as const;

/** D-7: id prefixes. */
export const ID_PREFIX = {
  conversation: 'conv_',
  response: 'resp_',
  completion: 'cmpl_',
  message: 'msg_',
  call: 'call_',
} as const;

/** Counts Unicode code points, which is what a person means by "characters". */
export function charLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** Depth of a parsed JSON value, walked iteratively so a hostile document cannot overflow the stack. */
export function jsonDepth(value: unknown, stopAt = Infinity): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > max) max = d;
    if (max > stopAt) return max;
    for (const child of Object.values(v as object)) stack.push([child, d + 1]);
  }
  return max;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Byte size of `metadata` as D-9 defines it. Only call on a depth-bounded value. */
export function metadataBytes(v: Record<string, unknown>): number {
  return Buffer.byteLength(JSON.stringify(v), 'utf8');
}

/**
 * A custom issue's `params.apiCode` carries the D-1 error code, so that the HTTP layer maps
 * every validation failure to one error object without knowing the rule behind it.
 */
type RefineCtx = { addIssue(issue: { code: 'custom'; message: string; params?: Record<string, unknown>; input?: unknown }): void };

function chars(field: string, min: number, max: number) {
  return z.string().superRefine((s, ctx: RefineCtx) => {
    const n = charLength(s);
    if (n < min || n > max) {
      ctx.addIssue({
        code: 'custom',
        message: `${field} must be ${min} to ${max.toLocaleString('en-US')} characters long (got ${n.toLocaleString('en-US')})`,
        params: { apiCode: 'invalid_value' },
      });
    }
  });
}

/** D-9: metadata is a JSON object of at most 16,384 bytes (compact JSON, UTF-8). */
export const Metadata = z.custom<Record<string, unknown>>().superRefine((v, ctx: RefineCtx) => {
  if (!isPlainObject(v)) {
    ctx.addIssue({ code: 'custom', message: 'metadata must be a JSON object', params: { apiCode: 'invalid_type' } });
    return;
  }
  if (jsonDepth(v, LIMITS.jsonDepth) > LIMITS.jsonDepth) {
    ctx.addIssue({
      code: 'custom',
      message: `metadata must not be nested deeper than ${LIMITS.jsonDepth} levels`,
      params: { apiCode: 'invalid_value' },
    });
    return;
  }
  const bytes = metadataBytes(v);
  if (bytes > LIMITS.metadataBytes) {
    ctx.addIssue({
      code: 'custom',
      message: `metadata must be at most ${LIMITS.metadataBytes.toLocaleString('en-US')} bytes of JSON (got ${bytes.toLocaleString('en-US')})`,
      params: { apiCode: 'too_large' },
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Resources (§2)
// ---------------------------------------------------------------------------------------------

const unixSeconds = z.number().int().nonnegative();

/** §2.4 content part: an object with a `type`; a text part carries `text`. */
export const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });

/** §2.4 output items, one schema per `type`. */
export const MessageOutputItem = z.looseObject({
  type: z.literal('message'),
  role: z.string().nullable(),
  content: z.array(ContentPart).nullable(),
});
export const FunctionCallOutputItem = z.looseObject({
  type: z.literal('function_call'),
  name: z.string().nullable(),
  arguments: z.string().nullable(),
  call_id: z.string().nullable(),
});
export const JsonPatchOperation = z.looseObject({
  op: z.enum(['add', 'remove', 'replace', 'move', 'copy', 'test']),
  path: z.string(),
  value: z.unknown().optional(),
  from: z.string().optional(),
});
export const DataSpec = z.looseObject({ type: z.literal('patch'), patch: JsonPatchOperation });
export const DataSpecOutputItem = z.looseObject({ type: z.literal('data_spec'), data: DataSpec });
export const OutputItem = z.discriminatedUnion('type', [MessageOutputItem, FunctionCallOutputItem, DataSpecOutputItem]);

/** §2.1 */
export const Conversation = z.looseObject({
  id: z.string().min(1),
  created_at: unixSeconds,
  object: z.literal('conversation'),
  external_user_id: z.string().nullable().optional(),
  title: z.string().nullable(),
  generated_title: z.record(z.string(), z.string()),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

/** §4.3: item fields are "not shown" by the interface, so the spec layer only asks for objects. */
export const ConversationWithItems = Conversation.extend({ items: z.array(z.looseObject({})) });

/** §2.3 */
export const Response = z.looseObject({
  id: z.string().min(1),
  object: z.literal('response'),
  created_at: unixSeconds,
  conversation_id: z.string().min(1),
  output: z.array(OutputItem),
  status: z.enum(['completed', 'failed']),
});

/**
 * §2.3 read as stated: `object`, `output` and `status` have defaults (`response`, `[]`, `completed`),
 * so an implementation may leave them out; parsing fills them in. The conformance `spec` profile
 * reads responses with it, so that it never fails an implementation for relying on a default.
 */
export const ResponseWithDefaults = Response.extend({
  object: z.literal('response').default('response'),
  output: z.array(OutputItem).default([]),
  status: z.enum(['completed', 'failed']).default('completed'),
});

/** §2.5 */
export const Completion = z.looseObject({
  id: z.string().startsWith(ID_PREFIX.completion),
  object: z.literal('completion'),
  created_at: unixSeconds,
  text: z.string(),
  status: z.enum(['completed', 'failed']),
});

/** §2.6 */
export const ConversationList = z.looseObject({
  object: z.literal('list'),
  data: z.array(Conversation),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.boolean(),
});

/** §2.7 */
export const DeletionResult = z.looseObject({
  id: z.string().min(1),
  object: z.literal('conversation'),
  deleted: z.literal(true),
});

/** §2.8 */
export const AppConfig = z.looseObject({
  app_id: z.string().min(1),
  stream: z.boolean(),
  generative_ui: z.boolean(),
  agent: z.looseObject({
    name: z.string(),
    config: z.looseObject({ primary_color: z.string(), secondary_color: z.string() }),
  }),
});

/** §2.9 */
export const AppMetrics = z.looseObject({
  total_conversations: z.number().int().nonnegative(),
  total_messages: z.number().int().nonnegative(),
  total_users: z.number().int().nonnegative(),
});

/** §7 */
export const ErrorType = z.enum([
  'invalid_api_key',
  'access_denied',
  'app_inactive',
  'agent_unavailable',
  'not_found',
  'rate_limit_exceeded',
  'internal_error',
]);
export const ErrorBody = z.looseObject({
  error: z.looseObject({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable().optional(),
    code: z.string().nullable().optional(),
  }),
});

/** §7 status of each error type the interface fixes. */
export const ERROR_STATUS: Record<z.infer<typeof ErrorType>, number> = {
  invalid_api_key: 401,
  access_denied: 403,
  app_inactive: 403,
  agent_unavailable: 403,
  not_found: 404,
  rate_limit_exceeded: 429,
  internal_error: 500,
};

// ---------------------------------------------------------------------------------------------
// Requests (§4), with the D-n rules the server enforces
// ---------------------------------------------------------------------------------------------

/** §4.1, D-8, D-9, D-10 */
export const CreateConversationRequest = z.strictObject({
  external_user_id: chars('external_user_id', 1, LIMITS.externalUserIdChars).nullable().optional(),
  title: chars('title', 1, LIMITS.titleChars).nullable().optional(),
  metadata: Metadata.nullable().optional(),
});

/**
 * D-12: `limit` is an integer from 1 to 100 written the plain way: digits only, no leading zero
 * (`5`, not `05`, `+5`, `5.0` or `1e1`), so that one rule says what is accepted.
 */
const limitParam = z.string().superRefine((s, ctx: RefineCtx) => {
  const n = /^[1-9][0-9]{0,2}$/.test(s) ? Number(s) : NaN;
  if (!(n >= LIMITS.listLimitMin && n <= LIMITS.listLimitMax)) {
    ctx.addIssue({
      code: 'custom',
      message: `limit must be an integer from ${LIMITS.listLimitMin} to ${LIMITS.listLimitMax}, in digits without leading zeros (got ${JSON.stringify(s)})`,
      params: { apiCode: 'invalid_value' },
    });
  }
});

/** D-12: a cursor is a conversation id; an empty one is refused in words, like every other rule (D-1). */
function cursor(field: 'after' | 'before') {
  return z.string().superRefine((s, ctx: RefineCtx) => {
    if (s === '') ctx.addIssue({ code: 'custom', message: `${field} must be a conversation id (got an empty value)`, params: { apiCode: 'invalid_value' } });
  });
}

/** §4.2, D-10, D-12: query values arrive as strings. */
export const ListConversationsQuery = z
  .strictObject({
    limit: limitParam.optional(),
    after: cursor('after').optional(),
    before: cursor('before').optional(),
    order: z.enum(['asc', 'desc']).optional(),
    external_user_id: chars('external_user_id', 1, LIMITS.externalUserIdChars).optional(),
  })
  .superRefine((q, ctx: RefineCtx) => {
    if (q.after !== undefined && q.before !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'after and before cannot be used together',
        params: { apiCode: 'invalid_value', param: 'before' },
      });
    }
  });

/** §4.4, D-13 */
export const UpdateConversationRequest = z.strictObject({
  title: chars('title', 1, LIMITS.titleChars).nullable(),
});

/** §2.2, D-15 */
export const MessageInput = z.strictObject({
  content: chars('message.content', 1, LIMITS.contentChars),
  role: z.literal('user').optional(),
});

/** §4.6, D-9 */
export const SendMessageRequest = z.strictObject({
  message: MessageInput,
  stream: z.boolean().nullable().optional(),
  metadata: Metadata.nullable().optional(),
});

/** §4.7 */
export const CreateCompletionRequest = z.strictObject({
  prompt: chars('prompt', 1, LIMITS.promptChars),
  stream: z.boolean().optional(),
  knowledge_search: z.boolean().optional(),
  fast: z.boolean().optional(),
  metadata: Metadata.nullable().optional(),
});

// ---------------------------------------------------------------------------------------------
// Events (§6, D-16)
// ---------------------------------------------------------------------------------------------

export const EVENT_TYPES = [
  'response.created',
  'response.output_text.delta',
  'response.output_text.done',
  'response.function_call.start',
  'response.function_call_arguments.delta',
  'response.function_call_arguments.done',
  'response.data_spec',
  'response.completed',
  'response.failed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** §6 payloads as the interface states them; "not shown" payloads are any object. */
export const SpecEventPayload = {
  'response.created': z.looseObject({
    id: z.string().min(1),
    object: z.enum(['response', 'completion']),
    status: z.literal('in_progress'),
    conversation_id: z.string().optional(),
  }),
  'response.output_text.delta': z.looseObject({
    type: z.string(),
    delta: z.string(),
    output_index: z.number().int().nonnegative(),
    content_index: z.number().int().nonnegative(),
  }),
  'response.output_text.done': z.looseObject({
    type: z.string(),
    text: z.string(),
    output_index: z.number().int().nonnegative(),
    content_index: z.number().int().nonnegative(),
  }),
  'response.function_call.start': z.looseObject({}),
  'response.function_call_arguments.delta': z.looseObject({}),
  'response.function_call_arguments.done': z.looseObject({}),
  'response.data_spec': z.looseObject({
    type: z.string(),
    data: DataSpec,
    output_index: z.number().int().nonnegative(),
  }),
  'response.completed': z.looseObject({ id: z.string().min(1), status: z.literal('completed') }),
  'response.failed': z.looseObject({}),
} satisfies Record<EventType, z.ZodType>;

/**
 * Token usage, an extension: on a response and a completion, and on the terminal event of their
 * streams (`response.completed`, `response.failed`) after D-16's fields.
 */
export const Usage = z.object({
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative(),
});

/** The error carried by a failed response or a `response.failed` event (D-16, D-17). */
export const ResponseError = z.object({ type: z.string(), message: z.string(), code: z.string().nullable() });

/** D-16: what the reference adds to each payload. */
const sequenced = <T extends EventType>(type: T) => ({ type: z.literal(type), sequence_number: z.number().int().nonnegative() });

export const ReferenceEventPayload = {
  'response.created': SpecEventPayload['response.created'].extend(sequenced('response.created')),
  'response.output_text.delta': SpecEventPayload['response.output_text.delta'].extend(sequenced('response.output_text.delta')),
  'response.output_text.done': SpecEventPayload['response.output_text.done'].extend(sequenced('response.output_text.done')),
  'response.function_call.start': z.looseObject({
    ...sequenced('response.function_call.start'),
    output_index: z.number().int().nonnegative(),
    call_id: z.string(),
    name: z.string(),
  }),
  'response.function_call_arguments.delta': z.looseObject({
    ...sequenced('response.function_call_arguments.delta'),
    output_index: z.number().int().nonnegative(),
    call_id: z.string(),
    delta: z.string(),
  }),
  'response.function_call_arguments.done': z.looseObject({
    ...sequenced('response.function_call_arguments.done'),
    output_index: z.number().int().nonnegative(),
    call_id: z.string(),
    name: z.string(),
    arguments: z.string(),
  }),
  'response.data_spec': SpecEventPayload['response.data_spec'].extend(sequenced('response.data_spec')),
  'response.completed': SpecEventPayload['response.completed'].extend({ ...sequenced('response.completed'), usage: Usage.optional() }),
  'response.failed': z.looseObject({
    ...sequenced('response.failed'),
    id: z.string().min(1),
    status: z.literal('failed'),
    error: ResponseError,
    usage: Usage.optional(),
  }),
} satisfies Record<EventType, z.ZodType>;

export type EventPayload<T extends EventType> = z.infer<(typeof ReferenceEventPayload)[T]>;
/** One SSE event as the reference server emits it: `event: <type>` then `data: <payload>`. */
export type StreamEvent = { [T in EventType]: { event: T; data: EventPayload<T> } }[EventType];
/** An event before the writer stamps `type` and `sequence_number` on it. */
export type UnsequencedEvent = {
  [T in EventType]: { event: T; data: Omit<EventPayload<T>, 'type' | 'sequence_number'> };
}[EventType];

// ---------------------------------------------------------------------------------------------
// Reference resources (the D-n decisions on top of §2)
// ---------------------------------------------------------------------------------------------

/** D-8, D-9, D-10: every field present, nulls and empty objects where nothing was given. */
export const ReferenceConversation = Conversation.extend({
  id: z.string().startsWith(ID_PREFIX.conversation),
  external_user_id: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
});

/** D-14: an item is its output item plus id, created_at and the response it belongs to. */
const itemBase = { id: z.string().min(1), created_at: unixSeconds, response_id: z.string().optional() };
export const Item = z.discriminatedUnion('type', [
  MessageOutputItem.extend(itemBase),
  FunctionCallOutputItem.extend(itemBase),
  DataSpecOutputItem.extend(itemBase),
]);

export const ReferenceConversationWithItems = ReferenceConversation.extend({ items: z.array(Item) });

/** D-17: a failed response carries its error; `usage` is the token usage extension (see Usage). */
export const ReferenceResponse = Response.extend({
  id: z.string().startsWith(ID_PREFIX.response),
  error: ResponseError.optional(),
  usage: Usage.optional(),
});
export const ReferenceCompletion = Completion.extend({
  error: ResponseError.optional(),
  usage: Usage.optional(),
});
export const ReferenceConversationList = ConversationList.extend({ data: z.array(ReferenceConversation) });

/** D-1…D-6: the error object always has all four fields. */
export const ReferenceErrorBody = z.object({
  error: z.object({
    message: z.string().min(1),
    type: z.string(),
    param: z.string().nullable(),
    code: z.string().nullable(),
  }),
});

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

export type ConversationT = z.infer<typeof ReferenceConversation>;
export type ConversationWithItemsT = z.infer<typeof ReferenceConversationWithItems>;
export type ConversationListT = z.infer<typeof ReferenceConversationList>;
export type DeletionResultT = z.infer<typeof DeletionResult>;
export type ItemT = z.infer<typeof Item>;
export type OutputItemT = z.infer<typeof OutputItem>;
export type ResponseT = z.infer<typeof ReferenceResponse>;
export type CompletionT = z.infer<typeof ReferenceCompletion>;
export type UsageT = z.infer<typeof Usage>;
export type ResponseErrorT = z.infer<typeof ResponseError>;
export type AppConfigT = z.infer<typeof AppConfig>;
export type AppMetricsT = z.infer<typeof AppMetrics>;
export type ErrorBodyT = z.infer<typeof ReferenceErrorBody>;
export type ErrorTypeT = z.infer<typeof ErrorType>;
export type CreateConversationRequestT = z.infer<typeof CreateConversationRequest>;
export type ListConversationsQueryT = z.infer<typeof ListConversationsQuery>;
export type UpdateConversationRequestT = z.infer<typeof UpdateConversationRequest>;
export type SendMessageRequestT = z.infer<typeof SendMessageRequest>;
export type CreateCompletionRequestT = z.infer<typeof CreateCompletionRequest>;
export type DataSpecT = z.infer<typeof DataSpec>;

// ---------------------------------------------------------------------------------------------
// Reading layer: what a client can use from any implementation
// ---------------------------------------------------------------------------------------------
//
// A client (the CLI) reads answers with these, so that it works with every implementation: the
// interface's defaults applied (§2.3), a field it marks "or null" also accepted when absent, output
// items of a type it does not list kept as they are, and only what a client needs to show an answer
// required. Whether an answer matches the interface is still judged by the `spec` schemas above
// (with defaults: ResponseWithDefaults); a client reports a mismatch as a warning. Nothing here is
// used to validate requests.

const nullish = <T extends z.ZodType>(t: T) => t.nullable().optional();
const KNOWN_OUTPUT_TYPES: ReadonlySet<string> = new Set(['message', 'function_call', 'data_spec']);

/** §2.4 read leniently: the known types with their fields optional, and any other `type` as it is. */
export const LenientOutputItem = z.union([
  z.looseObject({ type: z.literal('message'), role: nullish(z.string()), content: nullish(z.array(z.looseObject({ type: z.string().optional(), text: z.unknown().optional() }))) }),
  z.looseObject({ type: z.literal('function_call'), name: nullish(z.string()), arguments: nullish(z.string()), call_id: nullish(z.string()) }),
  z.looseObject({ type: z.literal('data_spec'), data: z.unknown().optional() }),
  z.looseObject({ type: z.string().refine((t) => !KNOWN_OUTPUT_TYPES.has(t), 'a known item type with fields of the wrong type') }),
]);

/** §2.3 with its defaults; `status` any string (a client shows what it got). */
export const LenientResponse = z.looseObject({
  id: z.string().min(1),
  object: z.string().default('response'),
  created_at: z.number().optional(),
  conversation_id: z.string().optional(),
  output: z.array(LenientOutputItem).default([]),
  status: z.string().default('completed'),
  error: nullish(z.looseObject({ type: z.string().optional(), message: z.string().optional(), code: nullish(z.string()) })),
});

/** §2.5: a completion is usable with an id and its text. */
export const LenientCompletion = z.looseObject({
  id: z.string().min(1),
  object: z.string().default('completion'),
  text: z.string(),
  status: z.string().default('completed'),
  error: LenientResponse.shape.error,
});

/** §2.1: only the id is needed; `generated_title` missing reads as none. */
export const LenientConversation = z.looseObject({
  id: z.string().min(1),
  created_at: z.number().optional(),
  object: z.string().optional(),
  external_user_id: nullish(z.string()),
  title: nullish(z.string()),
  generated_title: nullish(z.record(z.string(), z.string())),
  metadata: nullish(z.record(z.string(), z.unknown())),
});

/** §4.3: `items` missing reads as no history; their fields are "not shown". */
export const LenientConversationWithItems = LenientConversation.extend({ items: z.array(z.looseObject({})).default([]) });

/** §2.6: a missing `has_more` reads as false, so that a client walking the cursors stops. */
export const LenientConversationList = z.looseObject({
  object: z.string().optional(),
  data: z.array(LenientConversation),
  first_id: nullish(z.string()),
  last_id: nullish(z.string()),
  has_more: z.boolean().default(false),
});

/** §2.7: anything but an explicit `deleted: false`. */
export const LenientDeletionResult = z.looseObject({ id: z.string().optional(), object: z.string().optional(), deleted: z.literal(true).optional() });

/** §2.8, §2.9: shown field by field, whatever is there. */
export const LenientAppConfig = z.looseObject({
  app_id: z.string().optional(),
  stream: z.boolean().optional(),
  generative_ui: z.boolean().optional(),
  agent: z.looseObject({ name: z.string().optional(), config: z.looseObject({}).optional() }).optional(),
});
export const LenientAppMetrics = z.looseObject({});

/** §6 payloads with only what a client needs to show the event. */
export const LenientEventPayload = {
  'response.created': z.looseObject({ id: z.string().min(1), object: z.string().optional() }),
  'response.output_text.delta': z.looseObject({ delta: z.string(), output_index: z.number().default(0) }),
  'response.output_text.done': z.looseObject({ text: z.string(), output_index: z.number().default(0) }),
  'response.function_call.start': z.looseObject({}),
  'response.function_call_arguments.delta': z.looseObject({}),
  'response.function_call_arguments.done': z.looseObject({}),
  'response.data_spec': z.looseObject({}),
  'response.completed': z.looseObject({ id: z.string().optional() }),
  'response.failed': z.looseObject({}),
} satisfies Record<EventType, z.ZodType>;
