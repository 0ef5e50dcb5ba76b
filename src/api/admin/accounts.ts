// The caller's own access on the admin surface (docs/control-plane.md, D-67, D-68): sign in, the
// session, sign out, and their personal access tokens.
import { CreateAccessTokenRequest, PageQuery, SignInRequest } from '../../contract/admin.ts';
import { parseQuery } from '../../http/context.ts';
import { apiError } from '../../core/api-errors.ts';
import type { RouteDef } from '../../http/router.ts';
import type { AccountService } from '../../services/admin/accounts.ts';
import { SESSION_MAX_AGE_MS } from '../../store/control.ts';
import { type AdminRoute, adminWithBody } from '../rows.ts';
import { originOf } from './common.ts';

function cookie(value: string, maxAgeS: number, secure: boolean): string {
  return `parley_session=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeS}${secure ? '; Secure' : ''}`;
}

/** `secureCookies`: D-65, D-67, behind a TLS-terminating proxy the socket is plain; the public URL says https. */
export function accountRoutes(accounts: AccountService, secureCookies: boolean): RouteDef<AdminRoute>[] {
  return [
    {
      method: 'POST',
      pattern: '/sessions',
      route: adminWithBody({
        operationId: 'signIn',
        summary: 'D-67 Sign in: sets the session cookie',
        body: SignInRequest,
        ok: 'Session',
        open: true,
        extra: ['429', '503'],
        handle: async (ctx, body) => {
          const { cookie: value, session, member } = await accounts.signIn(body.email, body.password, originOf(ctx));
          ctx.headers['set-cookie'] = cookie(value, SESSION_MAX_AGE_MS / 1000, secureCookies || 'encrypted' in ctx.req.socket);
          return accounts.session(
            { member_id: member.id, team_id: member.team_id },
            session.csrf_token,
            session.created_at + SESSION_MAX_AGE_MS,
          );
        },
      }),
    },
    {
      method: 'GET',
      pattern: '/session',
      route: {
        operationId: 'getSession',
        summary: 'D-67 The signed-in session and its CSRF token',
        ok: 'Session',
        handle: async (ctx) => {
          const s = ctx.admin.session_id ? await accounts.csrfOf(ctx.admin.session_id) : undefined;
          if (!s) throw apiError('invalid_admin_credential', 'GET /session is for a signed-in session; a token has none.');
          return accounts.session(ctx.admin, s.csrf_token, s.created_at + SESSION_MAX_AGE_MS);
        },
      },
    },
    {
      method: 'DELETE',
      pattern: '/sessions/current',
      route: {
        operationId: 'signOut',
        summary: 'D-67 Sign out',
        ok: 'Deletion',
        handle: async (ctx) => {
          await accounts.signOut(ctx.admin, originOf(ctx));
          ctx.headers['set-cookie'] = cookie('', 0, secureCookies);
          return { object: 'session', deleted: true };
        },
      },
    },
    {
      method: 'GET',
      pattern: '/tokens',
      route: {
        operationId: 'listAccessTokens',
        summary: "D-68, D-173 The caller's personal access tokens, a page at a time",
        query: PageQuery,
        ok: 'AccessTokenList',
        handle: async (ctx) => accounts.listTokens(ctx.admin, parseQuery(ctx, PageQuery)),
      },
    },
    {
      method: 'POST',
      pattern: '/tokens',
      route: adminWithBody({
        operationId: 'createAccessToken',
        summary: 'D-68 A new personal access token, shown once',
        body: CreateAccessTokenRequest,
        ok: 'AccessTokenCreated',
        handle: async (ctx, body) => {
          return accounts.createToken(ctx.admin, body.name, body.expires_in_days ?? 90, originOf(ctx));
        },
      }),
    },
    {
      method: 'DELETE',
      pattern: '/tokens/:token_id',
      route: {
        operationId: 'revokeAccessToken',
        summary: 'D-68 Revoke a personal access token',
        ok: 'Deletion',
        handle: async (ctx) => {
          await accounts.revokeToken(ctx.admin, ctx.params.token_id!, originOf(ctx));
          return { id: ctx.params.token_id, object: 'access_token', deleted: true };
        },
      },
    },
  ];
}
