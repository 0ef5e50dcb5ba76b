// D-73: conversations as the team sees them on the admin surface: list (deleted ones as asked), get
// with the full history and responses, and restore (an admin's, while the history is kept).
import { AdminConversationsQuery } from '../contract/admin.ts';
import { parseQuery } from '../http/context.ts';
import type { RouteDef } from '../http/router.ts';
import type { AdminConversationService } from '../services/admin/conversations.ts';
import { type AdminRoute, originOf } from './admin.ts';

export function adminConversationRoutes(conversations: AdminConversationService): RouteDef<AdminRoute>[] {
  return [
    {
      method: 'GET',
      pattern: '/apps/:app_id/conversations',
      route: { handle: async (ctx) => conversations.list(ctx.admin, ctx.params.app_id!, parseQuery(ctx, AdminConversationsQuery)) },
    },
    {
      method: 'GET',
      pattern: '/apps/:app_id/conversations/:conversation_id',
      route: { handle: (ctx) => conversations.get(ctx.admin, ctx.params.app_id!, ctx.params.conversation_id!) },
    },
    {
      method: 'POST',
      pattern: '/apps/:app_id/conversations/:conversation_id/restore',
      route: {
        adminOnly: true,
        handle: (ctx) => conversations.restore(ctx.admin, ctx.params.app_id!, ctx.params.conversation_id!, originOf(ctx)),
      },
    },
  ];
}
