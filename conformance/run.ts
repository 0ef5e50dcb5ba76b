// The runner: selects cases, runs them one after another against the target, cleans up what the
// run created, and returns results that every reporter renders. Library entry of the suite.
import { randomBytes } from 'node:crypto';
import { applyBaseline, type Baseline } from './baseline.ts';
import { scoreOf } from './score.ts';
import { afterRetry, mergeResult, summarize } from './outcomes.ts';
import {
  CaseContext,
  CaseFailure,
  CaseSkip,
  DEFAULT_WINDOW_WAIT_MS,
  PreconditionFailure,
  SetupUnmet,
  type CaseDef,
  type Profile,
  type RunState,
} from './context.ts';
import { describeResponse, exchangeCurl, reproduction, toEvidence, type KeyName } from './evidence.ts';
import { HttpClient, type Exchange } from './http.ts';
import { Pacer } from './pace.ts';
import { preflight } from './preflight.ts';
import { selectCases, unmatchedPatterns } from './registry.ts';
import type { CaseResult, FailureDetail, PreconditionResult, RunResults } from './results.ts';
import { loadTarget, targetValue, UsageError, type Target } from './target.ts';
import { INTERFACE_VERSION, SUITE_NAME, SUITE_VERSION, TARGET_FORMAT_VERSION } from './version.ts';

export type { Profile } from './context.ts';
export type { CaseResult, EvidenceExchange, FailureDetail, Outcome, PreconditionResult, RunResults, Score, Summary } from './results.ts';
export { PreflightError, UnreachableError } from './preflight.ts';
export { CASES, selectCases } from './registry.ts';
export { render, REPORTERS, summaryLine, type ReporterName } from './reporters.ts';
export { exitCode, mergeResult, summarize } from './outcomes.ts';
export { CAPABILITIES, exercisedBy, type Capability } from './capabilities.ts';
export { percent, scoreOf } from './score.ts';
export { badgeSvg, besideReport, summaryJson } from './badge.ts';

/** Profile names: each says the interface version it judges; `spec` and `reference` stand for the current one. */
export const PROFILES = [`spec-${INTERFACE_VERSION}`, `reference-${INTERFACE_VERSION}`, 'spec', 'reference'] as const;
export type ProfileName = (typeof PROFILES)[number];

/** `spec`, `spec-1.0.0` → `spec`; anything else is a usage error. */
export function resolveProfile(name: string): Profile {
  const m = /^(spec|reference)(?:-(.+))?$/.exec(name);
  if (!m || (m[2] !== undefined && m[2] !== INTERFACE_VERSION))
    throw new UsageError(
      `unknown profile ${JSON.stringify(name)}: this suite judges interface ${INTERFACE_VERSION} with ${PROFILES.join(', ')}`,
    );
  return m[1] as Profile;
}

export interface RunOptions {
  /** A parsed target, or the path of a target file (with `baseUrl`/`apiKey` overrides). */
  target: Target | string;
  baseUrl?: string;
  apiKey?: string;
  profile?: Profile | ProfileName;
  only?: string | string[];
  skip?: string | string[];
  /** Per request: time to the headers and the longest silence inside a body. Default 30 s. */
  timeoutMs?: number;
  /**
   * How long a case reads again what the interface lets an implementation settle after it answered
   * (aggregated metrics, the generated title). Default 30 s; separate from the request timeout.
   */
  settleTimeoutMs?: number;
  /**
   * D-176: how long a case's set-up waits out a window an earlier run left full (a 429 with
   * Retry-After on the conversation it needs); past it the case is errored, not failed. Default 60 s.
   */
  windowWaitMs?: number;
  /** Told when a case's set-up waits (the pretty reporter says so in the progress lines). */
  onWait?: (caseId: string, ms: number, why: string) => void;
  /** Stop at the first failure; the remaining cases are reported as skipped. */
  bail?: boolean;
  /** Run the selection N times; a case passes only if it passed every time, and is flaky if it passed only some. */
  repeat?: number;
  /**
   * A case that fails (or errors) is run again, alone and with its preconditions, up to this many
   * times before it is reported (default 0); one that then passes is flaky. Never a case whose
   * retry would meet the rate limit it used up (CaseDef.noRetry).
   */
  retryFailed?: number;
  /** Tags what the run creates; a fresh one by default (`newRunId()`). */
  runId?: string;
  /** Called as each case finishes (the pretty reporter prints progress with it). */
  onResult?: (r: CaseResult) => void;
  /** Called after each try of a case with every request it sent and its answer (a test's view of what a case does). */
  onCaseExchanges?: (caseId: string, exchanges: readonly Exchange[]) => void;
  /** Called with each warning of the preflight, before the first case. */
  onWarning?: (w: string) => void;
  /**
   * Stops the run: the case under way (or else the next one) fails as interrupted, the rest are
   * skipped, and what the run created is still deleted.
   */
  signal?: AbortSignal;
  /** SIGINT and SIGTERM stop the run as `signal` does (default true); a second one ends the process. */
  handleSignals?: boolean;
  /** --rate-limit: at most this many requests a second (cases and cleanup together). */
  ratePerSecond?: number;
  /** Counted requests (send message, completion) in any minute; default just under target.md's 3,000. */
  countedPerMinute?: number;
  /** The longest Retry-After a 429 is waited for before it is sent again (default a minute); 0 sends again only at once. */
  maxRetryWaitMs?: number;
  /**
   * --receiver-url: where the implementation can reach the webhook cases' receiver, which listens at
   * its port (D-109, extended); without it, on 127.0.0.1, and the cases skip for a target elsewhere.
   */
  receiverUrl?: string;
  /** --expected-failures: case id → reason, and the file it came from. */
  expectedFailures?: { baseline: Baseline; file: string };
}

