// The admin surface's members (docs/control-plane.md, D-72, D-67): the team's members listed, added
// (with a one-time set-password link), given a role and removed; an invited member's password set with
// the link's token; a signed-in member's own password changed.
import { AddMemberRequest, ChangePasswordRequest, SetPasswordRequest, UpdateMemberRequest } from '../contract/admin.ts';
import type { Exchange } from '../http/context.ts';
import { parseBody } from '../http/context.ts';
import type { RouteDef } from '../http/router.ts';
import type { MemberService } from '../services/admin/members.ts';
import { type AdminRoute, listOf, originOf } from './admin-common.ts';

/**
 * Where links point (D-65): the public URL when one is set, else the address this request reached
 * (seen only by the admin who made it).
 */
function publicBase(ctx: Pick<Exchange, 'req'>, publicUrl: string | null): string {
  if (publicUrl) return publicUrl;
  const scheme = 'encrypted' in ctx.req.socket ? 'https' : 'http';
  return `${scheme}://${ctx.req.headers.host ?? 'localhost'}`;
}

export function adminMemberRoutes(members: MemberService, publicUrl: string | null): RouteDef<AdminRoute>[] {
  return [
    { method: 'GET', pattern: '/members', route: { handle: async (ctx) => listOf(members.list(ctx.admin), false) } },
    {
      method: 'POST',
      pattern: '/members',
      route: {
        adminOnly: true,
        handle: async (ctx) => members.add(ctx.admin, await parseBody(ctx, AddMemberRequest), publicBase(ctx, publicUrl), originOf(ctx)),
      },
    },
    {
      method: 'PATCH',
      pattern: '/members/:member_id',
      route: {
        adminOnly: true,
        handle: async (ctx) =>
          members.setRole(ctx.admin, ctx.params.member_id!, (await parseBody(ctx, UpdateMemberRequest)).role, originOf(ctx)),
      },
    },
    {
      method: 'DELETE',
      pattern: '/members/:member_id',
      route: { adminOnly: true, handle: async (ctx) => members.remove(ctx.admin, ctx.params.member_id!, originOf(ctx)) },
    },
    {
      method: 'POST',
      pattern: '/members/:member_id/invite',
      route: {
        adminOnly: true,
        handle: async (ctx) => members.reinvite(ctx.admin, ctx.params.member_id!, publicBase(ctx, publicUrl), originOf(ctx)),
      },
    },
    {
      method: 'POST',
      pattern: '/invites/accept',
      route: {
        open: true,
        handle: async (ctx) => {
          const body = await parseBody(ctx, SetPasswordRequest);
          return members.acceptInvite(body.token, body.password, originOf(ctx));
        },
      },
    },
    {
      method: 'POST',
      pattern: '/password',
      route: {
        handle: async (ctx) => {
          const body = await parseBody(ctx, ChangePasswordRequest);
          return members.changePassword(ctx.admin, body.current_password, body.new_password, originOf(ctx));
        },
      },
    },
  ];
}
