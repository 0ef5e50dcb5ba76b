// A response as the API reads it, whichever instance produces it (D-35): looked up (D-32, from its
// stored events while they are kept, then from the conversation, D-36), its events resumed (D-32),
// cancelled (D-33).
import type { LiveResponseT } from '../../contract/index.ts';
import { ResponseEventsExpired } from '../../core/errors.ts';
import { apiError, notFound } from '../../core/api-errors.ts';
import { EventStream } from '../../core/answers.ts';
import type { ResponseTrace, Store } from '../../store/types.ts';
import { foldEvents } from './response-fold.ts';
import { outputOf, responseOf } from './response-resource.ts';
import { STOPS } from './stops.ts';

export class ResponseLookup {
  constructor(private readonly store: Store) {}

  /** The store's record of a response of `appId` (404 otherwise: another app's or team's, D-32). */
  async traceOf(appId: string, id: string): Promise<ResponseTrace> {
    const trace = await this.store.responses.trace(id);
    if (!trace || trace.start.app_id !== appId) throw notFound(`Response ${JSON.stringify(id)}`, 'response_id');
    return trace;
  }

  /**
   * D-32: the Response as it is now: `in_progress` with the output so far, then as it ended. `asExpired`
   * (the `cursor-expired` scenario, D-124): read as past its events' hour, from the conversation.
   */
  async lookup(appId: string, id: string, asExpired = false): Promise<LiveResponseT> {
    const trace = await this.traceOf(appId, id);
    const head = { id, created_at: trace.start.created_at, conversation_id: trace.start.conversation_id };
    if (trace.events && !asExpired) {
      const r = foldEvents(trace.events);
      if (!trace.ended || r.status === 'in_progress') return responseOf(head, r.output, { status: 'in_progress' });
      return responseOf(head, r.output, r);
    }
    // D-36: past the events' retention, the conversation holds the response as it was saved.
    const file = await this.store.readHistory(trace.start.conversation_id);
    const saved = file.responses.find((r) => r.id === id);
    return responseOf(head, outputOf(file.items, id), saved ?? { status: 'failed', error: STOPS.interrupted });
  }

  /**
   * D-32: the events after `after`, as first sent, then the live ones to the terminal one, numbered
   * from `after + 1` with `id:` lines. Ends early if the client leaves. `asExpired` (the `cursor-expired`
   * scenario, D-124): answered as past their hour.
   */
  async resume(appId: string, id: string, after: number, signal: AbortSignal, asExpired = false): Promise<EventStream> {
    const trace = await this.traceOf(appId, id);
    if (!trace.events || asExpired) throw expired(id);
    const events = this.store.responses.follow(id, after, signal);
    const guarded = (async function* () {
      try {
        yield* events;
      } catch (err) {
        // Expired between the check and the read: the stream has not started, so the error is answered.
        if (err instanceof ResponseEventsExpired) throw expired(id);
        throw err;
      }
    })();
    return new EventStream(guarded, () => ({ saved: true }), { first: after + 1, ids: true });
  }

  /**
   * D-33: stops a running response (it ends `failed`, code `cancelled`, what it produced kept) and
   * returns it once saved; a finished one is returned unchanged.
   */
  async cancel(appId: string, id: string): Promise<LiveResponseT> {
    const trace = await this.traceOf(appId, id);
    if (!trace.ended && trace.events) {
      const seen = trace.events.length - 1;
      await this.store.responses.requestCancel(id);
      // Waits for the terminal event, wherever the response is produced: once answered, no text follows (D-33).
      for await (const _ of this.store.responses.follow(id, seen));
    }
    return this.lookup(appId, id);
  }
}

/** D-36's error: the look-up still answers, the events are gone. */
function expired(id: string) {
  return apiError(
    'response_events_expired',
    `The events of response ${id} are no longer kept (they stay resumable for a while after the response ends, docs/responses.md); read the response with GET …/responses/${id}.`,
  );
}
