// Test helpers for streams: an SSE client built on eventsource-parser, and the output a stream carried.
import { createParser } from 'eventsource-parser';
import { KEY } from './helpers.ts';

export interface ParsedEvent {
  event: string;
  data: any;
}

export interface SseResult {
  status: number;
  headers: Headers;
  events: ParsedEvent[];
  comments: string[];
  /** The body when the server answered with JSON instead of a stream (an error before the first event). */
  json?: any;
}

/** POSTs and reads the whole SSE stream (or a JSON error). `onEvent` may abort the request midway. */
export async function postSse(
  baseUrl: string,
  urlPath: string,
  body: unknown,
  opts: { key?: string; signal?: AbortSignal; headers?: Record<string, string>; onEvent?: (e: ParsedEvent) => void } = {},
): Promise<SseResult> {
  const res = await fetch(baseUrl + urlPath, {
    method: 'POST',
    headers: { ...opts.headers, authorization: `Bearer ${opts.key ?? KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: opts.signal,
  });
  const result: SseResult = { status: res.status, headers: res.headers, events: [], comments: [] };
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
    result.json = await res.json();
    return result;
  }
  const parser = createParser({
    onEvent: (e) => {
      const parsed = { event: e.event ?? 'message', data: JSON.parse(e.data) };
      result.events.push(parsed);
      opts.onEvent?.(parsed);
    },
    onComment: (c) => result.comments.push(c),
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body!) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
  } catch (err) {
    if (!opts.signal?.aborted) throw err;
  }
  return result;
}

/** Event names in order, with runs of deltas collapsed to `name*` so sequences read like a grammar. */
export function shape(events: ParsedEvent[]): string[] {
  const out: string[] = [];
  for (const e of events) {
    const name = e.event.endsWith('.delta') ? `${e.event}*` : e.event;
    if (name.endsWith('*') && out.at(-1) === name) continue;
    out.push(name);
  }
  return out;
}

/** §6's order of a reply that calls a tool and then answers (the knowledge app's), as `shape` gives it. */
export const TOOL_THEN_TEXT = [
  'response.created',
  'response.function_call.start',
  'response.function_call_arguments.delta*',
  'response.function_call_arguments.done',
  'response.output_text.delta*',
  'response.output_text.done',
  'response.completed',
];

/** Rebuilds the `output` array from the events, the way a client would (§6 rule 4). */
export function outputFromEvents(events: ParsedEvent[]): any[] {
  const output: any[] = [];
  for (const { event, data } of events) {
    if (event === 'response.output_text.delta') {
      output[data.output_index] ??= { type: 'message', role: 'assistant', content: [{ type: 'text', text: '' }] };
      output[data.output_index].content[data.content_index].text += data.delta;
    } else if (event === 'response.function_call.start') {
      output[data.output_index] = { type: 'function_call', name: data.name, arguments: '', call_id: data.call_id };
    } else if (event === 'response.function_call_arguments.delta') {
      output[data.output_index].arguments += data.delta;
    } else if (event === 'response.data_spec') {
      output[data.output_index] = { type: 'data_spec', data: data.data };
    }
  }
  return output;
}

/** Call ids are random (D-7): compare outputs with them masked. */
export function maskCallIds<T>(v: T): T {
  return JSON.parse(JSON.stringify(v).replace(/call_[0-9a-f]{24}/g, 'call_*'));
}
