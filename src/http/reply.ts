// What a handler or a stage answers, as a value: the JSON body of a 200 (any value, or a JsonText
// already serialized), an EventStream, an Asset or NoContent; and `sendJson`, the one place a JSON
// answer's type and length are set. Only the server writes an answer (src/http/server.ts); a stage such
// as idempotency wraps it after `next()`, as hono middleware does, and never touches the response object.
import type { ServerResponse } from 'node:http';
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

/** An empty 204 with its headers (a CORS preflight's). */
export class NoContent {
  constructor(readonly headers: Readonly<Record<string, string>>) {}
}

/** A body already serialized to JSON, sent as is (a handler that keeps the bytes of what it serves). */
export class JsonText {
  constructor(readonly text: string | Buffer) {}
  toJSON(): unknown {
    return JSON.parse(this.text.toString());
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = body instanceof JsonText ? body.text : JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
