// The reading layer: what a client can use from any implementation.
//
// A client (the CLI) reads answers with these, so that it works with every implementation: the
// interface's defaults applied (§2.3), a field it marks "or null" also accepted when absent, output
// items of a type it does not list kept as they are, and only what a client needs to show an answer
// required. Whether an answer matches the interface is still judged by the `spec` schemas of
// resources.ts (with defaults: ResponseWithDefaults); a client reports a mismatch as a warning. Nothing
// here is used to validate requests.
//
// A schema is derived from its strict one where reading leniently only makes every field optional
// (a function call); it is restated where a client accepts more than the interface's types (any string
// where the interface fixes a literal, any number where it says a non-negative integer).
import { z } from 'zod';
import type { StreamEventType } from './events.ts';
import { FunctionCallOutputItem } from './resources.ts';

const nullish = <T extends z.ZodType>(t: T) => t.nullable().optional();
const KNOWN_OUTPUT_TYPES: ReadonlySet<string> = new Set(['message', 'function_call', 'data_spec']);

/** §2.4 read leniently: the known types with their fields optional, and any other `type` as it is. */
export const LenientOutputItem = z.union([
  z.looseObject({
    type: z.literal('message'),
    role: nullish(z.string()),
    content: nullish(z.array(z.looseObject({ type: z.string().optional(), text: z.unknown().optional() }))),
  }),
  FunctionCallOutputItem.partial().required({ type: true }),
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
export const LenientDeletionResult = z.looseObject({
  id: z.string().optional(),
  object: z.string().optional(),
  deleted: z.literal(true).optional(),
});

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
} satisfies Record<StreamEventType, z.ZodType>;
