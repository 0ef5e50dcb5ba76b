// What a case works with: the target, the profile's schemas, a recording HTTP client, assertions that
// carry the exchange that broke them, run-level memos (baselines) and the list of what to clean up.
import type { z } from 'zod';
import type { Capability } from './capabilities.ts';
import * as C from '../src/contract/index.ts';
import { type HttpClient, TransportError, type Exchange, type OutgoingRequest } from './http.ts';
import { sleep } from './pace.ts';
import type { Receiver } from './receiver.ts';
import { targetValue, type Target, type TargetKey } from './target.ts';
import { HOSTILE_TEXT } from './text.ts';

export type Profile = 'spec' | 'reference';
export type Level = 'MUST' | 'REFERENCE';

export interface CaseDef {
  /** Stable: `S<section>-<slug>`. */
  id: string;
  /** The interface section it checks, e.g. `4.2`. */
  section: string;
  level: Level;
  description: string;
  /** The clauses it checks (interface-clauses.ts): `§4.6.stream-true`, `§5.6.missing-key@send`, `D-12`. */
  clauses: string[];
  /** Target keys the case cannot run without. */
  needs?: TargetKey[];
  /**
   * The extension of Parley's it exercises (capabilities.ts), if any: skipped when the target does not
   * claim it, and scored under it (D-105, extended). Only REFERENCE cases have one.
   */
  capability?: Capability;
  /**
   * Other extensions its requests reach, only where the target claims them: a resumable case cuts its
   * stream with a scenario (D-124), a scenario case resumes what it cut. Not scored under them.
   */
  uses?: Capability[];
  /** Never run again by --retry-failed, and why: a retry would meet what the first try used up (a rate limit). */
  noRetry?: string;
  run(ctx: CaseContext): Promise<void>;
}

/** A failed expectation, with the exchange that showed it. */
export class CaseFailure extends Error {
  override name = 'CaseFailure';
  constructor(
    message: string,
    readonly exchange?: Exchange,
  ) {
    super(message);
  }
}

/** A precondition shared by several cases (`ctx.once`) failed: in `shownBy`, with these exchanges. */
export class PreconditionFailure extends CaseFailure {
  override name = 'PreconditionFailure';
  constructor(
    readonly precondition: string,
    readonly shownBy: string,
    message: string,
    exchange: Exchange | undefined,
    readonly exchanges: Exchange[],
  ) {
    super(`precondition "${precondition}" did not pass: ${message}`, exchange);
  }
}

/**
 * D-176: a case's set-up met a state an earlier run left the implementation in (a rate-limit window
 * still full past --window-wait): nothing was judged, so the case is errored, never failed; its
 * message names the flag that would have let it wait.
 */
export class SetupUnmet extends CaseFailure {
  override name = 'SetupUnmet';
}

/** D-176: how long a case's set-up waits out a full window by default: a minute, the longest a plan's is. */
export const DEFAULT_WINDOW_WAIT_MS = 60_000;

/** The case cannot judge this target (e.g. the agent never called a function); never a pass. */
export class CaseSkip extends Error {
  override name = 'CaseSkip';
}

/** Schemas of the profile: the interface's own, or the reference's D-n extensions. */
function schemasFor(profile: Profile) {
  const ref = profile === 'reference';
  return {
    conversation: ref ? C.ReferenceConversation : C.Conversation,
    conversationWithItems: ref ? C.ReferenceConversationWithItems : C.ConversationWithItems,
    list: ref ? C.ReferenceConversationList : C.ConversationList,
    deletion: C.DeletionResult,
    response: ref ? C.ReferenceResponse : C.ResponseWithDefaults,
    completion: ref ? C.ReferenceCompletion : C.Completion,
    config: C.AppConfig,
    metrics: C.AppMetrics,
    error: ref ? C.ReferenceErrorBody : C.ErrorBody,
    events: (ref ? C.ReferenceEventPayload : C.SpecEventPayload) as Record<C.StreamEventType, z.ZodType>,
  };
}
export type Schemas = ReturnType<typeof schemasFor>;

export interface RunState {
  target: Target;
  profile: Profile;
  runId: string;
  http: HttpClient;
  memo: Map<string, Promise<unknown>>;
  /** The run's --timeout, per request. */
  timeoutMs: number;
  /** The run's --settle-timeout: how long a case waits for what an implementation may settle after it answered. */
  settleTimeoutMs: number;
  /** D-176: the run's --window-wait: how long a case's set-up waits out a window an earlier run left full. */
  windowWaitMs: number;
  onWait?: (caseId: string, ms: number, why: string) => void;
  /** Conversations to delete at the end: [app_id, conversation_id, the key that created it when not the target's]. */
  created: Array<[string, string, string?]>;
  /** The webhook cases' receiver, admin session and endpoints, shared by a run's tries and undone at its end (D-109, extended). */
  webhooks: WebhookRun;
}

/** D-146: the run id a replayed model is given on every run. */
export const REPLAY_RUN = 'replay';

