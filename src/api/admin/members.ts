// The admin surface's members (docs/control-plane.md, D-72, D-67): the team's members listed, added
// (with a one-time set-password link), given a role and removed; an invited member's password set with
// the link's token; a signed-in member's own password changed.
import { AddMemberRequest, ChangePasswordRequest, listPage, SetPasswordRequest, UpdateMemberRequest } from '../../contract/admin.ts';
import type { RouteDef } from '../../http/router.ts';
import type { MemberService } from '../../services/admin/members.ts';
import { type AdminRoute, adminWithBody } from '../rows.ts';
import { originOf, publicBase } from './common.ts';

export function memberRoutes(members: MemberService, publicUrl: string | null): RouteDef<AdminRoute>[] {
  return [
    {
      method: 'GET',
      pattern: '/members',
      route: {
        operationId: 'listMembers',
        summary: "D-72 The team's members",
        ok: 'MemberList',
        handle: async (ctx) => listPage(members.list(ctx.admin)),
      },
    },
    {
      method: 'POST',
      pattern: '/members',
      route: adminWithBody({
        operationId: 'addMember',
        summary: 'D-72 Add a member, with a password or a one-time set-password link',
        body: AddMemberRequest,
        ok: 'MemberAdded',
        adminOnly: true,
        extra: ['409'],
        handle: async (ctx, body) => members.add(ctx.admin, body, publicBase(ctx, publicUrl), originOf(ctx)),
      }),
    },
    {
      method: 'PATCH',
      pattern: '/members/:member_id',
      route: adminWithBody({
        operationId: 'updateMember',
        summary: "D-72 Change a member's role",
        body: UpdateMemberRequest,
        ok: 'Member',
        adminOnly: true,
        extra: ['409'],
        handle: async (ctx, body) => members.setRole(ctx.admin, ctx.params.member_id!, body.role, originOf(ctx)),
      }),
    },
    {
      method: 'DELETE',
      pattern: '/members/:member_id',
      route: {
        operationId: 'removeMember',
        summary: 'D-72 Remove a member; their sessions and tokens end',
        ok: 'Deletion',
        adminOnly: true,
        extra: ['409'],
        handle: async (ctx) => members.remove(ctx.admin, ctx.params.member_id!, originOf(ctx)),
      },
    },
    {
      method: 'POST',
      pattern: '/members/:member_id/invite',
      route: {
        operationId: 'reinviteMember',
        summary: 'D-72 A new set-password link for a member without a password',
        ok: 'MemberAdded',
        adminOnly: true,
        handle: async (ctx) => members.reinvite(ctx.admin, ctx.params.member_id!, publicBase(ctx, publicUrl), originOf(ctx)),
      },
    },
    {
      method: 'POST',
      pattern: '/invites/accept',
      route: adminWithBody({
        operationId: 'acceptInvite',
        summary: 'D-72 Set a password with the one-time token of an invitation',
        body: SetPasswordRequest,
        ok: 'Member',
        open: true,
        handle: async (ctx, body) => members.acceptInvite(body.token, body.password, originOf(ctx)),
      }),
    },
    {
      method: 'POST',
      pattern: '/password',
      route: adminWithBody({
        operationId: 'changePassword',
        summary: "D-67 Change the caller's password; their other sessions end",
        body: ChangePasswordRequest,
        ok: 'Member',
        extra: ['429', '503'],
        handle: async (ctx, body) => members.changePassword(ctx.admin, body.current_password, body.new_password, originOf(ctx)),
      }),
    },
  ];
}
