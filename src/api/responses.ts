// Handlers of §4.6 (send message) and §4.7 (completions): JSON or SSE from the same event stream.
import { CreateCompletionRequest, SendMessageRequest, type UnsequencedEvent } from '../contract/index.ts';
import { parseBody, type RequestContext } from '../http/context.ts';
import { internalError } from '../http/errors.ts';
import type { RouteDef } from '../http/router.ts';
import type { Route } from '../http/server.ts';
import { streamSse } from '../http/sse.ts';
import type { CompletionService } from '../services/completions.ts';
import { doNotKeep } from '../services/idempotency.ts';
import type { ResponseRun } from '../services/response-runner.ts';
import type { ConversationService } from '../services/conversations.ts';
import type { ResponseService } from '../services/responses.ts';

export interface ResponseRouteOptions {
  conversations: ConversationService;
  responses: ResponseService;
  completions: CompletionService;
  /** D-18: interval of `: keep-alive` comments. */
  keepAliveMs?: number;
}

/**
 * SSE writes the events as they come; JSON mode runs the same events to the end and answers once.
 * An exchange that could not be saved is the server's failure, not the model's (D-5, not D-17): JSON
 * mode answers 500, a stream (its 200 already sent) ends with `response.failed`; neither is kept for
 * an Idempotency-Key replay, so that a retry runs again.
 */
async function deliver<T>(ctx: RequestContext, stream: boolean, run: ResponseRun, result: () => T, keepAliveMs?: number): Promise<T | undefined> {
  if (stream) {
    await streamSse(ctx.res, unlessUnsaved(ctx, run), { keepAliveMs, headers: ctx.headers });
    return undefined;
  }
  for await (const _ of run.events());
  if (run.unsaved) throw internalError(ctx.requestId);
  return result();
}

/** The run's events; an unsaved run's answer is marked not to be kept before its last event is written. */
async function* unlessUnsaved(ctx: RequestContext, run: ResponseRun): AsyncGenerator<UnsequencedEvent> {
  for await (const e of run.events()) {
    if (run.unsaved) doNotKeep(ctx.res);
    yield e;
  }
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
          // The stream cap is checked before anything is saved, so its 429 changes nothing.
          if (body.stream ?? ctx.app.stream) ctx.beginStream?.();
          const started = await o.responses.start(ctx.app, record, body, ctx.signal);
          return deliver(ctx, body.stream ?? ctx.app.stream, started.run, started.toResponse, o.keepAliveMs);
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
          const started = o.completions.start(ctx.app, body, ctx.signal);
          return deliver(ctx, body.stream ?? false, started.run, started.toCompletion, o.keepAliveMs);
        },
      },
    },
  ];
}
