// A cap on the SSE streams an app holds open at once, so that one app's clients cannot tie up the
// process (each stream holds a model call and a socket); past it, a 429 before anything starts.
import type { ServerResponse } from 'node:http';
import { apiError } from './errors.ts';

/** Concurrent streams per app (documented in docs/reliability.md). */
export const MAX_STREAMS_PER_APP = 64;

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
    this.open.set(appId, n + 1);
    res.once('close', () => {
      const left = (this.open.get(appId) ?? 1) - 1;
      if (left > 0) this.open.set(appId, left);
      else this.open.delete(appId);
    });
  }

  count(appId: string): number {
    return this.open.get(appId) ?? 0;
  }
}
