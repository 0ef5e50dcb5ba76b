// The admin surface's own OpenAPI document (docs/control-plane.md, D-65), served at
// `GET /admin/v1/openapi.json`: one operation per route of `/admin/v1`, every schema from the zod
// contract (admin.ts) through z.toJSONSchema. `/openapi.json` stays the data plane's (`servers: /v1`),
// which generated clients use. test/admin-openapi.test.ts checks it against the router's routes.
import { z } from 'zod';
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
  AuditQuery,
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
} from './admin.ts';
import { ReferenceErrorBody } from './errors.ts';
import { INTERFACE_VERSION } from './limits.ts';

type Json = Record<string, unknown>;

export const ADMIN_OPENAPI_PATH = '/admin/v1/openapi.json';

/** The resources and requests of the document, by component id. */
const RESPONSES = {
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
  Error: ReferenceErrorBody,
} as const;
const REQUESTS = {
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
} as const;

type Status = '400' | '401' | '403' | '404' | '409' | '429';

/** What each error status means on this surface (D-65; every error in §7's shape). */
const STATUSES: Record<Status, string> = {
  '400': 'D-1: a malformed or invalid request; `param` names the field.',
  '401': 'D-65: no, an unknown, expired or revoked session or access token (`invalid_admin_credential`); an API key is refused here.',
  '403':
    'D-65, D-67: a viewer asked for a change (`admin_role_required`), or a cookie-authenticated write came without its `X-CSRF-Token` (`csrf_failed`).',
  '404': "No such resource in the caller's team (another team's id too).",
  '409': 'D-72: the email is taken (`email_taken`), or the change would leave the team without an admin (`last_admin`).',
  '429': 'D-69: too many failed sign-ins from this address (`sign_in_throttled`); `Retry-After` says when to try again.',
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
  /** No credential: signing in, setting a password with an invitation. */
  open?: boolean;
  /** Only an admin may (a viewer's is 403). */
  adminOnly?: boolean;
  extra?: Status[];
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
    extra: ['429'],
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
    extra: ['429'],
  },
];

const ref = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });

function schemasOf(named: Record<string, z.ZodType>, io: 'input' | 'output'): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(named)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io,
    uri: (id) => `#/components/schemas/${id}`,
    unrepresentable: 'any',
  });
  return Object.fromEntries(
    Object.entries(schemas).map(([id, s]) => {
      const { $schema: _s, $id: _i, ...rest } = s as Json;
      return [id, rest];
    }),
  );
}

function queryParameters(q: z.ZodObject): Json[] {
  return Object.entries(q.shape).map(([name, schema]) => {
    const { $schema: _s, ...js } = z.toJSONSchema(schema as z.ZodType, { io: 'input', unrepresentable: 'any' }) as Json;
    return { name, in: 'query', required: false, schema: js };
  });
}

function operationObject(op: AdminOperation): Json {
  const params = [...op.pattern.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  const statuses = new Set<Status>(op.extra);
  if (op.body || op.query) statuses.add('400');
  if (!op.open) statuses.add('401');
  if (op.adminOnly || (!op.open && op.method !== 'get')) statuses.add('403');
  if (params.length > 0) statuses.add('404');
  const responses: Json = { '200': { description: 'Success.', content: { 'application/json': { schema: ref(op.ok) } } } };
  for (const s of [...statuses].sort()) responses[s] = { $ref: `#/components/responses/Error${s}` };
  const parameters: Json[] = [
    ...params.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string', minLength: 1 } })),
    ...(op.query ? queryParameters(op.query) : []),
  ];
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(op.open ? { security: [] } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body ? { requestBody: { required: true, content: { 'application/json': { schema: ref(op.body) } } } } : {}),
    responses,
  };
}

/** The document; `/openapi.json`'s conventions (OpenAPI 3.2, JSON Schema 2020-12). */
export function buildAdminOpenApiDocument(): Json {
  const paths: Record<string, Json> = {};
  for (const op of ADMIN_OPERATIONS) {
    const item = (paths[op.pattern.replace(/:(\w+)/g, '{$1}')] ??= {});
    item[op.method] = operationObject(op);
  }
  paths['/openapi.json'] = {
    get: {
      operationId: 'getAdminOpenApiDocument',
      summary: 'This document',
      security: [],
      responses: { '200': { description: 'The document.', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  };
  const responses: Json = {};
  for (const [s, description] of Object.entries(STATUSES))
    responses[`Error${s}`] = {
      description,
      ...(s === '429' ? { headers: { 'Retry-After': { schema: { type: 'string', pattern: '^[0-9]+$' } } } } : {}),
      content: { 'application/json': { schema: ref('Error') } },
    };
  return {
    openapi: '3.2.0',
    info: {
      title: 'Parley admin surface: the control plane',
      version: INTERFACE_VERSION,
      description:
        "A team's members, personal access tokens, API keys, apps and audit log (docs/control-plane.md, D-65…D-79). Never an API key; " +
        'a known path with a method it does not have answers 405 with `Allow` (D-3). Cookie-authenticated writes carry `X-CSRF-Token` (D-67).',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: '/admin/v1', description: 'D-65: a path space of its own beside /v1 and /widget/v1.' }],
    security: [{ accessToken: [] }, { session: [] }],
    paths,
    components: {
      schemas: { ...schemasOf(RESPONSES, 'output'), ...schemasOf(REQUESTS, 'input') },
      responses,
      securitySchemes: {
        accessToken: { type: 'http', scheme: 'bearer', description: 'D-68: a personal access token `pat_…` (never an API key).' },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'parley_session',
          description: 'D-67: the session cookie of a sign-in; writes also carry `X-CSRF-Token`.',
        },
      },
    },
  };
}

let cached: Json | undefined;
/** The document as served (it depends on nothing but the contract). */
export function adminOpenApiDocument(): Json {
  return (cached ??= buildAdminOpenApiDocument());
}
