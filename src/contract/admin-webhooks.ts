// Webhooks on the admin surface (docs/webhooks.md, D-81…D-87): endpoints, events, deliveries and their
// attempts, described once for the server and the CLI.
import { z } from 'zod';
import { timeParam } from './admin.ts';
import { WEBHOOK_EVENT_TYPES } from './webhook-event-types.ts';

const unixSeconds = z.number().int().nonnegative();

/** D-83: the types an endpoint may ask for: any of WEBHOOK_EVENT_TYPES, or `*` for all. */
const EventTypeList = z
  .array(z.enum([...WEBHOOK_EVENT_TYPES, '*'], { error: `must be one of ${WEBHOOK_EVENT_TYPES.join(', ')} or *` }))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length + 1)
  .transform((a) => [...new Set(a)]);
const Url = z.string().trim().min(1).max(2048);
const Description = z.string().max(500);
/** D-150: the secret key whose secret signs an endpoint's deliveries. */
const SigningKeyId = z.string().min(1).max(200);

export const CreateWebhookEndpointRequest = z.strictObject({
  app_id: z.string().min(1).max(200),
  url: Url,
  events: EventTypeList,
  description: Description.optional(),
  /** D-150: default, the team's oldest working secret key. */
  signing_key_id: SigningKeyId.optional(),
});
export const UpdateWebhookEndpointRequest = z.strictObject({
  url: Url.optional(),
  events: EventTypeList.optional(),
  description: Description.optional(),
  enabled: z.boolean().optional(),
  signing_key_id: SigningKeyId.optional(),
});
export const DeliveriesQuery = z.strictObject({
  endpoint_id: z.string().max(200).optional(),
  event_id: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(100).optional(),
  /** D-156: only the deliveries that failed: ended `failed`, or waiting to retry after a failed attempt. */
  failed: z.enum(['true'], { error: 'must be true (leave it out for every delivery)' }).optional(),
  /** D-156: only events made at or after this time: Unix seconds or an ISO 8601 date/time. */
  since: timeParam.optional(),
});
export const RedeliverRequest = z.strictObject({ endpoint_id: z.string().max(200).optional() });
/** D-156: every delivery that ended `failed`, of events made at or after `since`, sent again. */
export const RedeliverFailedRequest = z.strictObject({
  /** Unix seconds. */
  since: unixSeconds,
  /** One endpoint's only; by default the team's. */
  endpoint_id: z.string().max(200).optional(),
});
/** D-129: the longest a test event may wait before it is sent. */
export const MAX_TEST_DELAY_S = 3600;
/** D-129: a synthetic test event of `type` for one endpoint, with the misbehaviours a receiver must survive. */
export const TestWebhookRequest = z.strictObject({
  type: z.enum(WEBHOOK_EVENT_TYPES, { error: `must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}` }),
  /** Sent twice, with one `webhook-id` (a receiver must de-duplicate). */
  duplicate: z.boolean().optional(),
  /** Two events about one resource, the later one delivered first. */
  out_of_order: z.boolean().optional(),
  /** Sent this many seconds from now. */
  delay_s: z.number().int().min(0).max(MAX_TEST_DELAY_S).optional(),
});
export const WebhookEndpointsQuery = z.strictObject({ app_id: z.string().max(200).optional() });
/** D-88: the live stream follows one app of the caller's team. */
export const WebhookListenQuery = z.strictObject({
  app_id: z.string().min(1).max(200),
  /** D-150: the key whose secret signs the stream's events, as an endpoint's; default as an endpoint's. */
  signing_key_id: SigningKeyId.optional(),
});

/**
 * D-150: an endpoint's signing key now: `active`; `rolled` (in a roll's grace: signed with its successor
 * too, which the endpoint should be moved to); `revoked`, `expired` or `missing` (nothing is sent: the
 * endpoint is disabled with `signing_key` until another key is named).
 */
export const SigningKeyState = z.enum(['active', 'rolled', 'revoked', 'expired', 'missing']);

