// The named schemas of the admin surface's document (docs/control-plane.md, D-65, docs/webhooks.md):
// the component ids of the bodies a route row of /admin/v1 (src/api/admin/*.ts) reads and of its answers, the
// meaning of each error status, and what a row says of itself; admin-openapi.ts builds
// `/admin/v1/openapi.json` from the rows.
import type { z } from 'zod';
import {
  AccessToken,
  AccessTokenCreated,
  AddMemberRequest,
  AdminApp,
  AdminDeletion,
  AdminMember,
  AdminMemberAdded,
  AdminSession,
  AdminTeam,
  ApiKey,
  ApiKeyCreated,
  AuditEntry,
  CreditBalance,
  ChangePasswordRequest,
  CreateAccessTokenRequest,
  CreateAppRequest,
  CreateKeyRequest,
  listOf,
  RollKeyRequest,
  SetPasswordRequest,
  SignInRequest,
  UpdateAppRequest,
  UpdateMemberRequest,
  UsageReport,
} from './admin.ts';
import { AdminConversation, AdminConversationDetail } from './admin-conversations.ts';
import {
  CreateWebhookEndpointRequest,
  RedeliverFailedRequest,
  RedeliverRequest,
  TestWebhookRequest,
  UpdateWebhookEndpointRequest,
  WebhookDeliveryView,
  WebhookEndpointView,
  WebhookEventView,
  WebhookListening,
  WebhookRedeliveryBatch,
  WebhookRedeliveryView,
  WebhookStreamEvent,
  WebhookTestView,
} from './admin-webhooks.ts';
import { ReferenceErrorBody } from './errors.ts';
import { KeyScenario, SetKeyScenarioRequest } from './scenarios.ts';

/** The resources and requests of the document, by component id. */
export const RESPONSES = {
  Session: AdminSession,
  Team: AdminTeam,
  Member: AdminMember,
  MemberAdded: AdminMemberAdded,
  MemberList: listOf(AdminMember),
  AccessToken,
  AccessTokenCreated,
  AccessTokenList: listOf(AccessToken),
  ApiKey,
  ApiKeyCreated,
  ApiKeyList: listOf(ApiKey),
  KeyScenario,
  App: AdminApp,
  AppList: listOf(AdminApp),
  AuditEntry,
  AuditEntryList: listOf(AuditEntry),
  Deletion: AdminDeletion,
  Conversation: AdminConversation,
  ConversationList: listOf(AdminConversation),
  ConversationDetail: AdminConversationDetail,
  CreditBalance,
  UsageReport,
  WebhookEndpoint: WebhookEndpointView,
  WebhookEndpointList: listOf(WebhookEndpointView),
  WebhookEndpointDeletion: AdminDeletion,
  WebhookDeliveryList: listOf(WebhookDeliveryView),
  WebhookEvent: WebhookEventView,
  WebhookRedelivery: WebhookRedeliveryView,
  WebhookRedeliveryBatch,
  WebhookTest: WebhookTestView,
  WebhookListening,
  WebhookStreamEvent,
  Error: ReferenceErrorBody,
} as const;
export const REQUESTS = {
  SignInRequest,
  ChangePasswordRequest,
  SetPasswordRequest,
  CreateAccessTokenRequest,
  CreateKeyRequest,
  RollKeyRequest,
  SetKeyScenarioRequest,
  CreateAppRequest,
  UpdateAppRequest,
  AddMemberRequest,
  UpdateMemberRequest,
  CreateWebhookEndpointRequest,
  UpdateWebhookEndpointRequest,
  RedeliverRequest,
  RedeliverFailedRequest,
  TestWebhookRequest,
} as const;

/** A request body a route row of /admin/v1 may name: one the document describes (D-118). */
export type AdminRequestSchema = (typeof REQUESTS)[keyof typeof REQUESTS];

export type Status = '400' | '401' | '403' | '404' | '409' | '429' | '503';

/** What each error status means on this surface (D-65; every error in §7's shape). */
export const STATUSES: Record<Status, string> = {
  '400': 'D-1: a malformed or invalid request; `param` names the field.',
  '401': 'D-65: no, an unknown, expired or revoked session or access token (`invalid_admin_credential`); an API key is refused here.',
  '403':
    'D-65, D-67: a viewer asked for a change (`admin_role_required`), or a cookie-authenticated write came without its `X-CSRF-Token` (`csrf_failed`).',
  '404': "No such resource in the caller's team (another team's id too).",
  '409':
    "D-72, D-172: the email is taken in the team or by an account (`email_taken`), or the change would leave the team without an admin (`last_admin`); D-173: a cap of the team's records is reached, or (D-169) of an app's webhook endpoints, the message naming it (`limit_reached`); D-73: the conversation is not deleted, or its history was purged (`conversation_not_restorable`).",
  '429':
    'D-69, D-165: too many failed sign-ins from this address, or wrong current passwords from this session or for this member (`sign_in_throttled`); `Retry-After` says when to try again.',
  '503': 'D-166: too many passwords are being checked at once (`sign_in_busy`); nothing was checked or changed: retry after `Retry-After`.',
};

/** What a route row of /admin/v1 says of itself for the document, beside its method and pattern. */
export interface AdminOperation {
  operationId: string;
  summary: string;
  /** The request body's schema, which the route reads it with; the document names its component id (D-118). */
  body?: AdminRequestSchema;
  query?: z.ZodObject;
  ok: keyof typeof RESPONSES;
  /** An event stream rather than JSON: each SSE event's name and the schema of its `data`. */
  stream?: Record<string, keyof typeof RESPONSES>;
  /** No credential: signing in, setting a password with an invitation. */
  open?: boolean;
  /** D-65: a change of the team's resources: a viewer's is 403. */
  adminOnly?: boolean;
  /** Marked `deprecated` in the document: an alias kept for older clients (D-115). */
  deprecated?: boolean;
  /** Statuses its handler raises beyond those its traits and path give. */
  extra?: readonly Status[];
}
