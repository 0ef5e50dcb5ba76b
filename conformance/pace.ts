// How fast a run may send: --rate-limit N/s spaces every request, and the counted requests (create
// conversation, send message, completion) stay under the 3,000 a minute the target format asks for.
// One pacer serves the cases and the cleanup, so that both count against the same limits.

/** Below 3,000, for the server's minute and ours not starting at the same instant. */
const COUNTED_PER_MINUTE = 2_900;

/** The requests that a plan's limit may count: create conversation, send message, completion (§8, D-23, D-110). */
export function isCounted(method: string, path: string): boolean {
  const p = path.split('?')[0]!;
  // Send message (§4.6) and completion (§4.7) count wherever the plan counts (D-23), and so does create
  // conversation in the reference (D-110): the budget counts all three so it holds either way.
  return method === 'POST' && /^\/apps\/[^/]+\/(?:conversations(?:\/[^/]+)?|completions)$/.test(p);
}

/** `5/s`, `5`, `300/min` → requests per second; a usage error message otherwise. */
export function parseRate(v: string): number | string {
  const m = /^(\d+(?:\.\d+)?)\s*(?:\/\s*(s|sec|second|m|min|minute))?$/i.exec(v.trim());
  if (!m || Number(m[1]) <= 0) return `--rate-limit must be a positive rate such as 5/s or 300/min, not ${JSON.stringify(v)}`;
  return /^m/i.test(m[2] ?? 's') ? Number(m[1]) / 60 : Number(m[1]);
}

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const sleep: Sleep = (ms, signal) =>
  new Promise((resolve) => {
    if (ms <= 0 || signal?.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export interface PacerOptions {
  /** --rate-limit: requests per second, every request. */
  perSecond?: number;
  /** Counted requests in any 60 s (default COUNTED_PER_MINUTE). */
  countedPerMinute?: number;
  now?: () => number;
  sleep?: Sleep;
}

export class Pacer {
  #next = 0;
  #counted: number[] = [];
  #queue: Promise<void> = Promise.resolve();
  readonly #now: () => number;
  readonly #sleep: Sleep;

  constructor(readonly opts: PacerOptions = {}) {
    this.#now = opts.now ?? Date.now;
    this.#sleep = opts.sleep ?? sleep;
  }

  /** Resolves when the request may go; requests go in the order they asked. */
  before(method: string, path: string, signal?: AbortSignal): Promise<void> {
    const turn = this.#queue.then(() => this.#wait(isCounted(method, path), signal));
    this.#queue = turn.catch(() => {});
    return turn;
  }

  async #wait(counted: boolean, signal?: AbortSignal): Promise<void> {
    const interval = this.opts.perSecond ? 1000 / this.opts.perSecond : 0;
    let at = Math.max(this.#now(), this.#next);
    if (counted) {
      const max = this.opts.countedPerMinute ?? COUNTED_PER_MINUTE;
      this.#counted = this.#counted.filter((t) => t > at - 60_000);
      // The window is full: wait until its oldest request leaves it.
      if (this.#counted.length >= max) at = Math.max(at, this.#counted[this.#counted.length - max]! + 60_000);
    }
    await this.#sleep(at - this.#now(), signal);
    this.#next = at + interval;
    if (counted) this.#counted.push(at);
  }
}

/** Retry-After in seconds or as an HTTP date → milliseconds to wait; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
