// Handlers of §4.1–4.5: parse, call the conversation service, return its resource.
import { CreateConversationRequest, ListConversationsQuery, UpdateConversationRequest } from '../contract/index.ts';
import { parseBody, parseQuery } from '../http/context.ts';
import type { RouteDef } from '../http/router.ts';
import type { Route } from '../http/surface.ts';
import type { ConversationService } from '../services/conversations.ts';

export function conversationRoutes(conversations: ConversationService): RouteDef<Route>[] {
  return [
    {
      method: 'POST',
      pattern: '/apps/:app_id/conversations',
      // D-110 (revises D-23), for D-27's reason: a create stores a new record, so it counts against the
      // plan's rate limits (a rename or a delete changes one that exists, and does not).
      route: {
        counted: true,
        idempotent: true,
        handle: async (ctx) => conversations.create(ctx.app.id, await parseBody(ctx, CreateConversationRequest), ctx.claim),
      },
    },
    {
      method: 'GET',
      pattern: '/apps/:app_id/conversations',
      route: { handle: async (ctx) => conversations.list(ctx.app.id, parseQuery(ctx, ListConversationsQuery)) },
    },
    {
      method: 'GET',
      pattern: '/apps/:app_id/conversations/:conversation_id',
      route: { handle: (ctx) => conversations.getJson(ctx.app.id, ctx.params.conversation_id!) },
    },
    {
      method: 'PATCH',
      pattern: '/apps/:app_id/conversations/:conversation_id',
      route: {
        handle: async (ctx) => {
          // D-4: the body is validated before the conversation is looked up.
          const body = await parseBody(ctx, UpdateConversationRequest);
          return conversations.update(ctx.app.id, ctx.params.conversation_id!, body);
        },
      },
    },
    {
      method: 'DELETE',
      pattern: '/apps/:app_id/conversations/:conversation_id',
      route: { handle: (ctx) => conversations.delete(ctx.app.id, ctx.params.conversation_id!) },
    },
  ];
}
