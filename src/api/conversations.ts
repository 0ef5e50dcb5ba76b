// Handlers of §4.1–4.5: take the parsed request, call the conversation service, return its resource.
import { CreateConversationRequest, ListConversationsQuery, UpdateConversationRequest } from '../contract/index.ts';
import { parseQuery } from '../http/context.ts';
import type { RouteDef } from '../http/router.ts';
import { listConversationsQuery } from '../contract/openapi.ts';
import type { ConversationService } from '../services/conversations.ts';
import { type RestRoute, restWithBody } from './rows.ts';

export function conversationRoutes(conversations: ConversationService): RouteDef<RestRoute>[] {
  return [
    {
      method: 'POST',
      pattern: '/apps/:app_id/conversations',
      // D-110 (revises D-23), for D-27's reason: a create stores a new record, so it counts against the
      // plan's rate limits (a rename or a delete changes one that exists, and does not).
      route: restWithBody({
        operationId: 'createConversation',
        summary: '§4.1 Create a conversation',
        body: CreateConversationRequest,
        bodyOptional: true,
        ok: 'Conversation',
        counted: true,
        idempotent: true,
        handle: async (ctx, body) => conversations.create(ctx.app.id, body, ctx.claim),
      }),
    },
    {
      method: 'GET',
      pattern: '/apps/:app_id/conversations',
      route: {
        operationId: 'listConversations',
        summary: '§4.2 List conversations',
        query: listConversationsQuery(),
        ok: 'ConversationList',
        handle: async (ctx) => conversations.list(ctx.app.id, parseQuery(ctx, ListConversationsQuery)),
      },
    },
    {
      method: 'GET',
      pattern: '/apps/:app_id/conversations/:conversation_id',
      route: {
        operationId: 'getConversation',
        summary: '§4.3 Get a conversation with its items',
        ok: 'ConversationWithItems',
        handle: (ctx) => conversations.getJson(ctx.app.id, ctx.params.conversation_id!),
      },
    },
    {
      method: 'PATCH',
      pattern: '/apps/:app_id/conversations/:conversation_id',
      route: restWithBody({
        operationId: 'updateConversation',
        summary: '§4.4 Rename a conversation (D-13)',
        // D-4: the body is validated before the conversation is looked up.
        body: UpdateConversationRequest,
        ok: 'Conversation',
        handle: async (ctx, body) => conversations.update(ctx.app.id, ctx.params.conversation_id!, body),
      }),
    },
    {
      method: 'DELETE',
      pattern: '/apps/:app_id/conversations/:conversation_id',
      route: {
        operationId: 'deleteConversation',
        summary: '§4.5 Soft-delete a conversation (D-11)',
        ok: 'DeletionResult',
        handle: (ctx) => conversations.delete(ctx.app.id, ctx.params.conversation_id!),
      },
    },
  ];
}