/** A 429 is sent again after its Retry-After this many times, when that wait is at most a minute. */
const RETRIES_429 = 3;
const CLEANUP_ATTEMPTS = 4;

export async function runConformance(opts: RunOptions): Promise<RunResults> {
  const target =
    typeof opts.target === 'string' ? await loadTarget(opts.target, { baseUrl: opts.baseUrl, apiKey: opts.apiKey }) : opts.target;
  const profile = resolveProfile(opts.profile ?? 'spec');
  const profileName = `${profile}-${INTERFACE_VERSION}`;
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const settleTimeoutMs = opts.settleTimeoutMs ?? 30_000;
  const windowWaitMs = opts.windowWaitMs ?? DEFAULT_WINDOW_WAIT_MS;
  // A typo in CI must not turn into a green run of nothing.
  const unmatched = unmatchedPatterns(opts.only, profile);
  if (unmatched.length > 0)
    throw new UsageError(
      `--only ${unmatched.map((u) => `'${u.pattern}'`).join(', ')} matches no case of profile ${profile}${unmatched.some((u) => u.inReference) ? ' (it matches REFERENCE cases: --profile reference)' : ''}`,
    );
  const cases = selectCases({ profile, only: opts.only, skip: opts.skip });
  const runId = opts.runId ?? newRunId();
  const started = Date.now();
  const keys: KeyName[] = [
    [target.apiKey, 'API_KEY'],
    ...(target.publishableKey ? ([[target.publishableKey, 'PUBLISHABLE_KEY']] as KeyName[]) : []),
    ...(target.otherTeamApiKey ? ([[target.otherTeamApiKey, 'OTHER_TEAM_API_KEY']] as KeyName[]) : []),
  ];
  const stop = new AbortController();
  const release = watchForStop(stop, opts);
  const pacer = new Pacer({ perSecond: opts.ratePerSecond, countedPerMinute: opts.countedPerMinute });
  // The rate-limited app's 429s are what its case looks for: they are never retried there.
  const limited = target.apps.rate_limited ? `/apps/${encodeURIComponent(target.apps.rate_limited)}/` : undefined;
  const http = new HttpClient({
    baseUrl: target.baseUrl,
    apiKey: target.apiKey,
    timeoutMs,
    totalMs: timeoutMs * 4,
    signal: stop.signal,
    pacer,
    retry429: {
      max: RETRIES_429,
      maxWaitMs: opts.maxRetryWaitMs ?? 60_000,
      unless: (path) => limited !== undefined && path.startsWith(limited),
    },
  });
  // Cleanup runs after an interruption too, so it has a client of its own.
  const cleaner = new HttpClient({
    baseUrl: target.baseUrl,
    apiKey: target.apiKey,
    timeoutMs,
    totalMs: timeoutMs * 4,
    pacer,
    retry429: { max: RETRIES_429, maxWaitMs: opts.maxRetryWaitMs ?? 60_000 },
  });

  try {
    const warnings = [
      ...(target.ignoredKeys
        ? [
            `the target follows a newer format than this suite's (version ${TARGET_FORMAT_VERSION}); ignored: ${target.ignoredKeys.join(', ')}`,
          ]
        : []),
      // A widget the target does not claim is not looked at: its cases are skipped (D-105, extended).
      ...(await preflight(http, target, {
        widget: cases.some((c) => c.needs?.includes('widget') && (!c.capability || target.claims[c.capability].claimed)),
      })),
    ];
    for (const w of warnings) opts.onWarning?.(w);

    const repeat = Math.max(1, opts.repeat ?? 1);
    const merged = new Map<string, CaseResult>();
    const preconditions = new Map<string, PreconditionResult>();
    const cleanup = { deleted: 0, failed: [] as string[] };
    let bailed = false;
    let interruptShown = false;
    for (let r = 0; r < repeat; r++) {
      const state: RunState = {
        target,
        profile,
        runId: repeat > 1 ? `${runId}-${r + 1}` : runId,
        http,
        memo: new Map(),
        timeoutMs,
        settleTimeoutMs,
        windowWaitMs,
        onWait: opts.onWait,
        created: [],
        webhooks: { ...(opts.receiverUrl ? { receiverUrl: opts.receiverUrl } : {}), endpoints: [] },
      };
      try {
        for (const c of cases) {
          let result: CaseResult;
          if (stop.signal.aborted) {
            result = interruptShown ? skipped(c, 'not run: the run was interrupted') : interruptedCase(c, stop.signal);
            interruptShown = true;
          } else if (bailed) result = skipped(c, 'not run: --bail after a failure');
          else {
            const watch = { state, c, timeoutMs, keys, stop: stop.signal, onExchanges: opts.onCaseExchanges };
            result = await runCase(watch, preconditions);
            result = await retried(result, { ...watch, preconditions, times: opts.retryFailed ?? 0 });
            if (stop.signal.aborted && result.status === 'failed') interruptShown = true;
          }
          const next = mergeResult(merged.get(c.id), result);
          merged.set(c.id, next);
          if (r === repeat - 1 || stop.signal.aborted) opts.onResult?.(next);
          if ((result.status === 'failed' || result.status === 'errored') && opts.bail) bailed = true;
        }
      } finally {
        await cleanUp(cleaner, state, cleanup);
        await cleanUpWebhooks(cleaner, state, cleanup);
      }
      if (stop.signal.aborted) break;
    }
    const results = cases.map((c) => merged.get(c.id)!);
    const baseline = opts.expectedFailures ? applyBaseline(results, opts.expectedFailures.baseline, opts.expectedFailures.file) : undefined;
    const interrupted = stop.signal.aborted ? stopReason(stop.signal) : undefined;
    return {
      suite: { name: SUITE_NAME, version: SUITE_VERSION },
      interfaceVersion: INTERFACE_VERSION,
      runId,
      profile: profileName,
      baseUrl: target.baseUrl,
      appId: target.appId,
      startedAt: new Date(started).toISOString(),
      ms: Date.now() - started,
      results,
      summary: summarize(results),
      preconditions: [...preconditions.values()],
      warnings,
      ...(baseline ? { baseline } : {}),
      requests: { sent: http.stats.sent + cleaner.stats.sent, retried429: http.stats.retried429 + cleaner.stats.retried429 },
      cleanup,
      ...(interrupted ? { interrupted } : {}),
      capabilities: target.claims,
      score: scoreOf(results, target.claims),
    };
  } finally {
    release();
  }
}

