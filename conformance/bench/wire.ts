// The bench's client: one keep-alive pool per subject (the target, its floor), JSON requests timed from
// the first byte sent to the whole answer read, and SSE streams read with the time each event arrived.
import { createParser } from 'eventsource-parser';
import { Agent, request } from 'undici';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: unknown;
  /** The body as received (the floor answers these same bytes). */
  text: string;
}

export interface TimedEvent {
  type: string;
  data: string;
  /** Milliseconds since the request was sent. */
  at: number;
}

export interface StreamRead {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  events: TimedEvent[];
}

/** What a request sends below a subject's base URL. */
export interface Call {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * A server the bench measures: the implementation, or the floor that stands in for it. Both are asked
 * the same requests by the same code, so that a ratio compares only what answers them.
 */
export class Subject {
  readonly #agent: Agent;

  constructor(
    readonly name: 'target' | 'floor',
    readonly baseUrl: string,
    readonly apiKey: string,
    connections = 16,
  ) {
    this.#agent = new Agent({ connections, keepAliveTimeout: 10_000 });
  }

  #headers(call: Call): Record<string, string> {
    return {
      authorization: `Bearer ${this.apiKey}`,
      ...(call.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...call.headers,
    };
  }

  /** One request; the answer's body parsed as JSON (undefined when it is not). */
  async send(call: Call, signal?: AbortSignal): Promise<Answer> {
    const res = await request(`${this.baseUrl}${call.path}`, {
      method: call.method,
      headers: this.#headers(call),
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
      dispatcher: this.#agent,
      signal,
    });
    const text = await res.body.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, headers: res.headers, json, text };
  }

  /**
   * A stream read to its end (or until `stop` says so after an event), each event with its arrival
   * time; `onEvent` may act mid-stream (the cancel figure sends its cancel from there).
   */
  async stream(call: Call, onEvent?: (e: TimedEvent, read: StreamRead) => 'stop' | undefined): Promise<StreamRead> {
    const start = performance.now();
    const abort = new AbortController();
    const res = await request(`${this.baseUrl}${call.path}`, {
      method: call.method,
      headers: { ...this.#headers(call), accept: 'text/event-stream' },
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
      dispatcher: this.#agent,
      signal: abort.signal,
    });
    const events: TimedEvent[] = [];
    const read: StreamRead = { status: res.statusCode, headers: res.headers, events };
    let stopped = false;
    const parser = createParser({
      onEvent: (m) => {
        if (stopped) return;
        const e = { type: m.event ?? 'message', data: m.data, at: performance.now() - start };
        events.push(e);
        if (onEvent?.(e, read) === 'stop') stopped = true;
      },
    });
    try {
      for await (const chunk of res.body) {
        parser.feed((chunk as Buffer).toString('utf8'));
        if (stopped) break;
      }
    } finally {
      if (stopped) abort.abort();
      res.body.destroy();
    }
    return read;
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

/** A terminal event of §6 (and of D-33's cancel). */
export function isTerminal(type: string): boolean {
  return type === 'response.completed' || type === 'response.failed';
}
