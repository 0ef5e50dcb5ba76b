// What a handler answers, as a value: the JSON body of a 200 (any value but an EventStream), or an
// EventStream. Only the server writes it (`createHttpServer`); a pipeline stage such as idempotency
// wraps it after `next()`, as hono middleware does, and never touches the response object.
import type { UnsequencedEvent } from '../contract/index.ts';

/** How the work behind a stream ended; known once its last event has been taken. */
export interface StreamOutcome {
  /**
   * False when the work could not be made durable (D-5: a full disk): the stream still ends, with
   * `response.failed`, but its answer is not kept for an Idempotency-Key replay.
   */
  saved: boolean;
}

/** How the writer numbers a stream (D-16), and whether each event carries an `id:` line. */
export interface StreamNumbering {
  /** The sequence number of the first event (a resume starts after the last one seen, D-32). */
  first: number;
  /** D-32: only the resume endpoint adds `id: <sequence number>` to its events. */
  ids: boolean;
}

/** An SSE answer (§6): the events, unsequenced (the writer stamps them, D-16), and their outcome. */
export class EventStream {
  constructor(
    readonly events: AsyncIterable<UnsequencedEvent>,
    /** Read after the last event. */
    readonly outcome: () => StreamOutcome,
    readonly numbering: StreamNumbering = { first: 0, ids: false },
  ) {}
}

/** A file served as is (the widget's script, the playground's page): its type, bytes and headers (caching, CSP). */
export class Asset {
  constructor(
    readonly contentType: string,
    readonly body: string | Buffer,
    readonly headers: Readonly<Record<string, string>> = {},
    readonly status = 200,
  ) {}
}
