// A webhook endpoint as the control document keeps it (docs/webhooks.md, D-81), and the event types
// Parley sends (D-83). Kept in core: the document (control.ts), the services and the CLI read them.
import { z } from 'zod';

export { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../contract/webhook-event-types.ts';

/**
 * D-81: why an endpoint is disabled: by a member, by a 410 answer, after failing too long, or (D-150)
 * because the key it is signed with was revoked or expired.
 */
export const DisabledReason = z.enum(['manual', 'gone', 'failing', 'signing_key']);

export const WebhookEndpoint = z.object({
  id: z.string().min(1),
  team_id: z.string().min(1),
  app_id: z.string().min(1),
  url: z.string().min(1),
  /** The types it wants; `*` for every type. */
  events: z.array(z.string()).min(1),
  description: z.string().default(''),
  enabled: z.boolean().default(true),
  disabled_reason: DisabledReason.nullable().default(null),
  /** D-150: the secret key whose secret signs its deliveries; null only until a store assigns one at open. */
  signing_key_id: z.string().nullable().default(null),
  created_at: z.number().int().nonnegative(),
  updated_at: z.number().int().nonnegative(),
});
export type WebhookEndpointT = z.infer<typeof WebhookEndpoint>;

/** Whether `endpoint` wants events of `type`. */
export function wants(endpoint: Pick<WebhookEndpointT, 'events'>, type: string): boolean {
  return endpoint.events.includes('*') || endpoint.events.includes(type);
}
