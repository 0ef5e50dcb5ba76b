// The operations of the admin surface (docs/control-plane.md, D-65): one row per route of /admin/v1,
// with the contract's schemas of its body and answer, from which admin-openapi.ts builds
// `/admin/v1/openapi.json`. A route added to /admin/v1 adds its row here (test/admin-openapi.test.ts).
import type { z } from 'zod';
import {
  AccessToken,
  AccessTokenCreated,
  AddMemberRequest,
  AdminConversationsQuery,
  AdminApp,
  AdminDeletion,
  AdminMember,
  AdminMemberAdded,
  AdminSession,
  AdminTeam,
  ApiKey,
  ApiKeyCreated,
  AuditEntry,
  AuditQuery,
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
  UsageQuery,
  UsageReport,
} from './admin.ts';
import { AdminConversation, AdminConversationDetail } from './admin-conversations.ts';
import { WEBHOOK_OPERATIONS, WEBHOOK_REQUESTS, WEBHOOK_RESPONSES } from './admin-webhook-operations.ts';
import { ReferenceErrorBody } from './errors.ts';

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
  ...WEBHOOK_RESPONSES,
  Error: ReferenceErrorBody,
} as const;
export const REQUESTS = {
  SignInRequest,
  ChangePasswordRequest,
  SetPasswordRequest,
  CreateAccessTokenRequest,
  CreateKeyRequest,
  RollKeyRequest,
  CreateAppRequest,
  UpdateAppRequest,
  AddMemberRequest,
  UpdateMemberRequest,
  ...WEBHOOK_REQUESTS,
} as const;

export type Status = '400' | '401' | '403' | '404' | '409' | '429' | '503';

/** What each error status means on this surface (D-65; every error in §7's shape). */
export const STATUSES: Record<Status, string> = {
  '400': 'D-1: a malformed or invalid request; `param` names the field.',
  '401': 'D-65: no, an unknown, expired or revoked session or access token (`invalid_admin_credential`); an API key is refused here.',
  '403':
    'D-65, D-67: a viewer asked for a change (`admin_role_required`), or a cookie-authenticated write came without its `X-CSRF-Token` (`csrf_failed`).',
  '404': "No such resource in the caller's team (another team's id too).",
  '409':
    'D-72: the email is taken (`email_taken`), or the change would leave the team without an admin (`last_admin`); D-73: the conversation is not deleted, or its history was purged (`conversation_not_restorable`).',
  '429':
    'D-69, D-165: too many failed sign-ins from this address, or wrong current passwords from this session or for this member (`sign_in_throttled`); `Retry-After` says when to try again.',
  '503': 'D-166: too many passwords are being checked at once (`sign_in_busy`); nothing was checked or changed: retry after `Retry-After`.',
};

export interface AdminOperation {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** As the router writes it, below /admin/v1 (`:name` segments). */
  pattern: string;
  operationId: string;
  summary: string;
  body?: keyof typeof REQUESTS;
  query?: z.ZodObject;
  ok: keyof typeof RESPONSES;
  /** An event stream rather than JSON: each SSE event's name and the schema of its `data`. */
  stream?: Record<string, keyof typeof RESPONSES>;
  /** No credential: signing in, setting a password with an invitation. */
  open?: boolean;
  /** Only an admin may (a viewer's is 403). */
  adminOnly?: boolean;
  extra?: readonly Status[];
}

