// A response under way: its headers, its body still to read, and the deadline that bounds the reading.
import type { Dispatcher } from 'undici';
import type { ParleyError } from './error.ts';

export interface SentResponse {
  url: string;
  method: string;
  status: number;
  headers: Record<string, string>;
  body: Dispatcher.ResponseData['body'];
  deadline: Deadline;
  networkError(err: unknown): ParleyError;
}

/**
 * The timeout of one request: from sending it to its headers, then the longest silence in its body.
 * undici's headersTimeout and bodyTimeout run on its coarse "fast timers" (lib/util/timers.js: a
 * clock that ticks every 499 ms), so below about a second they fire late, and a body timer refreshed
 * by chunks more often than it ticks never fires at all. This one is a plain Node timer, restarted
 * by every chunk, that aborts the request.
 */
export class Deadline {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  /** Whether the headers arrived, i.e. whether an expiry is a silent body rather than no answer. */
  answered = false;

  constructor(ms: number) {
    this.#timer = setTimeout(() => this.#controller.abort(), ms);
    // The open socket keeps the process alive while a request is under way; the timer need not.
    this.#timer.unref();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get expired(): boolean {
    return this.#controller.signal.aborted;
  }

  headersArrived(): void {
    this.answered = true;
    this.#timer.refresh();
  }

  /** Something arrived: the wait starts again. */
  refresh(): void {
    if (!this.expired) this.#timer.refresh();
  }

  clear(): void {
    clearTimeout(this.#timer);
  }
}

export function isEventStream(headers: Record<string, string>): boolean {
  return (headers['content-type'] ?? '').toLowerCase().startsWith('text/event-stream');
}

export function flattenHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** The whole body as text; each chunk restarts the deadline, so a slow but steady body is not cut. */
export async function readBody(res: SentResponse): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  try {
    for await (const chunk of res.body) {
      res.deadline.refresh();
      text += decoder.decode(chunk as Uint8Array, { stream: true });
    }
    return text + decoder.decode();
  } catch (err) {
    throw res.networkError(err);
  } finally {
    res.deadline.clear();
  }
}