/** Aborts `stop` on the caller's signal and (unless told not to) on the first SIGINT/SIGTERM; returns the undo. */
function watchForStop(stop: AbortController, opts: RunOptions): () => void {
  const onAbort = () => stop.abort(opts.signal?.reason ?? 'aborted');
  if (opts.signal?.aborted) onAbort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const signals = opts.handleSignals === false ? [] : (['SIGINT', 'SIGTERM'] as const);
  const handlers = signals.map((name) => [name, () => stopOn(name)] as const);
  const unlisten = () => {
    for (const [name, h] of handlers) process.removeListener(name, h);
  };
  const stopOn = (name: string) => {
    // The second signal finds no listener and ends the process the usual way.
    unlisten();
    stop.abort(name);
  };
  for (const [name, h] of handlers) process.on(name, h);
  return () => {
    opts.signal?.removeEventListener('abort', onAbort);
    unlisten();
  };
}

function stopReason(signal: AbortSignal): string {
  return typeof signal.reason === 'string' ? signal.reason : ((signal.reason as Error)?.message ?? 'aborted');
}

/** What every result of a case says of it. */
function caseBase(c: CaseDef): Pick<CaseResult, 'id' | 'section' | 'level' | 'description' | 'capability'> {
  return {
    id: c.id,
    section: c.section,
    level: c.level,
    description: c.description,
    ...(c.capability ? { capability: c.capability } : {}),
  };
}