/** Every route of /admin/v1, in the router's order. */
export const ADMIN_OPERATIONS: AdminOperation[] = [
  {
    method: 'post',
    pattern: '/sessions',
    operationId: 'signIn',
    summary: 'D-67 Sign in: sets the session cookie',
    body: 'SignInRequest',
    ok: 'Session',
    open: true,
    extra: ['429', '503'],
  },
  {
    method: 'get',
    pattern: '/session',
    operationId: 'getSession',
    summary: 'D-67 The signed-in session and its CSRF token',
    ok: 'Session',
  },
  { method: 'delete', pattern: '/sessions/current', operationId: 'signOut', summary: 'D-67 Sign out', ok: 'Deletion' },
  {
    method: 'get',
    pattern: '/tokens',
    operationId: 'listAccessTokens',
    summary: "D-68 The caller's personal access tokens",
    ok: 'AccessTokenList',
  },
  {
    method: 'post',
    pattern: '/tokens',
    operationId: 'createAccessToken',
    summary: 'D-68 A new personal access token, shown once',
    body: 'CreateAccessTokenRequest',
    ok: 'AccessTokenCreated',
  },
  {
    method: 'delete',
    pattern: '/tokens/:token_id',
    operationId: 'revokeAccessToken',
    summary: 'D-68 Revoke a personal access token',
    ok: 'Deletion',
  },
  {
    method: 'get',
    pattern: '/keys',
    operationId: 'listKeys',
    summary: "D-70 The team's API keys, redacted, with their last use",
    ok: 'ApiKeyList',
  },
  {
    method: 'post',
    pattern: '/keys',
    operationId: 'createKey',
    summary: 'D-70 A new API key, shown once',
    body: 'CreateKeyRequest',
    ok: 'ApiKeyCreated',
    adminOnly: true,
  },
  {
    method: 'post',
    pattern: '/keys/:key_id/roll',
    operationId: 'rollKey',
    summary: 'D-70 A new key at once; the old one until its grace ends',
    body: 'RollKeyRequest',
    ok: 'ApiKeyCreated',
    adminOnly: true,
  },
  {
    method: 'post',
    pattern: '/keys/:key_id/revoke',
    operationId: 'revokeKey',
    summary: 'D-70 Revoke a key: refused at once',
    ok: 'ApiKey',
    adminOnly: true,
  },
  {
    method: 'get',
    pattern: '/audit',
    operationId: 'listAuditEntries',
    summary: "D-75 The team's audit log, newest first",
    query: AuditQuery,
    ok: 'AuditEntryList',
  },
  {
    method: 'get',
    pattern: '/credits',
    operationId: 'getCredits',
    summary: "D-74 The team's credit balance this month",
    ok: 'CreditBalance',
  },
  {
    method: 'get',
    pattern: '/usage',
    operationId: 'getUsage',
    summary: 'D-74 Usage and credits per app per UTC day, with the balance',
    query: UsageQuery,
    ok: 'UsageReport',
    extra: ['404'],
  },
  { method: 'get', pattern: '/apps', operationId: 'listApps', summary: "D-71 The team's apps", ok: 'AppList' },
  {
    method: 'post',
    pattern: '/apps',
    operationId: 'createApp',
    summary: 'D-71 A new app',
    body: 'CreateAppRequest',
    ok: 'App',
    adminOnly: true,
  },
  { method: 'get', pattern: '/apps/:app_id', operationId: 'getApp', summary: 'D-71 An app', ok: 'App' },
  {
    method: 'patch',
    pattern: '/apps/:app_id',
    operationId: 'updateApp',
    summary: 'D-71 Change an app: served by the next request',
    body: 'UpdateAppRequest',
    ok: 'App',
    adminOnly: true,
  },
  {
    method: 'get',
    pattern: '/apps/:app_id/conversations',
    operationId: 'listAppConversations',
    summary: "D-73 An app's conversations, deleted ones as asked, with their message counts",
    query: AdminConversationsQuery,
    ok: 'ConversationList',
  },
  {
    method: 'get',
    pattern: '/apps/:app_id/conversations/:conversation_id',
    operationId: 'getAppConversation',
    summary: 'D-73 A conversation, deleted or not, with its full history and responses',
    ok: 'ConversationDetail',
  },
  {
    method: 'post',
    pattern: '/apps/:app_id/conversations/:conversation_id/restore',
    operationId: 'restoreConversation',
    summary: 'D-73 Restore a deleted conversation whose history is kept',
    ok: 'ConversationDetail',
    adminOnly: true,
    extra: ['409'],
  },
  { method: 'get', pattern: '/members', operationId: 'listMembers', summary: "D-72 The team's members", ok: 'MemberList' },
  {
    method: 'post',
    pattern: '/members',
    operationId: 'addMember',
    summary: 'D-72 Add a member, with a password or a one-time set-password link',
    body: 'AddMemberRequest',
    ok: 'MemberAdded',
    adminOnly: true,
    extra: ['409'],
  },
  {
    method: 'patch',
    pattern: '/members/:member_id',
    operationId: 'updateMember',
    summary: "D-72 Change a member's role",
    body: 'UpdateMemberRequest',
    ok: 'Member',
    adminOnly: true,
    extra: ['409'],
  },
  {
    method: 'delete',
    pattern: '/members/:member_id',
    operationId: 'removeMember',
    summary: 'D-72 Remove a member; their sessions and tokens end',
    ok: 'Deletion',
    adminOnly: true,
    extra: ['409'],
  },
  {
    method: 'post',
    pattern: '/members/:member_id/invite',
    operationId: 'reinviteMember',
    summary: 'D-72 A new set-password link for a member without a password',
    ok: 'MemberAdded',
    adminOnly: true,
  },
  {
    method: 'post',
    pattern: '/invites/accept',
    operationId: 'acceptInvite',
    summary: 'D-72 Set a password with the one-time token of an invitation',
    body: 'SetPasswordRequest',
    ok: 'Member',
    open: true,
  },
  {
    method: 'post',
    pattern: '/password',
    operationId: 'changePassword',
    summary: "D-67 Change the caller's password; their other sessions end",
    body: 'ChangePasswordRequest',
    ok: 'Member',
    extra: ['429', '503'],
  },
  ...WEBHOOK_OPERATIONS,
];
