// D-125…D-127: the stage that gives a request its turn in its test run (src/services/test-runs.ts) and
// lists it there once answered, with the status its answer has. It runs before the scenario's own stage
// (on /v1 once the key and the app are known; on /widget/v1 before the widget's gate, the app being the
// path's and the key the publishable one the request names), which runs the step `scriptedStep` gives
// in place of the request's own directives.
import { ApiError } from '../core/api-errors.ts';
import type { Stage } from '../http/compose.ts';
import type { Call } from '../http/context.ts';
import { Asset, NoContent } from '../http/reply.ts';
import type { KeyT } from '../core/tenants.ts';
import type { Answered, TestRunService } from '../services/test-runs.ts';

/** The step each request that follows a script runs, by request. */
const scripted = new WeakMap<Call, string>();

/**
 * D-126, D-127: the step of its script a request runs (a directive list, maybe empty); undefined when it
 * follows no script (then its own `Parley-Scenario`, if any, is all it runs).
 */
export function scriptedStep(ctx: Call): string | undefined {
  return scripted.get(ctx);
}

/** The status of a handler's outcome as the transport writes it (src/http/write.ts): an error's own, 204, an asset's, or 200. */
export function answeredStatus(outcome: { reply: unknown } | { error: unknown }): Answered {
  if ('error' in outcome) {
    const e = outcome.error;
    // Anything but an ApiError is answered 500 (D-5).
    return e instanceof ApiError ? { status: e.status, retryAfter: 'retry-after' in e.headers } : { status: 500, retryAfter: false };
  }
  const r = outcome.reply;
  return { status: r instanceof NoContent ? 204 : r instanceof Asset ? r.status : 200, retryAfter: false };
}

/**
 * The widget API's view of a request before its gate (D-127, D-120): the publishable key it names, and
 * whether its `scenario` query parameter brings a scenario of its own, as the header would.
 */
export type BeforeGate = (ctx: Call) => { key: () => KeyT | undefined; ownQuery: boolean };

/** D-125: counts the request in its test run, then lists it with its answer's status (a request of none passes by). */
export function testRun(runs: TestRunService, widget?: BeforeGate): Stage<Call> {
  return async (ctx, next) => {
    const appId = ctx.app?.id ?? ctx.params.app_id;
    if (appId === undefined) throw new Error('testRun runs on a path of an app');
    const path = (ctx.req.url ?? '').split('?')[0]!;
    const pending = runs.begin({
      req: ctx.req,
      path,
      query: ctx.query,
      appId,
      ...(widget ? widget(ctx) : { key: () => ctx.key, ownQuery: false }),
    });
    if (!pending) return next();
    const turn = await pending;
    if (turn.step !== undefined) scripted.set(ctx, turn.step);
    let outcome: { reply: unknown } | { error: unknown };
    try {
      outcome = { reply: await next() };
    } catch (error) {
      outcome = { error };
    }
    // A run that cannot be written to does not change the request's own answer.
    await turn.finish(answeredStatus(outcome)).catch((err: Error) => ctx.log.warn({ err: err.message }, 'test run: request not listed'));
    if ('error' in outcome) throw outcome.error;
    return outcome.reply;
  };
}