function interruptedCase(c: CaseDef, signal: AbortSignal): CaseResult {
  return {
    ...caseBase(c),
    status: 'failed',
    failure: { message: `the run was interrupted (${stopReason(signal)}) before this case finished` },
    ms: 0,
  };
}

/** `20261122-1a2b3c4d`: the date (for a person reading the data) and 32 random bits. */
export function newRunId(): string {
  return `${new Date().toISOString().slice(0, 10).replace(/-/g, '')}-${randomBytes(4).toString('hex')}`;
}

function skipped(c: CaseDef, reason: string, missing?: string[]): CaseResult {
  return {
    ...caseBase(c),
    status: 'skipped',
    reason,
    ...(missing ? { missing } : {}),
    ms: 0,
  };
}

/** A case to run, with what it runs against. */
interface CaseRun {
  state: RunState;
  c: CaseDef;
  timeoutMs: number;
  keys: KeyName[];
  stop: AbortSignal;
  onExchanges?: RunOptions['onCaseExchanges'];
}

async function runCase(run: CaseRun, preconditions: Map<string, PreconditionResult>): Promise<CaseResult> {
  const { state, c } = run;
  // D-105, extended: a target that declares its capabilities is scored on them only. One that declares
  // none is read as before, its cases skipped for the key they lack.
  const claim = c.capability ? state.target.claims[c.capability] : undefined;
  if (claim && !claim.claimed && claim.how === 'declared')
    return {
      ...skipped(
        c,
        `the target does not declare capability ${c.capability} (its capabilities: ${state.target.capabilities?.join(', ') || 'none'})`,
      ),
      undeclared: true,
    };
  const missing = (c.needs ?? []).filter((k) => !targetValue(state.target, k));
  if (missing.length > 0) return skipped(c, `needs target key ${missing.join(', ')}`, missing);
  const ctx = new CaseContext(state, c);
  try {
    return await judged(run, ctx, preconditions);
  } finally {
    run.onExchanges?.(c.id, ctx.exchanges);
  }
}

async function judged(run: CaseRun, ctx: CaseContext, preconditions: Map<string, PreconditionResult>): Promise<CaseResult> {
  const { state, c, timeoutMs, keys, stop } = run;
  const started = performance.now();
  const base = caseBase(c);
  let timer: NodeJS.Timeout | undefined;
  // A case is bounded as a whole too (each request is bounded by the client).
  const caseLimit = timeoutMs * 20 + state.settleTimeoutMs * 4 + state.windowWaitMs;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CaseFailure(`the case did not finish within ${caseLimit} ms`)), caseLimit);
  });
  let onStop = () => {};
  const interrupted = new Promise<never>((_, reject) => {
    onStop = () => reject(new CaseFailure(`the run was interrupted (${stopReason(stop)}) before this case finished`));
    stop.addEventListener('abort', onStop, { once: true });
  });
  try {
    await Promise.race([c.run(ctx), deadline, interrupted]);
    return { ...base, status: 'passed', ms: Math.round(performance.now() - started) };
  } catch (err) {
    const ms = Math.round(performance.now() - started);
    if (err instanceof CaseSkip) return { ...base, status: 'skipped', reason: err.message, ms };
    // D-176: the set-up met what an earlier run left (a full window): nothing was judged.
    if (err instanceof SetupUnmet)
      return {
        ...base,
        status: 'errored',
        reason: err.message,
        failure: failureDetail(err.message, err.exchange ?? ctx.exchanges.at(-1), ctx.exchanges, keys, state.target.baseUrl, c),
        ms,
      };
    if (err instanceof PreconditionFailure) {
      const shared = preconditions.get(err.precondition) ?? {
        name: err.precondition,
        shownBy: err.shownBy,
        message: err.message,
        blocked: [],
      };
      preconditions.set(err.precondition, shared);
      // Shown once, by the case that ran it; the others are grouped under it.
      if (err.shownBy !== c.id) {
        if (!shared.blocked.includes(c.id)) shared.blocked.push(c.id);
        return {
          ...base,
          status: 'errored',
          blockedBy: err.precondition,
          reason: `blocked: precondition "${err.precondition}" failed (shown by ${err.shownBy})`,
          ms,
        };
      }
    }
    const ex = err instanceof CaseFailure ? (err.exchange ?? ctx.exchanges.at(-1)) : ctx.exchanges.at(-1);
    const message = err instanceof CaseFailure ? err.message : `the case crashed: ${(err as Error)?.stack ?? String(err)}`;
    return { ...base, status: 'failed', failure: failureDetail(message, ex, ctx.exchanges, keys, state.target.baseUrl, c), ms };
  } finally {
    clearTimeout(timer);
    stop.removeEventListener('abort', onStop);
  }
}

