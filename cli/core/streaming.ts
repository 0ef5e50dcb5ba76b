// The events of one SSE response as an async iterator (as openai-node's core/streaming.ts): parsed with
// eventsource-parser, each payload read with the contract's lenient schema and checked against its
// `spec` one, the stream's deadline restarted by every chunk.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { z } from 'zod';
import { EVENT_TYPES, LenientEventPayload, SpecEventPayload, type EventPayload, type EventType } from '../../src/contract/index.ts';
import { ConnectionError, InvalidResponseError, ParleyError, describeIssues } from './error.ts';
import type { SentResponse } from './response.ts';

/**
 * One event of a stream. `data` is typed by the reference payloads (D-16) for convenience, but only the
 * lenient payload was required: anything else may be missing with other servers.
 */
export type ClientStreamEvent = { [T in EventType]: { event: T; data: Partial<EventPayload<T>> & z.infer<(typeof LenientEventPayload)[T]>; raw: string } }[EventType];

/** An event whose name the interface does not list; only `EventStream.all()` yields them. */
export type UnknownStreamEvent = { event: string; data: undefined; raw: string; unknown: true };

const KNOWN_EVENTS = new Set<string>(EVENT_TYPES);

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
  #used = false;

  constructor(res: SentResponse, validate: boolean, onDeviation: (message: string) => void = () => {}) {
    this.#res = res;
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
    const pending: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (m) => pending.push(m) });
    const decoder = new TextDecoder();
    const { body, deadline } = this.#res;
    try {
      try {
        for await (const chunk of body) {
          deadline.refresh();
          parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
          while (pending.length > 0) {
            const m = pending.shift()!;
            const event = this.#toEvent(m);
            if (event !== undefined) yield event;
            else if (includeUnknown) yield { event: m.event ?? 'message', data: undefined, raw: m.data, unknown: true };
            if (event?.event === 'response.completed' || event?.event === 'response.failed') return;
          }
        }
      } catch (err) {
        if (err instanceof ParleyError) throw err;
        throw this.#res.networkError(err);
      }
      // A last event not followed by a blank line is incomplete by the SSE rules: it is dropped.
      throw new ConnectionError(this.url, 'the stream ended before response.completed or response.failed');
    } finally {
      deadline.clear();
      // Also when the caller leaves the loop early: the connection is not reused half-read.
      if (!body.readableEnded) body.destroy();
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
      const usable = LenientEventPayload[name as EventType].safeParse(data);
      if (!usable.success) throw new InvalidResponseError(this.url, `a ${name} event is not usable: ${describeIssues(usable.error.issues)}`, m.data, name);
      const spec = SpecEventPayload[name as EventType].safeParse(data);
      if (!spec.success) this.#onDeviation(`a ${name} event of ${this.url} does not match the interface: ${describeIssues(spec.error.issues)}`);
      data = usable.data;
    }
    return { event: name, data, raw: m.data } as ClientStreamEvent;
  }
}
