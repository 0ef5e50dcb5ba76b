// Resources (§2), in two layers, each field described once:
// - the `spec` schemas hold exactly what the interface states, loose about extensions and about what
//   it leaves "not shown"; the conformance suite's `spec` profile judges other implementations by them;
// - the `Reference…` schemas extend them with the D-n decisions: the server produces them, the CLI
//   relies on them and the conformance `reference` profile checks them.
import { z } from 'zod';
import { ID_PREFIX } from './limits.ts';

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
const itemBase = {
  id: z.string().min(1),
  created_at: unixSeconds,
  response_id: z.string().optional(),
  /** D-39 (revises D-14): an item of a response that failed (cancelled, cut, interrupted) is `incomplete`; absent otherwise. */
  status: z.literal('incomplete').optional(),
};
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
export type DataSpecT = z.infer<typeof DataSpec>;
