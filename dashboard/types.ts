// The admin surface's answers as the dashboard reads them: the contract's own types (src/contract/),
// imported as types only, so that no field is described twice and no zod reaches the bundle.
import type { z } from 'zod';
import type {
  AccessToken as AccessTokenSchema,
  AdminApp as AdminAppSchema,
  AdminMember,
  AdminMemberAdded,
  AdminSession,
  ApiKey as ApiKeySchema,
  ApiKeyCreated as ApiKeyCreatedSchema,
  AuditEntry as AuditEntrySchema,
  CreditBalance,
  listOf,
  UsageDay as UsageDaySchema,
  UsageReport as UsageReportSchema,
} from '../src/contract/admin.ts';
import type { AdminConversation, AdminConversationDetail } from '../src/contract/admin-conversations.ts';
import type { WebhookAttemptView, WebhookDeliveryView, WebhookEndpointView, WebhookEventView } from '../src/contract/admin-webhooks.ts';
import type { Item as ItemSchema } from '../src/contract/resources.ts';

/** An admin list (§4.2, D-75) of `T`. */
export type List<T> = Omit<z.infer<ReturnType<typeof listOf>>, 'data'> & { data: T[] };
export type Session = z.infer<typeof AdminSession>;
export type Member = z.infer<typeof AdminMember>;
export type MemberAdded = z.infer<typeof AdminMemberAdded>;
export type AdminApp = z.infer<typeof AdminAppSchema>;
export type AccessToken = z.infer<typeof AccessTokenSchema>;
export type ApiKey = z.infer<typeof ApiKeySchema>;
export type ApiKeyCreated = z.infer<typeof ApiKeyCreatedSchema>;
export type Conversation = z.infer<typeof AdminConversation>;
export type ConversationDetail = z.infer<typeof AdminConversationDetail>;
export type Item = z.infer<typeof ItemSchema>;
export type AuditEntry = z.infer<typeof AuditEntrySchema>;
export type UsageDay = z.infer<typeof UsageDaySchema>;
export type UsageReport = z.infer<typeof UsageReportSchema>;
export type Balance = z.infer<typeof CreditBalance>;
export type WebhookEndpoint = z.infer<typeof WebhookEndpointView>;
export type WebhookAttempt = z.infer<typeof WebhookAttemptView>;
export type WebhookDelivery = z.infer<typeof WebhookDeliveryView>;
export type WebhookEvent = z.infer<typeof WebhookEventView>;
