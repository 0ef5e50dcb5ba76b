// The SSE writer (§6, D-16, D-18): exact framing, one write per event, backpressure, keep-alive
// comments while the model is silent, and the connection closed after the terminal event.
import type { ServerResponse } from 'node:http';
import type { StreamEvent, UnsequencedEvent } from '../contract/index.ts';
import { type WireScenario, writeShaped } from './sse-scenario.ts';

/** D-18: how often a silent stream gets a `: keep-alive` comment (overridable for tests). */
const DEFAULT_KEEP_ALIVE_MS = 15_000;

/** `event: <type>\ndata: <json>\n\n`. JSON.stringify never emits a raw newline, so one data line suffices. */
export function formatSseEvent(e: StreamEvent, withId = false): string {
  // D-32: the resume endpoint's events carry their sequence number as the SSE id (Last-Event-ID).
  const id = withId ? `id: ${(e.data as { sequence_number: number }).sequence_number}\n` : '';
  return `${id}event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`;
}

/** D-16: the one place where events get their `type` and their gapless `sequence_number` (from `first`, D-32). */
export async function* sequenced(events: AsyncIterable<UnsequencedEvent>, first = 0): AsyncGenerator<StreamEvent> {
  let n = first;
  for await (const e of events) yield stamp(e, n++);
}

function stamp(e: UnsequencedEvent, n: number): StreamEvent {
  return { event: e.event, data: { type: e.event, sequence_number: n, ...e.data } } as StreamEvent;
}

/** The text `streamSse` writes for `events` (keep-alive comments aside): what a replay must send again. */
export function sseText(events: readonly UnsequencedEvent[]): string {
  return events.map((e, n) => formatSseEvent(stamp(e, n))).join('');
}

/** sseText's inverse: the events of a kept stream, unstamped, so that `sequenced` stamps them the same. */
export function eventsOfSseText(text: string): UnsequencedEvent[] {
  const out: UnsequencedEvent[] = [];
  for (const m of text.matchAll(/^event: (.*)\ndata: (.*)$/gm)) {
    const { type: _type, sequence_number: _n, ...data } = JSON.parse(m[2]!) as Record<string, unknown>;
    out.push({ event: m[1], data } as UnsequencedEvent);
  }
  return out;
}

/** Writes one chunk; waits for 'drain' when the socket's buffer is full (or for the socket to close). */
async function write(res: ServerResponse, chunk: string): Promise<void> {
  if (res.destroyed || res.writableEnded) return;
  const sent = res.write(chunk);
  // node:http corks the socket until the next tick, and a producer that runs on microtasks (the
  // local engine) starves that tick: every event, the first included, then waited for the end of
  // the whole reply (docs/benchmarks.md). Uncorked, each event leaves when written.
  if (res.socket?.writableCorked) res.socket.uncork();
  if (sent) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

export async function writeSseEvent(res: ServerResponse, e: StreamEvent, withId = false): Promise<void> {
  await write(res, formatSseEvent(e, withId));
}

export interface SseOptions {
  keepAliveMs?: number;
  /** Extra headers, e.g. D-23's rate-limit headers. */
  headers?: Record<string, string>;
  /** D-32: the first sequence number, and `id:` lines (the resume endpoint). */
  numbering?: { first: number; ids: boolean };
  /** D-124: the wire's directives of the request's scenario. */
  wire?: WireScenario;
}

/** D-18's headers of a stream (a live one or an Idempotency-Key replay), after `extra`. */
function writeSseHead(res: ServerResponse, extra: Record<string, string> = {}): void {
  res.writeHead(200, {
    ...extra,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    // A server shutting down has set `Connection: close` already: the stream must not undo it.
    ...(res.hasHeader('connection') ? {} : { connection: 'keep-alive' }),
    // Reverse proxies (nginx) would otherwise buffer the stream.
    'x-accel-buffering': 'no',
  });
}

/**
 * Streams `events` as SSE on `res`: sends the headers, stamps and writes each event at once, keeps
 * the connection alive while nothing comes, and ends the response after the last event. A client
 * that went away makes every further write a no-op; the producer sees its abort signal instead.
 */
export async function streamSse(res: ServerResponse, events: AsyncIterable<UnsequencedEvent>, opts: SseOptions = {}): Promise<void> {
  writeSseHead(res, opts.headers);
  // The headers normally leave in one packet with `response.created`, which every stream yields at
  // once; if the first event is not ready by the next turn of the event loop, they go alone.
  const flush = setImmediate(() => {
    if (!res.headersSent && !res.destroyed) res.flushHeaders();
  });
  const interval = opts.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  let writing = Promise.resolve();
  let quiet = false;
  const timer = setInterval(() => {
    if (!quiet) writing = writing.then(() => write(res, ': keep-alive\n\n'));
  }, interval);
  timer.unref();
  const ids = opts.numbering?.ids ?? false;
  const wire = opts.wire;
  const lent = wire && {
    write: (chunk: string) => write(res, chunk),
    hush: (on: boolean) => {
      quiet = on;
      timer.refresh();
    },
  };
  let n = 0;
  let cut = false;
  try {
    for await (const e of sequenced(events, opts.numbering?.first ?? 0)) {
      // An event resets the silence: the next comment comes a full interval later.
      timer.refresh();
      await writing;
      if (!lent) await writeSseEvent(res, e, ids);
      else if (await writeShaped(res, lent, formatSseEvent(e, ids), ++n, wire)) {
        cut = true;
        break;
      }
    }
  } finally {
    clearImmediate(flush);
    clearInterval(timer);
    await writing;
    // A cut connection (D-124) gets no end: the client sees it cut, as after a real network failure.
    if (!cut && !res.destroyed && !res.writableEnded) res.end();
  }
}