/**
 * --retry-failed: a case that failed or errored runs again, up to `times` more, each time with
 * preconditions of its own (a fresh memo, so that what it shares with other cases is made again);
 * once a try passes it is flaky, and no longer counted as blocked by a precondition.
 */
async function retried(
  first: CaseResult,
  r: CaseRun & { preconditions: Map<string, PreconditionResult>; times: number },
): Promise<CaseResult> {
  let result = first;
  for (let t = 1; t <= r.times && (result.status === 'failed' || result.status === 'errored'); t++) {
    if (r.c.noRetry || r.stop.aborted) break;
    const again = await runCase({ ...r, state: { ...r.state, memo: new Map() } }, new Map());
    result = afterRetry(result, again, t);
  }
  if (result.status === 'flaky') for (const p of r.preconditions.values()) p.blocked = p.blocked.filter((id) => id !== r.c.id);
  return result;
}

/** The evidence of a failure: the exchange that showed it, every exchange of the case, and (for several) a script that replays them. */
function failureDetail(
  message: string,
  ex: Exchange | undefined,
  exchanges: Exchange[],
  keys: KeyName[],
  baseUrl: string,
  c: CaseDef,
): FailureDetail {
  const failure: FailureDetail = { message };
  if (ex) {
    failure.curl = exchangeCurl(ex, keys);
    failure.response = describeResponse(ex);
  }
  if (exchanges.length > 0) failure.exchanges = exchanges.map((e) => toEvidence(e, keys));
  if (exchanges.length > 1) failure.reproduction = reproduction(exchanges, keys, baseUrl, `${c.id}: ${c.description}`);
  return failure;
}

/**
 * Deletes what the run created; a 404 means it was already deleted (by a case). A deletion that
 * times out or is still refused with 429 after its retries is tried again, a few times.
 */
export async function cleanUp(http: HttpClient, state: RunState, out: RunResults['cleanup']): Promise<void> {
  for (const [app, id, key] of state.created) {
    let last = '';
    for (let attempt = 1; attempt <= CLEANUP_ATTEMPTS; attempt++) {
      try {
        const ex = await http.send({
          method: 'DELETE',
          path: `/apps/${encodeURIComponent(app)}/conversations/${encodeURIComponent(id)}`,
          ...(key ? { key } : {}),
        });
        if (ex.status === 200 || ex.status === 404) {
          out.deleted += ex.status === 200 ? 1 : 0;
          last = '';
          break;
        }
        last = `HTTP ${ex.status}`;
        if (ex.status !== 429 && ex.status < 500) break;
      } catch (err) {
        last = (err as Error).message;
      }
    }
    if (last) out.failed.push(`${app}/${id}: ${last}`);
  }
}

/**
 * D-109, extended: the endpoints the webhook cases registered and did not delete themselves (a case
 * that failed on the way) are deleted, the admin signed out and the receiver closed, after the
 * conversations, so that their deletion events find no endpoint of the run.
 */
export async function cleanUpWebhooks(http: HttpClient, state: RunState, out: RunResults['cleanup']): Promise<void> {
  const w = state.webhooks;
  const admin = state.target.admin?.baseUrl;
  const call = (method: string, path: string) => http.send({ method, path, baseUrl: admin, key: null, headers: w.session });
  try {
    if (admin && w.session) {
      for (const id of w.endpoints.splice(0)) {
        let last = '';
        for (let attempt = 1; attempt <= CLEANUP_ATTEMPTS; attempt++) {
          try {
            const ex = await call('DELETE', `/webhook_endpoints/${encodeURIComponent(id)}`);
            last = ex.status === 200 || ex.status === 404 ? '' : `HTTP ${ex.status}`;
            if (ex.status !== 429 && ex.status < 500) break;
          } catch (err) {
            last = (err as Error).message;
          }
        }
        if (last) out.failed.push(`webhook endpoint ${id}: ${last}`);
      }
      await call('DELETE', '/sessions/current').catch(() => {});
    }
  } finally {
    w.session = undefined;
    await w.receiver?.close();
    w.receiver = undefined;
  }
}