/** What the webhook cases set up once a run, and what the runner undoes (cases/webhooks.ts). */
export interface WebhookRun {
  /** --receiver-url: where the implementation can reach the suite's receiver (else loopback). */
  receiverUrl?: string;
  receiver?: Receiver;
  /** The admin session's headers (cookie and CSRF token), signed out at the end. */
  session?: Record<string, string>;
  /** Endpoints the run registered, deleted at the end. */
  endpoints: string[];
}

export interface ExpectedError {
  status?: number;
  type?: string;
  param?: string | null;
  code?: string | null;
}

export class CaseContext {
  readonly target: Target;
  readonly profile: Profile;
  readonly runId: string;
  readonly schemas: Schemas;
  /** Every exchange of this case, in order (the report shows the failing one). */
  readonly exchanges: Exchange[] = [];

  constructor(
    private readonly run: RunState,
    readonly caseDef: CaseDef,
  ) {
    this.target = run.target;
    this.profile = run.profile;
    this.runId = run.runId;
    this.schemas = schemasFor(run.profile);
  }

  get reference(): boolean {
    return this.profile === 'reference';
  }

  /** The external_user_id that tags what this run creates. */
  get tag(): string {
    return `conformance-${this.runId}`;
  }

  /**
   * Metadata that tags what this run creates, with a string that must come back byte for byte (cases/common.ts, HOSTILE_TEXT).
   * It reaches the model (as data): on a replayed model (D-146) its run is the fixed `replay`, so that every run asks the same.
   */
  get tagMetadata(): Record<string, string> {
    return { conformance_run: this.target.replay ? REPLAY_RUN : this.runId, conformance_text: HOSTILE_TEXT };
  }

  /** The value of a target key; a missing one skips the case with the key it needs. */
  app(key: TargetKey): string {
    const v = targetValue(this.target, key);
    if (!v) throw new CaseSkip(`needs target key ${key}`);
    return v;
  }

  /** The webhook cases' run-wide state. */
  get webhooks(): WebhookRun {
    return this.run.webhooks;
  }

  /** The run's stop signal (a wait for a delivery ends with it). */
  get signal(): AbortSignal | undefined {
    return this.run.http.opts.signal;
  }

  /**
   * One exchange, recorded for the report; `shown` replaces what the report must not show of it (an
   * admin's password, a session cookie), and the caller gets it as shown, so that a failure that
   * names it shows nothing else.
   */
  async send(r: OutgoingRequest, shown?: (ex: Exchange) => Exchange): Promise<Exchange> {
    try {
      const sent = await this.run.http.send(r);
      const ex = shown ? shown(sent) : sent;
      this.exchanges.push(ex);
      // Whatever a run manages to create is deleted at the end, even where a case expected a refusal.
      const created = r.method === 'POST' && ex.status === 200 ? /^\/apps\/([^/]+)\/conversations$/.exec(r.path.split('?')[0]!) : null;
      const id = (ex.json as { id?: unknown } | undefined)?.id;
      // D-48: a conversation a visitor created through the widget API is its app's too, deleted with the target's key.
      if (created && typeof id === 'string')
        this.track(decodeURIComponent(created[1]!), id, r.baseUrl === undefined ? (r.key ?? undefined) : undefined);
      return ex;
    } catch (err) {
      if (err instanceof TransportError) {
        const failed: Exchange = {
          request: err.request,
          status: 0,
          headers: new Headers(),
          text: `(${err.message})`,
          json: undefined,
          ms: 0,
        };
        const ex = shown ? shown(failed) : failed;
        this.exchanges.push(ex);
        throw new CaseFailure(`request failed: ${err.message}`, ex);
      }
      throw err;
    }
  }

  /**
   * Runs `fn` once per run (and repetition) and shares its result with every case that asks. When it
   * fails, the case that ran it fails with its evidence, and every later case that asks is reported
   * errored, blocked by it (the runner groups them under the precondition).
   */
  once<T>(key: string, fn: () => Promise<T>): Promise<T> {
    let p = this.run.memo.get(key) as Promise<T> | undefined;
    if (!p) {
      const from = this.exchanges.length;
      p = fn().catch((err: unknown) => {
        // The innermost precondition is the one that blocks.
        if (err instanceof CaseFailure && !(err instanceof PreconditionFailure))
          throw new PreconditionFailure(key, this.caseDef.id, err.message, err.exchange, this.exchanges.slice(from));
        throw err;
      });
      this.run.memo.set(key, p);
    }
    return p;
  }

