// Handlers of §4.6 (send message) and §4.7 (completions): JSON or SSE from the same event stream.
import { CreateCompletionRequest, RESPONSE_ID_HEADER, ResumeEventsQuery, SendMessageRequest } from '../contract/index.ts';
import { CREDITS_WARNING_HEADER_DOC, RESPONSE_ID_HEADER_DOC, RESUME_EVENTS_PARAMETERS } from '../contract/openapi.ts';
import { parseBody, parseQuery, type RequestContext } from '../http/context.ts';
import { invalidRequest } from '../http/errors.ts';
import type { RouteDef } from '../http/router.ts';
import type { CompletionService } from '../services/completions.ts';
import type { ConversationService } from '../services/conversations.ts';
import { answerOf } from '../services/response-runner.ts';
import type { ResponseService } from '../services/responses.ts';
import type { RestRoute } from './rows.ts';

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
    // The same body as the running request's (the fingerprints matched).
    const body = await parseBody(retry, SendMessageRequest);
    const stream = body.stream ?? retry.app.stream;
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
      route: {
        operationId: 'sendMessage',
        summary: '§4.6 Send a message; the reply is JSON or an event stream (§6)',
        body: 'SendMessageRequest',
        ok: 'Response',
        stream: true,
        extraStatuses: ['409'],
        okHeaders: { ...RESPONSE_ID_HEADER_DOC, ...CREDITS_WARNING_HEADER_DOC },
        needsAgent: true,
        counted: true,
        idempotent: true,
        handle: async (ctx) => {
          // D-4: body validation, then the conversation lookup (404, D-11), then the first event (D-17).
          const body = await parseBody(ctx, SendMessageRequest);
          const record = await o.conversations.find(ctx.app.id, ctx.params.conversation_id!);
          const stream = body.stream ?? ctx.app.stream;
          // The stream cap is checked before anything is saved, so its 429 changes nothing.
          if (stream) ctx.beginStream?.();
          const started = await o.responses.start(ctx.app, record, body, ctx.signal, ctx.claim);
          // D-31: the response's id before the body, in both modes.
          ctx.headers[RESPONSE_ID_HEADER] = started.id;
          // D-30: a retry with the same Idempotency-Key joins this response while it runs.
          ctx.joinable?.(async (retry) => {
            retry.headers[RESPONSE_ID_HEADER] = started.id;
            if (stream) retry.beginStream?.();
            return started.answer(stream, retry.requestId);
          }, started.id);
          return started.answer(stream, ctx.requestId);
        },
      },
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
        handle: (ctx) => o.responses.lookup(ctx.app.id, ctx.params.response_id!),
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
        handle: async (ctx) => {
          const after = startingAfter(ctx);
          const stream = await o.responses.resume(ctx.app.id, ctx.params.response_id!, after, ctx.signal);
          ctx.beginStream?.();
          return stream;
        },
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
      route: {
        operationId: 'createCompletion',
        summary: '§4.7 Create a one-shot completion; JSON or an event stream (§6)',
        body: 'CreateCompletionRequest',
        ok: 'Completion',
        stream: true,
        okHeaders: CREDITS_WARNING_HEADER_DOC,
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

/**
 * D-32: where a resume starts: the `Last-Event-ID` an EventSource sends on reconnecting wins over the
 * query's `starting_after` (the URL it reconnects to is the first one); neither: every event.
 */
function startingAfter(ctx: RequestContext): number {
  const q = parseQuery(ctx, ResumeEventsQuery);
  const raw = ctx.req.headers['last-event-id'];
  const last = Array.isArray(raw) ? raw[0] : raw;
  if (last !== undefined) {
    if (!/^(-1|0|[1-9][0-9]{0,8})$/.test(last.trim()))
      throw invalidRequest(
        'Last-Event-ID must be the sequence number of an event (an integer of -1 or more).',
        'Last-Event-ID',
        'invalid_value',
      );
    return Number(last.trim());
  }
  return q.starting_after === undefined ? -1 : Number(q.starting_after);
}
