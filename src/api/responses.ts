// Handlers of §4.6 (send message) and §4.7 (completions): JSON or SSE from the same event stream.
import { CreateCompletionRequest, SendMessageRequest } from '../contract/index.ts';
import { parseBody } from '../http/context.ts';
import type { RouteDef } from '../http/router.ts';
import type { Route } from '../http/server.ts';
import type { CompletionService } from '../services/completions.ts';
import type { ConversationService } from '../services/conversations.ts';
import { answerOf } from '../services/response-runner.ts';
import type { ResponseService } from '../services/responses.ts';

export interface ResponseRouteOptions {
  conversations: ConversationService;
  responses: ResponseService;
  completions: CompletionService;
}

export function responseRoutes(o: ResponseRouteOptions): RouteDef<Route>[] {
  return [
    {
      method: 'POST',
      pattern: '/apps/:app_id/conversations/:conversation_id',
      route: {
        needsAgent: true,
        counted: true,
        idempotent: true,
        handle: async (ctx) => {
          // D-4: body validation, then the conversation lookup (404, D-11), then the first event (D-17).
          const body = await parseBody(ctx, SendMessageRequest);
          const record = o.conversations.find(ctx.app.id, ctx.params.conversation_id!);
          const stream = body.stream ?? ctx.app.stream;
          // The stream cap is checked before anything is saved, so its 429 changes nothing.
          if (stream) ctx.beginStream?.();
          const started = await o.responses.start(ctx.app, record, body, ctx.signal, ctx.claim);
          return answerOf(started.run, stream, started.toResponse, ctx.requestId);
        },
      },
    },
    {
      method: 'POST',
      pattern: '/apps/:app_id/completions',
      route: {
        needsAgent: true,
        counted: true,
        idempotent: true,
        handle: async (ctx) => {
          const body = await parseBody(ctx, CreateCompletionRequest);
          if (body.stream) ctx.beginStream?.();
          const started = o.completions.start(ctx.app, body, ctx.signal, ctx.claim);
          return answerOf(started.run, body.stream ?? false, started.toCompletion, ctx.requestId);
        },
      },
    },
  ];
}
