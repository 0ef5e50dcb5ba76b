// D-73: conversations as the team sees them on the admin surface: list (deleted ones as asked), get
// with the full history and responses, and restore (an admin's, while the history is kept).
import { AdminConversationsQuery } from '../../contract/admin.ts';
import { parseQuery } from '../../http/context.ts';
import type { RouteDef } from '../../http/router.ts';
import type { AdminConversationService } from '../../services/admin/conversations.ts';
import type { AdminRoute } from '../rows.ts';
import { originOf } from './common.ts';

export function conversationRoutes(conversations: AdminConversationService): RouteDef<AdminRoute>[] {
  return [
    {
      method: 'GET',
      pattern: '/apps/:app_id/conversations',
      route: {
        operationId: 'listAppConversations',
        summary: "D-73 An app's conversations, deleted ones as asked, with their message counts",
        query: AdminConversationsQuery,
        ok: 'ConversationList',
        handle: async (ctx) => conversations.list(ctx.admin, ctx.params.app_id!, parseQuery(ctx, AdminConversationsQuery)),
      },
    },
    {
      method: 'GET',
      pattern: '/apps/:app_id/conversations/:conversation_id',
      route: {
        operationId: 'getAppConversation',
        summary: 'D-73 A conversation, deleted or not, with its full history and responses',
        ok: 'ConversationDetail',
        handle: (ctx) => conversations.get(ctx.admin, ctx.params.app_id!, ctx.params.conversation_id!),
      },
    },
    {
      method: 'POST',
      pattern: '/apps/:app_id/conversations/:conversation_id/restore',
      route: {
        operationId: 'restoreConversation',
        summary: 'D-73 Restore a deleted conversation whose history is kept',
        ok: 'ConversationDetail',
        adminOnly: true,
        extra: ['409'],
        handle: (ctx) => conversations.restore(ctx.admin, ctx.params.app_id!, ctx.params.conversation_id!, originOf(ctx)),
      },
    },
  ];
}
