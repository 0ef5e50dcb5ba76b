// The admin surface's routes (`/admin/v1`, docs/control-plane.md, D-65…D-70, D-75): sessions, personal
// access tokens, API keys and the audit log, each answering only its caller's team (another team's id
// is 404). Its stages are declared in src/api/surfaces.ts.
import { AuditQuery, CreateAccessTokenRequest, CreateKeyRequest, RollKeyRequest, SignInRequest } from '../contract/admin.ts';
import type { AdminCaller } from '../http/context.ts';
import { parseBody, parseQuery } from '../http/context.ts';
import { apiError } from '../http/errors.ts';
import type { RouteDef } from '../http/router.ts';
import { type AccountService, memberView } from '../services/admin/accounts.ts';
import type { AppAdminService } from '../services/admin/apps.ts';
import type { KeyService } from '../services/admin/keys.ts';
import type { MemberService } from '../services/admin/members.ts';
import { type ControlPlane, SESSION_MAX_AGE_MS } from '../store/control.ts';
import { type AdminRoute, listOf, originOf } from './admin-common.ts';
import { adminAppRoutes } from './admin-apps.ts';
import { adminMemberRoutes } from './admin-members.ts';
import type { CreditService } from '../services/credits.ts';
import { usageRoutes } from './admin-usage.ts';

export const ADMIN_BASE_PATH = '/admin/v1';
export { type AdminContext, type AdminRoute, listOf, originOf } from './admin-common.ts';

export interface AdminRouteOptions {
  control: ControlPlane;
  accounts: AccountService;
  keys: KeyService;
  /** D-71 */
  apps: AppAdminService;
  /** D-72 */
  members: MemberService;
  /** D-65: Parley's public address behind a proxy (links, and cookies' `Secure` when https); null: the request's own. */
  publicUrl: string | null;
  /** D-74: the team's usage and credits. */
  credits: CreditService;
  /** D-67: cookies are `Secure` when the public URL is https. */
  secureCookies: boolean;
}

function cookie(value: string, maxAgeS: number, secure: boolean): string {
  return `parley_session=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeS}${secure ? '; Secure' : ''}`;
}

/** D-67: sign in, the session, sign out. */
function sessionRoutes(o: AdminRouteOptions): RouteDef<AdminRoute>[] {
  const { control, accounts } = o;
  const sessionAnswer = async (c: AdminCaller, csrf: string, expiresAtMs: number) => {
    const member = control.read().members.find((m) => m.id === c.member_id)!;
    return {
      object: 'session',
      member: memberView(member),
      team: accounts.team(control.read(), c.team_id),
      csrf_token: csrf,
      expires_at: Math.floor(expiresAtMs / 1000),
    };
  };
  return [
    {
      method: 'POST',
      pattern: '/sessions',
      route: {
        open: true,
        handle: async (ctx) => {
          const body = await parseBody(ctx, SignInRequest);
          const { cookie: value, session, member } = await accounts.signIn(body.email, body.password, originOf(ctx));
          ctx.headers['set-cookie'] = cookie(value, SESSION_MAX_AGE_MS / 1000, o.secureCookies || 'encrypted' in ctx.req.socket);
          const caller = {
            member_id: member.id,
            team_id: member.team_id,
            email: member.email,
            role: member.role,
            session_id: session.id,
            token_id: null,
          };
          return sessionAnswer(caller, session.csrf_token, session.created_at + SESSION_MAX_AGE_MS);
        },
      },
    },
    {
      method: 'GET',
      pattern: '/session',
      route: {
        handle: async (ctx) => {
          const s = ctx.admin.session_id ? await accounts.csrfOf(ctx.admin.session_id) : undefined;
          if (!s) throw apiError('invalid_admin_credential', 'GET /session is for a signed-in session; a token has none.');
          return sessionAnswer(ctx.admin, s.csrf_token, s.created_at + SESSION_MAX_AGE_MS);
        },
      },
    },
    {
      method: 'DELETE',
      pattern: '/sessions/current',
      route: {
        handle: async (ctx) => {
          await accounts.signOut(ctx.admin, originOf(ctx));
          ctx.headers['set-cookie'] = cookie('', 0, o.secureCookies);
          return { object: 'session', deleted: true };
        },
      },
    },
  ];
}

export function adminRoutes(o: AdminRouteOptions): RouteDef<AdminRoute>[] {
  const { control, accounts, keys } = o;
  return [
    ...sessionRoutes(o),
    ...usageRoutes(o),
    {
      method: 'GET',
      pattern: '/tokens',
      route: { handle: async (ctx) => listOf(await accounts.listTokens(ctx.admin), false) },
    },
    {
      method: 'POST',
      pattern: '/tokens',
      route: {
        handle: async (ctx) => {
          const body = await parseBody(ctx, CreateAccessTokenRequest);
          return accounts.createToken(ctx.admin, body.name, body.expires_in_days ?? 90, originOf(ctx));
        },
      },
    },
    {
      method: 'DELETE',
      pattern: '/tokens/:token_id',
      route: {
        handle: async (ctx) => {
          await accounts.revokeToken(ctx.admin, ctx.params.token_id!, originOf(ctx));
          return { id: ctx.params.token_id, object: 'access_token', deleted: true };
        },
      },
    },
    { method: 'GET', pattern: '/keys', route: { handle: async (ctx) => listOf(await keys.list(ctx.admin), false) } },
    {
      method: 'POST',
      pattern: '/keys',
      route: {
        adminOnly: true,
        handle: async (ctx) => keys.create(ctx.admin, await parseBody(ctx, CreateKeyRequest), originOf(ctx)),
      },
    },
    {
      method: 'POST',
      pattern: '/keys/:key_id/roll',
      route: {
        adminOnly: true,
        handle: async (ctx) => {
          const body = await parseBody(ctx, RollKeyRequest);
          return keys.roll(ctx.admin, ctx.params.key_id!, body.expires_in_seconds, originOf(ctx));
        },
      },
    },
    {
      method: 'POST',
      pattern: '/keys/:key_id/revoke',
      route: { adminOnly: true, handle: async (ctx) => keys.revoke(ctx.admin, ctx.params.key_id!, originOf(ctx)) },
    },
    {
      method: 'GET',
      pattern: '/audit',
      route: {
        handle: async (ctx) => {
          const q = parseQuery(ctx, AuditQuery);
          const page = await control.audit.list({ ...q, team_id: ctx.admin.team_id, limit: q.limit ?? 20 });
          return listOf(
            page.data.map((a) => ({ object: 'audit_entry', ...a, team_id: undefined })),
            page.has_more,
          );
        },
      },
    },
    ...adminAppRoutes(o.apps),
    ...adminMemberRoutes(o.members, o.publicUrl),
  ];
}
