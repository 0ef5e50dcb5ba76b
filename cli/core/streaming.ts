// The events of one SSE response as an async iterator (as openai-node's core/streaming.ts): parsed with
// eventsource-parser, each payload read with the contract's lenient schema and checked against its
// `spec` one, the stream's deadline restarted by every chunk.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { z } from 'zod';
import {
  STREAM_EVENT_TYPES,
  LenientEventPayload,
  SpecEventPayload,
  type EventPayload,
  type StreamEventType,
} from '../../src/contract/index.ts';
import { RESPONSE_ID_HEADER } from '../../src/contract/index.ts';
import { ConnectionError, InvalidResponseError, ParleyError, TimeoutError, describeIssues } from './error.ts';
import type { SentResponse } from './response.ts';

/**
 * How a dropped stream comes back (resumable responses, docs/responses.md D-32): the resume of
 * response `id` after the last sequence number seen. Given by the client for conversation streams.
 */
export interface Resumer {
  resume(id: string, after: number): Promise<SentResponse>;
  /** How many times one stream may come back (default 5). */
  max?: number;
  /** Told each time the stream comes back. */
  onResume?(id: string, after: number, cause: ParleyError): void;
}

/**
 * One event of a stream. `data` is typed by the reference payloads (D-16) for convenience, but only the
 * lenient payload was required: anything else may be missing with other servers.
 */
export type ClientStreamEvent = {
  [T in StreamEventType]: { event: T; data: Partial<EventPayload<T>> & z.infer<(typeof LenientEventPayload)[T]>; raw: string };
}[StreamEventType];

/** An event whose name the interface does not list; only `EventStream.all()` yields them. */
export type UnknownStreamEvent = { event: string; data: undefined; raw: string; unknown: true };

const KNOWN_EVENTS = new Set<string>(STREAM_EVENT_TYPES);

/**
 * The events of one SSE response (§6), in order, as an async iterator. Unknown event names and SSE
 * comments (D-18) are skipped. The iterator ends after `response.completed` or `response.failed`; a
 * stream that ends before either throws ConnectionError. Leaving the loop early closes the connection.
 */
export class EventStream implements AsyncIterable<ClientStreamEvent> {
  readonly url: string;
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly requestId: string | undefined;
  #res: SentResponse;
  #validate: boolean;
  #onDeviation: (message: string) => void;
  #resumer: Resumer | undefined;
  #used = false;
  #seen = 0;
  /** D-31: the response this stream is of, from its header or its `response.created`. */
  responseId: string | undefined;
  /** The last sequence number seen (D-16), from which a resume continues. */
  lastSequence = -1;
  /** How many times the stream came back after a drop. */
  resumes = 0;

  constructor(res: SentResponse, validate: boolean, onDeviation: (message: string) => void = () => {}, resumer?: Resumer) {
    this.#res = res;
    this.#resumer = resumer;
    this.responseId = res.headers[RESPONSE_ID_HEADER];
    this.#validate = validate;
    this.#onDeviation = onDeviation;
    this.url = res.url;
    this.status = res.status;
    this.headers = res.headers;
    this.requestId = res.headers['x-request-id'];
  }

  [Symbol.asyncIterator](): AsyncGenerator<ClientStreamEvent> {
    return this.#iterate(false) as AsyncGenerator<ClientStreamEvent>;
  }

  /** Every event in order, also those with names the interface does not list (extensions), for raw output. */
  all(): AsyncGenerator<ClientStreamEvent | UnknownStreamEvent> {
    return this.#iterate(true);
  }

  async *#iterate(includeUnknown: boolean): AsyncGenerator<ClientStreamEvent | UnknownStreamEvent> {
    if (this.#used) throw new ParleyError('a stream can be iterated only once');
    this.#used = true;
    let res = this.#res;
    for (;;) {
      const pending: EventSourceMessage[] = [];
      const parser = createParser({ onEvent: (m) => pending.push(m) });
      const decoder = new TextDecoder();
      const { body, deadline } = res;
      try {
        try {
          for await (const chunk of body) {
            deadline.refresh();
            parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
            while (pending.length > 0) {
              const m = pending.shift()!;
              const event = this.#toEvent(m);
              // D-16: an event whose number was seen already (sent twice, or replayed before a resume's point) is shown once.
              const n = (event?.data as { sequence_number?: unknown } | undefined)?.sequence_number;
              if (typeof n === 'number' && n <= this.lastSequence) continue;
              if (event !== undefined) {
                this.#track(event);
                yield event;
              } else if (includeUnknown) yield { event: m.event ?? 'message', data: undefined, raw: m.data, unknown: true };
              if (event?.event === 'response.completed' || event?.event === 'response.failed') return;
            }
          }
        } catch (err) {
          if (err instanceof ParleyError) throw err;
          throw res.networkError(err);
        }
        // A last event not followed by a blank line is incomplete by the SSE rules: it is dropped.
        throw new ConnectionError(this.url, 'the stream ended before response.completed or response.failed');
      } catch (err) {
        const next = await this.#comeBack(err);
        if (!next) throw err;
        res = next;
      } finally {
        deadline.clear();
        // Also when the caller leaves the loop early: the connection is not reused half-read.
        if (!body.readableEnded) body.destroy();
      }
    }
  }

  #track(e: ClientStreamEvent): void {
    this.#seen++;
    if (e.event === 'response.created' && typeof e.data.id === 'string') this.responseId ??= e.data.id;
    const n = (e.data as { sequence_number?: unknown }).sequence_number;
    if (typeof n === 'number') this.lastSequence = n;
  }

  /**
   * D-32: a stream that dropped (not one the caller aborted, not a bad answer) is asked again from the
   * last event seen, when its response is known and the server resumes; otherwise the drop stands.
   */
  async #comeBack(err: unknown): Promise<SentResponse | undefined> {
    const r = this.#resumer;
    // A silence past the caller's timeout is the caller's limit, not a drop: it stands.
    if (
      !r ||
      !(err instanceof ConnectionError) ||
      err instanceof TimeoutError ||
      this.responseId === undefined ||
      this.resumes >= (r.max ?? 5)
    )
      return undefined;
    // Without sequence numbers a resume could repeat or skip events: only from the start, before any.
    if (this.lastSequence === -1 && this.#seen > 0) return undefined;
    this.resumes++;
    try {
      const next = await r.resume(this.responseId, this.lastSequence);
      r.onResume?.(this.responseId, this.lastSequence, err);
      return next;
    } catch {
      return undefined;
    }
  }

  #toEvent(m: EventSourceMessage): ClientStreamEvent | undefined {
    const name = m.event ?? 'message';
    if (!KNOWN_EVENTS.has(name)) return undefined;
    let data: unknown;
    try {
      data = JSON.parse(m.data);
    } catch {
      throw new InvalidResponseError(this.url, `the data of a ${name} event is not JSON`, m.data, name);
    }
    if (this.#validate) {
      const usable = LenientEventPayload[name as StreamEventType].safeParse(data);
      if (!usable.success)
        throw new InvalidResponseError(this.url, `a ${name} event is not usable: ${describeIssues(usable.error.issues)}`, m.data, name);
      const spec = SpecEventPayload[name as StreamEventType].safeParse(data);
      if (!spec.success)
        this.#onDeviation(`a ${name} event of ${this.url} does not match the interface: ${describeIssues(spec.error.issues)}`);
      data = usable.data;
    }
    return { event: name, data, raw: m.data } as ClientStreamEvent;
  }
}
