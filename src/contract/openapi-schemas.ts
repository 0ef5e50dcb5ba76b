// The schemas of the published contract (openapi.ts): every named schema comes from z.toJSONSchema of
// the zod contract, and §6's events are described twice over, as generators and validators read them:
// - each event's payload is a named schema (`ResponseOutputTextDeltaEvent`, …), and `ResponseStreamEvent`
//   is their union by `type` (D-16: a payload's `type` is its event's name), so that a generated client
//   types a parsed `data:` line;
// - an event stream's `itemSchema` (OpenAPI 3.2) gives each SSE event, `event` and `data` required,
//   its `data` the JSON text of that event's payload.
import { z } from 'zod';
import {
  AppConfig,
  AppMetrics,
  CreateCompletionRequest,
  CreateConversationRequest,
  DeletionResult,
  STREAM_EVENT_TYPES,
  Item,
  LIMITS,
  LiveResponse,
  Metadata,
  OutputItem,
  ReferenceCompletion,
  ReferenceConversation,
  ReferenceConversationList,
  ReferenceConversationWithItems,
  ReferenceErrorBody,
  ReferenceEventPayload,
  ReferenceResponse,
  ResponseError,
  SendMessageRequest,
  UpdateConversationRequest,
  Usage,
  type StreamEventType,
} from './index.ts';
import { TestRun } from './scenarios.ts';

type Json = Record<string, unknown>;

export const schemaRef = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });

/** `response.output_text.delta` → `ResponseOutputTextDeltaEvent`. */
export function eventSchemaId(type: StreamEventType): string {
  return `${type
    .split(/[._]/)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('')}Event`;
}

/** The union of every event's payload, discriminated by `type`. */
export const STREAM_EVENT_SCHEMA = 'ResponseStreamEvent';

/** The request bodies of the document, by component id: a route row names its schema, the document this id (D-118). */
export const REQUESTS = { CreateConversationRequest, UpdateConversationRequest, SendMessageRequest, CreateCompletionRequest } as const;

/** A request body a route row of the REST API may name: one the document describes. */
export type RequestSchema = (typeof REQUESTS)[keyof typeof REQUESTS];

/**
 * The component id `named` (a document's request bodies) gives `schema`, the body a route row names: the
 * row says the schema once, and its document derives the id (D-118).
 */
export function componentIdOf(named: Readonly<Record<string, z.ZodType>>, schema: z.ZodType): string {
  const ids = Object.keys(named).filter((id) => named[id] === schema);
  if (ids.length !== 1) throw new Error(`a route's body is ${ids.length === 0 ? 'not a named schema' : `named ${ids.join(', ')}`}`);
  return ids[0]!;
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
    ['TestRun', TestRun],
    ['Error', ReferenceErrorBody],
    ...Object.entries(REQUESTS),
  ]);
  for (const type of STREAM_EVENT_TYPES) named.set(eventSchemaId(type), ReferenceEventPayload[type]);
  return named;
}

/** The document's `components.schemas`. */
export function componentSchemas(): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of namedSchemas()) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io: 'output',
    uri: (id) => `#/components/schemas/${id}`,
    unrepresentable: 'any',
    override: ({ zodSchema, jsonSchema }) => {
      const js = jsonSchema as Json;
      // D-9: a refinement zod cannot express; its size rule is stated in words. Any member is allowed
      // (a bare `type: object` reads as "no members" to some generators).
      if (zodSchema === Metadata) {
        js.type = 'object';
        js.additionalProperties = true;
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
  out[STREAM_EVENT_SCHEMA] = {
    description: "D-16: the payload of any §6 event (an SSE event's `data`); its `type` is the event's name.",
    oneOf: STREAM_EVENT_TYPES.map((type) => schemaRef(eventSchemaId(type))),
    discriminator: {
      propertyName: 'type',
      mapping: Object.fromEntries(STREAM_EVENT_TYPES.map((type) => [type, `#/components/schemas/${eventSchemaId(type)}`])),
    },
  };
  return out;
}

/**
 * §6 with OpenAPI 3.2's itemSchema: one SSE event per item, named by `event`, its `data` the JSON text
 * of that event's payload. `id` is the sequence number on a resumed stream (D-32).
 */
export function eventStream(): Json {
  return {
    itemSchema: {
      type: 'object',
      required: ['event', 'data'],
      properties: {
        event: { type: 'string', enum: [...STREAM_EVENT_TYPES] },
        data: { type: 'string', contentMediaType: 'application/json', contentSchema: schemaRef(STREAM_EVENT_SCHEMA) },
        id: { type: 'string' },
        retry: { type: 'integer' },
      },
      oneOf: STREAM_EVENT_TYPES.map((type) => ({
        type: 'object',
        required: ['event', 'data'],
        properties: {
          event: { const: type },
          data: { type: 'string', contentMediaType: 'application/json', contentSchema: schemaRef(eventSchemaId(type)) },
        },
      })),
    },
  };
}
