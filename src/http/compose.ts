// A request's stages composed into one function (after hono's compose.ts): each stage gets the request
// and `next`, the rest of the chain. It may answer or refuse without calling `next` (a CORS preflight,
// a 401), or call it once and return, or wrap, the answer it gives (idempotency keeps it for replays).

/** The rest of the chain: the stages after this one, then the handler. */
export type Next = () => Promise<unknown>;

/** One step of a request's way to its handler; it refuses by throwing (an ApiError). */
export type Stage<C> = (ctx: C, next: Next) => Promise<unknown>;

/**
 * The stages in order, then `last` (the handler). A stage that calls `next` a second time gets a
 * rejection: the stages after it and the handler run once per request, whatever a stage does.
 */
export function compose<C>(stages: readonly Stage<C>[], last: (ctx: C) => Promise<unknown>): (ctx: C) => Promise<unknown> {
  return (ctx) => {
    let reached = -1;
    const dispatch = (i: number): Promise<unknown> => {
      if (i <= reached) return Promise.reject(new Error('a stage called next() more than once'));
      reached = i;
      try {
        const stage = stages[i];
        return stage ? stage(ctx, () => dispatch(i + 1)) : last(ctx);
      } catch (err) {
        return Promise.reject(err);
      }
    };
    return dispatch(0);
  };
}
