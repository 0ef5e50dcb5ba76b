// What a service answers, as a value the transport writes: the JSON body of a 200 (any value, or a
// JsonText already serialized) or an EventStream (§6). Services speak these; how they are written on
// the wire is src/http/ (reply.ts, sse.ts).
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

/** A body already serialized to JSON, sent as is (a handler that keeps the bytes of what it serves). */
export class JsonText {
  constructor(readonly text: string | Buffer) {}
  toJSON(): unknown {
    return JSON.parse(this.text.toString());
  }
}
