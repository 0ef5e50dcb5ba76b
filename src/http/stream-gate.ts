// A cap on the SSE streams an app holds open at once, so that one app's clients cannot tie up the
// process (each stream holds a model call and a socket); past it, a 429 before anything starts. A
// surface may count its streams in pools of its own (D-92: the widget's, and each visitor's, apart
// from the REST API's), each with its own cap.
import type { ServerResponse } from 'node:http';
import { type ApiError, apiError } from '../core/api-errors.ts';

/** Concurrent streams per app (documented in docs/reliability.md). */
export const MAX_STREAMS_PER_APP = 64;

/** A pool of stream slots: its key, its cap, and the refusal once it is full. */
export interface StreamPool {
  key: string;
  max: number;
  refusal(): ApiError;
}

export class StreamGate {
  private readonly open = new Map<string, number>();

  constructor(readonly max = MAX_STREAMS_PER_APP) {}

  /** Admits one stream for `appId` until `res` closes, or throws 429 `too_many_streams`. */
  enter(appId: string, res: ServerResponse): void {
    const n = this.open.get(appId) ?? 0;
    if (n >= this.max) {
      throw apiError(
        'too_many_streams',
        `App ${JSON.stringify(appId)} already has ${this.max} streams open; retry when one has finished, or ask for JSON (stream: false).`,
      );
    }
    this.take(appId, n, res);
  }

  /** Admits one stream in every pool of `pools` until `res` closes, or throws the first full pool's refusal. */
  enterAll(pools: readonly StreamPool[], res: ServerResponse): void {
    for (const p of pools) if ((this.open.get(p.key) ?? 0) >= p.max) throw p.refusal();
    for (const p of pools) this.take(p.key, this.open.get(p.key) ?? 0, res);
  }

  private take(key: string, n: number, res: ServerResponse): void {
    this.open.set(key, n + 1);
    res.once('close', () => {
      const left = (this.open.get(key) ?? 1) - 1;
      if (left > 0) this.open.set(key, left);
      else this.open.delete(key);
    });
  }

  count(key: string): number {
    return this.open.get(key) ?? 0;
  }
}
