// The scenario stage (docs/scenarios.md, D-120…D-124): reads a request's scenario (src/core/scenario.ts),
// refuses it where scenarios are off (D-122) or where it cannot apply (D-123), answers a scripted
// status at once (D-121), and otherwise leaves the parsed scenario on the call for the model's events
// (src/services/send/scenario-pacing.ts) and the SSE writer (src/http/sse.ts) to play.
import { type ApiError, apiError, internalError, invalidRequest } from '../core/api-errors.ts';
import { isScenarioError, parseScenario, type Scenario, shapesModel, shapesWire } from '../core/scenario.ts';
import type { AppT } from '../core/tenants.ts';
import type { Stage } from '../http/compose.ts';
import type { Call } from '../http/context.ts';
import type { ScenarioRole } from '../http/surface.ts';
import { listensOnLoopback } from '../services/webhooks/addresses.ts';
import { scriptedStep } from './test-runs.ts';

export const SCENARIO_HEADER = 'parley-scenario';
export const TEST_ID_HEADER = 'parley-test-id';
/** The widget API's stand-in for the header, for pages that cannot set headers (D-120). */
export const SCENARIO_QUERY = 'scenario';

export interface ScenarioOptions {
  /** D-122: scenarios are served (on loopback without a public URL, or `--scenarios on`). */
  enabled: boolean;
  /** The scenario may come as the `scenario` query parameter (the widget API). */
  query?: boolean;
  /** D-121: a scripted 429 carries the app's plan's `x-ratelimit-*` headers, as a real one does. */
  perMinute?: (app: AppT) => number | undefined;
}

/**
 * D-122: scenarios are a testing tool, on by default only where no one else reaches the server: it
 * listens on loopback and has no public URL; `--scenarios on|off` decides anywhere.
 */
export function scenariosOn(o: { scenarios: boolean | null; host: string; publicUrl: string | null }): boolean {
  return o.scenarios ?? (listensOnLoopback(o.host) && o.publicUrl === null);
}

/** The stage's options for a server of `config`; D-121: a scripted 429 carries the plan's figures, as a real one does. */
export function scenarioOptions(
  config: Parameters<typeof scenariosOn>[0],
  tenants: { plans: ReadonlyMap<string, { requests_per_minute: number }> },
): ScenarioOptions {
  return { enabled: scenariosOn(config), perMinute: (app) => tenants.plans.get(app.plan)?.requests_per_minute };
}

/**
 * The text of the request's scenario: its `Parley-Scenario` header, or on the widget API its `scenario`
 * query parameter (taken out of the query, which the handlers read strictly). The one place a
 * scenario's text is found: a test id's script step comes in here too.
 */
export function scenarioText(call: Call, query = false): string | undefined {
  // D-126, D-127: a request that follows a script runs its step in place of its own directives.
  const step = scriptedStep(call);
  if (step !== undefined) return step;
  const header = call.req.headers[SCENARIO_HEADER];
  if (header !== undefined) return Array.isArray(header) ? header.join(';') : header;
  if (!query || !call.req.url?.includes(`${SCENARIO_QUERY}=`)) return undefined;
  const text = call.query.get(SCENARIO_QUERY) ?? undefined;
  call.query.delete(SCENARIO_QUERY);
  return text;
}

/** D-120…D-123: the stage of a route that plays `role` (none: only `status` applies to it). */
export function scenario(o: ScenarioOptions, role: ScenarioRole | undefined): Stage<Call> {
  return (ctx, next) => {
    // The hot path: a request without a scenario costs two header look-ups.
    const h = ctx.req.headers;
    if (h[SCENARIO_HEADER] === undefined && h[TEST_ID_HEADER] === undefined && !o.query && scriptedStep(ctx) === undefined) return next();
    const text = scenarioText(ctx, o.query);
    if (text === undefined && h[TEST_ID_HEADER] === undefined) return next();
    const param = h[SCENARIO_HEADER] === undefined && text !== undefined ? SCENARIO_QUERY : 'Parley-Scenario';
    if (!o.enabled) {
      throw apiError(
        'scenarios_disabled',
        'Scenarios are off on this server (they are a testing tool, on by default only on loopback); start it with --scenarios on to use them.',
        { param: text === undefined ? 'Parley-Test-Id' : param },
      );
    }
    if (text === undefined) return next();
    const s = parseScenario(text);
    if (isScenarioError(s)) throw invalidRequest(s.message, param, 'invalid_value');
    if (s.status) throw scriptedStatus(ctx, s.status, role, o);
    applies(s, role, param);
    ctx.scenario = s;
    return next();
  };
}

/** D-123: a directive on a route it cannot shape is refused, never ignored. */
function applies(s: Scenario, role: ScenarioRole | undefined, param: string): void {
  const refuse = (what: string, where: string) =>
    invalidRequest(`The scenario directive ${what} applies only to ${where}.`, param, 'invalid_value');
  if (shapesModel(s) && role !== 'reply') throw refuse('ttft, tps, chunk, jitter, seed or fail-after', 'a request that runs the agent');
  if (shapesWire(s) && role !== 'reply' && role !== 'events')
    throw refuse('drop-after, reset-after, stall-after, malformed-after or duplicate', 'a request that writes an event stream');
  if (s.cursorExpired && role !== 'events' && role !== 'lookup') throw refuse('cursor-expired', "a response's look-up or its events");
}

/** D-123: the stream directives need a stream: on a reply answered as JSON they are refused before it runs. */
export function requireStream(s: Scenario | undefined, stream: boolean): void {
  if (s && !stream && shapesWire(s))
    throw invalidRequest(
      'The scenario directives drop-after, reset-after, stall-after, malformed-after and duplicate shape an event stream; this request asks for JSON.',
      'Parley-Scenario',
      'invalid_value',
    );
}

/** D-121: the catalogue's error for a scripted status, with the headers a real one carries. */
function scriptedStatus(ctx: Call, status: NonNullable<Scenario['status']>, role: ScenarioRole | undefined, o: ScenarioOptions): ApiError {
  const why = `Scripted by Parley-Scenario: status=${status.code}.`;
  const retry: Record<string, string> = status.retryAfterS === undefined ? {} : { 'retry-after': String(status.retryAfterS) };
  switch (status.code) {
    case 401:
      return apiError('invalid_api_key', why, { headers: retry });
    case 408:
      return apiError('request_timeout', why, { headers: retry });
    case 409:
      if (role !== 'reply' || ctx.params.conversation_id === undefined)
        return invalidRequest(
          'The scenario directive status=409 (conversation_busy) applies only to send message.',
          'Parley-Scenario',
          'invalid_value',
        );
      return apiError('conversation_busy', why, { headers: retry });
    case 429: {
      const wait = status.retryAfterS ?? 1;
      const limit = ctx.app && o.perMinute?.(ctx.app);
      const plan: Record<string, string> =
        limit === undefined || limit === null
          ? {}
          : {
              'x-ratelimit-limit-requests': String(limit),
              'x-ratelimit-remaining-requests': '0',
              'x-ratelimit-reset-requests': `${wait}s`,
            };
      return apiError('rate_limit_exceeded', why, { headers: { 'retry-after': String(wait), ...plan } });
    }
    case 500: {
      const e = internalError(ctx.requestId);
      return apiError('internal_error', `${why} ${e.message}`, { headers: retry });
    }
    case 503:
      return apiError('store_unavailable', `${why} The database is out of reach for now; retry in a moment.`, { headers: retry });
  }
}