  /**
   * Reads `read` until `done` holds or the run's settle timeout has passed, and returns the last
   * value: for what the interface lets an implementation settle after it answered (aggregated
   * metrics, a title generated "after the first exchange"). The caller asserts on the value it gets.
   */
  async poll<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + this.run.settleTimeoutMs;
    for (let wait = 50; ; wait = Math.min(wait * 2, 1000)) {
      const value = await read();
      const left = deadline - Date.now();
      if (done(value) || left <= 0) return value;
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, left)));
    }
  }

  /** Waits `ms` (a Retry-After), or less if the run is stopped meanwhile. */
  wait(ms: number): Promise<void> {
    return sleep(ms, this.run.http.opts.signal);
  }

  /** D-176: the run's --window-wait, in milliseconds. */
  get windowWaitMs(): number {
    return this.run.windowWaitMs;
  }

  /** D-176: waits `ms` for `why` in a case's set-up, said in the progress lines first. */
  async setupWait(ms: number, why: string): Promise<void> {
    this.run.onWait?.(this.caseDef.id, ms, why);
    await this.wait(ms);
  }

  /** The run's --settle-timeout, in milliseconds. */
  get settleTimeoutMs(): number {
    return this.run.settleTimeoutMs;
  }

  /** `key`: the key that can delete it (another team's), when not the target's `api_key`. */
  track(appId: string, conversationId: string, key?: string): void {
    if (!this.run.created.some(([a, c]) => a === appId && c === conversationId))
      this.run.created.push(key && key !== this.target.apiKey ? [appId, conversationId, key] : [appId, conversationId]);
  }

  fail(message: string, ex?: Exchange): never {
    throw new CaseFailure(message, ex ?? this.exchanges.at(-1));
  }

  check(cond: unknown, message: string, ex?: Exchange): void {
    if (!cond) this.fail(message, ex);
  }

  equal(actual: unknown, expected: unknown, what: string, ex?: Exchange): void {
    if (deepEqual(actual, expected)) return;
    if (Array.isArray(actual) && Array.isArray(expected)) {
      // Point at the first difference: long arrays do not fit in one line.
      const i = expected.findIndex((e, j) => !deepEqual(actual[j], e));
      const at = i === -1 ? expected.length : i;
      this.fail(
        `${what}: expected ${expected.length} entries, got ${actual.length}; first difference at [${at}]: expected ${show(expected[at])}, got ${show(actual[at])}`,
        ex,
      );
    }
    this.fail(`${what}: expected ${show(expected)}, got ${show(actual)}`, ex);
  }

  /** A 2xx with the given status and a body that the schema accepts; returns the parsed body. */
  ok<S extends z.ZodType>(ex: Exchange, schema: S, what: string, status = 200): z.infer<S> {
    if (ex.status !== status) this.fail(`${what}: expected HTTP ${status}, got ${ex.status}`, ex);
    if (ex.json === undefined) this.fail(`${what}: the body is not JSON`, ex);
    return this.shape(ex.json, schema, what, ex);
  }

  shape<S extends z.ZodType>(value: unknown, schema: S, what: string, ex?: Exchange): z.infer<S> {
    const parsed = schema.safeParse(value);
    if (!parsed.success) this.fail(`${what}: ${describeIssues(parsed.error)}`, ex);
    return parsed.data;
  }

  jsonContentType(ex: Exchange, what: string): void {
    const ct = (ex.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    this.check(
      ct === 'application/json' || /^application\/[\w.+-]+\+json$/.test(ct),
      `${what}: expected a JSON content type, got ${show(ex.headers.get('content-type'))}`,
      ex,
    );
  }

  /**
   * An error response. With `status`/`type`/`param`/`code` given, they must match; with none of
   * them, any 4xx with a valid error object passes (what the interface requires when it fixes nothing).
   */
  error(ex: Exchange, what: string, expected: ExpectedError = {}): z.infer<typeof C.ErrorBody>['error'] {
    if (expected.status !== undefined) {
      if (ex.status !== expected.status) this.fail(`${what}: expected HTTP ${expected.status}, got ${ex.status}`, ex);
    } else if (ex.status < 400 || ex.status > 499) {
      this.fail(`${what}: expected a 4xx error, got HTTP ${ex.status}`, ex);
    }
    if (ex.json === undefined) this.fail(`${what}: the error body is not JSON`, ex);
    this.jsonContentType(ex, `${what}: error`);
    const body = this.shape(ex.json, this.schemas.error, `${what}: error object`, ex) as z.infer<typeof C.ErrorBody>;
    const e = body.error;
    if (expected.type !== undefined) this.equal(e.type, expected.type, `${what}: error.type`, ex);
    if (expected.param !== undefined) this.equal(e.param ?? null, expected.param, `${what}: error.param`, ex);
    if (expected.code !== undefined) this.equal(e.code ?? null, expected.code, `${what}: error.code`, ex);
    return e;
  }

  /** Spec profile: any 4xx error object; reference profile: the D-1 error exactly. */
  invalid(ex: Exchange, what: string, ref: { param: string | null; code: string; status?: number }): void {
    if (this.reference)
      this.error(ex, what, { status: ref.status ?? 400, type: 'invalid_request_error', param: ref.param, code: ref.code });
    else this.error(ex, what);
  }
}

export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 4)
    .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

export function show(v: unknown): string {
  const s = JSON.stringify(v);
  if (s === undefined) return String(v);
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

export function defineCases(section: string, cases: Array<Omit<CaseDef, 'section'>>): CaseDef[] {
  return cases.map((c) => ({ ...c, section }));
}
