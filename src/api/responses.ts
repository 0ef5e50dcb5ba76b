// Handlers of §4.6 (send message) and §4.7 (completions): JSON or SSE from the same event stream.
import { CreateCompletionRequest, RESPONSE_ID_HEADER, SendMessageRequest } from '../contract/index.ts';
import { CREDITS_WARNING_HEADER_DOC, RESPONSE_ID_HEADER_DOC, RESUME_EVENTS_PARAMETERS } from '../contract/openapi.ts';
import type { RequestContext } from '../http/context.ts';
import type { RouteDef } from '../http/router.ts';
import type { CompletionService } from '../services/completions.ts';
import type { ConversationService } from '../services/conversations.ts';
import { requireStream } from '../pipeline/scenario.ts';
import { answerOf } from '../services/send/response-runner.ts';
import type { ResponseService } from '../services/send/responses.ts';
import { type RestRoute, restWithBody } from './rows.ts';
import { resumeEvents, sendMessage } from './send.ts';

export interface ResponseRouteOptions {
  conversations: ConversationService;
  responses: ResponseService;
  completions: CompletionService;
}

/**
 * D-30 on another instance than the one producing the response: a keyed retry of a send message that
 * still runs follows the response from the store, as the retry on its own instance joins it.
 */
export function followRunning(responses: ResponseService): (retry: RequestContext, responseId: string) => Promise<unknown> {
  return async (retry, id) => {
    // The running request's body, which its route validated (D-118) before the response it names began,
    // byte for byte (the fingerprints matched): only its `stream` is needed here.
    const body = (await retry.json()) as { stream?: boolean } | undefined;
    const stream = body?.stream ?? retry.app.stream;
    retry.headers[RESPONSE_ID_HEADER] = id;
    if (stream) retry.beginStream?.();
    const events = await responses.resume(retry.app.id, id, -1, retry.signal);
    if (stream) return events;
    for await (const _ of events.events);
    return responses.lookup(retry.app.id, id);
  };
}

export function responseRoutes(o: ResponseRouteOptions): RouteDef<RestRoute>[] {
  return [
    {
      method: 'POST',
      pattern: '/apps/:app_id/conversations/:conversation_id',
      route: restWithBody({
        operationId: 'sendMessage',
        summary: '§4.6 Send a message; the reply is JSON or an event stream (§6)',
        body: SendMessageRequest,
        ok: 'Response',
        stream: true,
        extraStatuses: ['409'],
        okHeaders: { ...RESPONSE_ID_HEADER_DOC, ...CREDITS_WARNING_HEADER_DOC },
        needsAgent: true,
        counted: true,
        idempotent: true,
        scenario: 'reply',
        handle: sendMessage(o.responses, {
          // D-4: the body validated (by the route), then the conversation looked up (404, D-11).
          read: async (ctx, body) => {
            const record = await o.conversations.find(ctx.app.id, ctx.params.conversation_id!);
            return { body: { ...body, stream: body.stream ?? ctx.app.stream }, record };
          },
          widget: false,
        }),
      }),
    },
    // Resumable responses (docs/responses.md, D-30…D-39): counted against the plan like the rest.
    {
      method: 'GET',
      pattern: '/apps/:app_id/responses/:response_id',
      route: {
        operationId: 'getResponse',
        summary: 'D-32 Look up a response: `in_progress` while it runs, then as it ended',
        ok: 'LiveResponse',
        counted: true,
        scenario: 'lookup',
        handle: (ctx) => o.responses.lookup(ctx.app.id, ctx.params.response_id!, ctx.scenario?.cursorExpired),
      },
    },
    {
      method: 'GET',
      pattern: '/apps/:app_id/responses/:response_id/events',
      route: {
        operationId: 'resumeResponseEvents',
        summary:
          'D-32 The events after `starting_after` (or `Last-Event-ID`) as first sent, then the live ones to the terminal one; each with an `id:` line',
        query: RESUME_EVENTS_PARAMETERS,
        ok: 'LiveResponse',
        sseOnly: true,
        extraStatuses: ['410'],
        counted: true,
        scenario: 'events',
        handle: resumeEvents(o.responses, async (ctx) => ctx.params.response_id!),
      },
    },
    {
      method: 'POST',
      pattern: '/apps/:app_id/responses/:response_id/cancel',
      route: {
        operationId: 'cancelResponse',
        summary: 'D-33 Cancel a running response (it ends failed, code `cancelled`); a finished one is returned unchanged',
        ok: 'LiveResponse',
        counted: true,
        handle: (ctx) => o.responses.cancel(ctx.app.id, ctx.params.response_id!),
      },
    },
    {
      method: 'POST',
      pattern: '/apps/:app_id/completions',
      route: restWithBody({
        operationId: 'createCompletion',
        summary: '§4.7 Create a one-shot completion; JSON or an event stream (§6)',
        body: CreateCompletionRequest,
        ok: 'Completion',
        stream: true,
        okHeaders: CREDITS_WARNING_HEADER_DOC,
        needsAgent: true,
        counted: true,
        idempotent: true,
        scenario: 'reply',
        handle: async (ctx, body) => {
          requireStream(ctx.scenario, body.stream ?? false);
          if (body.stream) ctx.beginStream?.();
          const started = o.completions.start(ctx.app, body, ctx.signal, ctx.claim, ctx.scenario);
          return answerOf(started.run, body.stream ?? false, started.toCompletion, ctx.requestId);
        },
      }),
    },
  ];
}
