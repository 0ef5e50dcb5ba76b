// Send message (§4.6) and the resume of a reply's events (D-32), one handler each for both surfaces that
// send: /v1 with a secret key and /widget/v1 for a visitor (docs/widget.md). A surface says only how it
// reads the request (its body, the conversation it may write to, which response it may resume); what
// follows, and where a resume starts, is the same for both (D-116).
import { RESPONSE_ID_HEADER, ResumeEventsQuery, SequenceNumber, type SendMessageRequestT } from '../contract/index.ts';
import { parseQuery, type RequestContext } from '../http/context.ts';
import { invalidRequest } from '../core/api-errors.ts';
import { requireStream } from '../pipeline/scenario.ts';
import type { ResponseService } from '../services/send/responses.ts';
import type { ConversationRecord } from '../store/types.ts';

/** A send message as a surface read it: the body (its stream mode decided) and the conversation. */
export interface SendRequest {
  body: SendMessageRequestT & { stream: boolean };
  record: ConversationRecord;
}

/** How a surface reads a send message, its body `B` as its row's schema parsed it, and whose reply it starts. */
export interface SendSurface<B> {
  /** D-4's order: the body (400, read by the route), then the conversation (404), before anything is saved or sent (D-17). */
  read(ctx: RequestContext, body: B): Promise<SendRequest>;
  /** D-92: a widget visitor's reply, within the widget's share of the quota and its own cap of detached replies. */
  widget: boolean;
}

/** The handler of send message on `surface`. */
export function sendMessage<B>(responses: ResponseService, surface: SendSurface<B>): (ctx: RequestContext, body: B) => Promise<unknown> {
  return async (ctx, sent) => {
    const { body, record } = await surface.read(ctx, sent);
    const stream = body.stream;
    requireStream(ctx.scenario, stream);
    // The stream cap is checked before anything is saved, so its 429 changes nothing.
    if (stream) ctx.beginStream?.();
    // D-34: the reply runs on whatever becomes of the request; a client resumes it or cancels it.
    const started = await responses.start(ctx.app, record, body, ctx.signal, {
      claim: ctx.claim,
      widget: surface.widget,
      scenario: ctx.scenario,
    });
    // D-31: the response's id before the body, in both modes.
    ctx.headers[RESPONSE_ID_HEADER] = started.id;
    // D-30: a retry with the same Idempotency-Key joins this response while it runs (where keys are taken).
    ctx.joinable?.(async (retry) => {
      retry.headers[RESPONSE_ID_HEADER] = started.id;
      if (stream) retry.beginStream?.();
      return started.answer(stream, retry.requestId);
    }, started.id);
    return started.answer(stream, ctx.requestId);
  };
}

/**
 * The handler of a resume (D-32) on a surface whose caller may read the response `idOf` names (404
 * otherwise). Where it starts is read first, as D-4 reads a body before the resource it names.
 */
export function resumeEvents(
  responses: ResponseService,
  idOf: (ctx: RequestContext) => Promise<string>,
): (ctx: RequestContext) => Promise<unknown> {
  return async (ctx) => {
    const after = startingAfter(ctx);
    const stream = await responses.resume(ctx.app.id, await idOf(ctx), after, ctx.signal, ctx.scenario?.cursorExpired);
    ctx.beginStream?.();
    return stream;
  };
}

/**
 * D-32 (and D-116 for the widget): where a resume starts: the `Last-Event-ID` an EventSource sends on
 * reconnecting wins over the query's `starting_after` (the URL it reconnects to is the first one);
 * neither: every event.
 */
function startingAfter(ctx: RequestContext): number {
  const q = parseQuery(ctx, ResumeEventsQuery);
  const raw = ctx.req.headers['last-event-id'];
  const last = Array.isArray(raw) ? raw[0] : raw;
  if (last !== undefined) {
    if (!SequenceNumber.safeParse(last.trim()).success)
      throw invalidRequest(
        'Last-Event-ID must be the sequence number of an event (an integer of -1 or more).',
        'Last-Event-ID',
        'invalid_value',
      );
    return Number(last.trim());
  }
  return q.starting_after === undefined ? -1 : Number(q.starting_after);
}