export const WebhookEndpointView = z.object({
  id: z.string(),
  object: z.literal('webhook_endpoint'),
  app_id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string(),
  enabled: z.boolean(),
  /**
   * D-86: `manual`, `gone` (it answered 410) or `failing` (it failed longer than the limit); D-150:
   * `signing_key` (its signing key was revoked or expired: name another with `signing_key_id`).
   */
  disabled_reason: z.enum(['manual', 'gone', 'failing', 'signing_key']).nullable(),
  /** D-150: the secret key whose secret signs its deliveries (null: none could be assigned). */
  signing_key_id: z.string().nullable(),
  signing_key_state: SigningKeyState,
  created_at: unixSeconds,
  updated_at: unixSeconds,
});

/** D-87: one attempt of one delivery. */
export const WebhookAttemptView = z.object({
  id: z.string(),
  object: z.literal('webhook_attempt'),
  event_id: z.string(),
  endpoint_id: z.string(),
  created_at: unixSeconds,
  /** The HTTP status, or null when no answer came (refused, timed out, address refused). */
  status: z.number().int().nullable(),
  duration_ms: z.number().int().nonnegative(),
  /** The first bytes of the answer's body. */
  response: z.string(),
  error: z.string().nullable(),
});

/** D-85: an event's delivery to one endpoint. */
export const WebhookDeliveryView = z.object({
  object: z.literal('webhook_delivery'),
  id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  endpoint_id: z.string(),
  state: z.enum(['pending', 'succeeded', 'failed', 'skipped']),
  attempts: z.number().int().nonnegative(),
  next_attempt_at: unixSeconds.nullable(),
  created_at: unixSeconds,
  last_attempt: WebhookAttemptView.nullable(),
  /** Every attempt of the delivery, newest first. */
  attempt_log: z.array(WebhookAttemptView),
});

/** D-83: an event, as sent to endpoints (`GET /events/:id`). */
export const WebhookEventView = z.object({
  id: z.string(),
  object: z.literal('event'),
  type: z.enum(WEBHOOK_EVENT_TYPES),
  created_at: unixSeconds,
  app_id: z.string(),
  /** The resource as the API shows it; over 20,480 bytes, only `{id, object, url}`. */
  data: z.looseObject({ id: z.string(), object: z.string() }),
  /** D-129: present (true) only on a test event, whose `data` is made up. */
  test: z.literal(true).optional(),
});

/** D-129: the test events made for an endpoint, in the order they were made. */
export const WebhookTestView = z.object({
  object: z.literal('webhook_test'),
  endpoint_id: z.string(),
  type: z.enum(WEBHOOK_EVENT_TYPES),
  event_ids: z.array(z.string()),
  /** How many times each is sent when answered 2xx (2 with `duplicate`). */
  sends: z.number().int().positive(),
  /** When they are due, Unix seconds. */
  due_at: unixSeconds,
});

/** D-87: what `POST /events/:id/redeliver` put back to pending. */
export const WebhookRedeliveryView = z.object({
  object: z.literal('webhook_redelivery'),
  event_id: z.string(),
  endpoints: z.array(z.string()),
  deliveries: z.number().int().nonnegative(),
});

/** D-156: what one call of "redeliver every failed since …" sent again; `has_more`: call again for the rest. */
export const WebhookRedeliveryBatch = z.object({
  object: z.literal('webhook_redelivery_batch'),
  events: z.number().int().nonnegative(),
  deliveries: z.number().int().nonnegative(),
  has_more: z.boolean(),
});

/** D-88: the live stream's first event: it follows the app from now on. */
export const WebhookListening = z.object({ app_id: z.string() });
/** D-88: an event of the stream, signed as a delivery would be; `body` is the event's JSON, as sent. */
export const WebhookStreamEvent = z.object({
  event_id: z.string(),
  event_type: z.enum(WEBHOOK_EVENT_TYPES),
  headers: z.record(z.string(), z.string()),
  body: z.string(),
});
