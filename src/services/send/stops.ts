// The ways a reply stops short of completing, each with the error its response (or completion) then
// carries: one table, read by the runner, the response service and the idempotency stage's replay.
// A model's own failure carries the model's code instead (D-17).
import type { ResponseErrorT } from '../../contract/index.ts';
import { ModelError } from '../../engines/types.ts';

/** docs/responses.md "Error codes of a stopped response" and docs/agent.md. */
export const STOPS = {
  /** D-33: a cancel, asked of any instance. */
  cancelled: { type: 'request_aborted', code: 'cancelled', message: 'The response was cancelled.' },
  /** D-34: past the app's `max_duration_seconds`. */
  timeout: {
    type: 'request_aborted',
    code: 'response_timeout',
    message: 'The response ran past the maximum duration of its app and was stopped.',
  },
  /** D-34 (D-19 for completions): the client left and the reply could not run on without it. */
  disconnected: {
    type: 'request_aborted',
    code: 'client_disconnected',
    message: 'The client disconnected before the response was complete.',
  },
  /** D-38: a shutdown past its grace, or a crash found at start-up. */
  interrupted: { type: 'server_error', code: 'interrupted', message: 'The server stopped before the response was complete.' },
  /**
   * D-91: the store was out of reach for longer than this instance could prove it lives (its lease):
   * the reply stopped, and is saved failed as soon as the store is back.
   */
  storeUnavailable: {
    type: 'server_error',
    code: 'store_unavailable',
    message:
      'The response stopped because the database was out of reach; it is saved as failed once the database is back. Retry the message.',
  },
  /** D-124: the `fail-after` directive of the request's scenario (docs/scenarios.md). */
  scripted: { type: 'server_error', code: 'scripted_fault', message: 'The response failed as its scenario asked (fail-after).' },
  /** A bug: the details stay in the log. */
  failed: { type: 'internal_error', code: 'internal_error', message: 'The response failed because of an unexpected server error.' },
  /**
   * D-5: the exchange could not be saved (a full disk). Nothing of it was kept, so the client must not
   * believe it was: JSON mode answers 500, a stream ends with this error (see `answerOf`).
   */
  unsaved: {
    type: 'internal_error',
    code: 'internal_error',
    message: 'The response could not be saved because of a server storage error; it was not added to the conversation. Retry the message.',
  },
  /** D-5: as `unsaved`, for a completion (its usage line is its only save). */
  unsavedCompletion: {
    type: 'internal_error',
    code: 'internal_error',
    message: 'The completion could not be recorded because of a server storage error. Retry the request.',
  },
} as const satisfies Record<string, ResponseErrorT>;

/** Why a run was stopped on purpose, as its abort reason: one of the table's errors. */
export class StopReason extends Error {
  constructor(readonly error: ResponseErrorT) {
    super(error.message);
    this.name = 'StopReason';
  }
}

/** D-17, D-19 (revised by D-34): the error a run that failed carries; internals stay in the log. */
export function stopError(err: unknown, signal: AbortSignal): ResponseErrorT {
  if (signal.aborted) return signal.reason instanceof StopReason ? signal.reason.error : STOPS.disconnected;
  // A stop the run gave itself (a scenario's scripted fault, D-124).
  if (err instanceof StopReason) return err.error;
  if (err instanceof ModelError) return { type: 'model_error', code: err.code, message: err.message };
  return STOPS.failed;
}
