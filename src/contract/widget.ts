// The widget API's schemas and limits (docs/widget.md, D-45…D-59): what a widget sends, what it gets back.
import { z } from 'zod';
import { CreateConversationRequest, MessageInput } from './index.ts';

export const WIDGET_LIMITS = {
  /** D-49: a visitor token lives an hour… */
  tokenSeconds: 3600,
  /** …and may be renewed (the same anonymous visitor) up to 30 days after it expired. */
  renewalSeconds: 30 * 86_400,
  /** D-50: a signed identity is taken for 10 minutes after its `iat`… */
  identityMaxAgeSeconds: 600,
  /** …and up to a minute before it (clocks differ). */
  clockSkewSeconds: 60,
  /** D-50: the agent's metadata inside an identity (it travels in every visitor token). */
  identityMetadataBytes: 4096,
  /** A token or an identity as a string. */
  credentialChars: 8192,
} as const;

const credential = z.string().min(1).max(WIDGET_LIMITS.credentialChars);

/** D-48: POST /widget/v1/apps/{app_id}/visitors, with the publishable key. */
export const VisitorSessionRequest = z.strictObject({
  /** D-50: the host page's signed identity (an HS256 JWT). */
  identity: credential.optional(),
  /** D-49: the visitor's last token, to stay the same visitor (an anonymous one). */
  previous_token: credential.optional(),
});

/** D-48: the visitor session the widget keeps. */
export const VisitorSession = z.object({
  object: z.literal('visitor_session'),
  app_id: z.string(),
  visitor_id: z.string(),
  token: z.string(),
  expires_at: z.number().int(),
  external_user_id: z.string().nullable(),
});

/** D-51: a visitor names only the title; the user id and the agent's metadata come from the identity. */
export const WidgetConversationRequest = CreateConversationRequest.pick({ title: true });

/** D-51: send message from the widget: no metadata (it comes from the identity only); streams by default. */
export const WidgetMessageRequest = z.strictObject({
  message: MessageInput,
  stream: z.boolean().nullable().optional(),
});

export type VisitorSessionT = z.infer<typeof VisitorSession>;
