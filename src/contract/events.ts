// Events (§6) as the interface states them and as the reference server sends them (D-16).
import { z } from 'zod';
import { DataSpec, ResponseError, Usage } from './resources.ts';

export const STREAM_EVENT_TYPES = [
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
export type StreamEventType = (typeof STREAM_EVENT_TYPES)[number];

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
} satisfies Record<StreamEventType, z.ZodType>;

/** D-16: what the reference adds to each payload. */
const sequenced = <T extends StreamEventType>(type: T) => ({ type: z.literal(type), sequence_number: z.number().int().nonnegative() });

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
} satisfies Record<StreamEventType, z.ZodType>;

export type EventPayload<T extends StreamEventType> = z.infer<(typeof ReferenceEventPayload)[T]>;
/** One SSE event as the reference server emits it: `event: <type>` then `data: <payload>`. */
export type StreamEvent = { [T in StreamEventType]: { event: T; data: EventPayload<T> } }[StreamEventType];
/** An event before the writer stamps `type` and `sequence_number` on it. */
export type UnsequencedEvent = {
  [T in StreamEventType]: { event: T; data: Unsequenced<EventPayload<T>> };
}[StreamEventType];
/** `Omit` would keep only the index signature of a loose object; this keeps its named fields too. */
type Unsequenced<P> = { [K in keyof P as K extends 'type' | 'sequence_number' ? never : K]: P[K] };
