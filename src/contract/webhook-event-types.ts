// D-83: every webhook event type, in the order the docs list them. A module of its own, importing
// nothing, so that the dashboard's bundle takes the same list as the contract without zod.
export const WEBHOOK_EVENT_TYPES = [
  'conversation.created',
  'conversation.updated',
  'conversation.deleted',
  'conversation.restored',
  'response.completed',
  'response.failed',
  'completion.completed',
  'completion.failed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
