// The runner: selects cases, runs them one after another against the target, cleans up what the
// run created, and returns results that every reporter renders. Library entry of the suite.
import { randomBytes } from 'node:crypto';
import { CaseContext, CaseFailure, CaseSkip, type CaseDef, type Profile, type RunState } from './context.ts';
import { HttpClient, describeResponse, toCurl } from './http.ts';
import { selectCases, sectionTitle, unmatchedPatterns } from './registry.ts';
import { loadTarget, targetValue, UsageError, type Target } from './target.ts';

export type { Profile } from './context.ts';
export { CASES, selectCases } from './registry.ts';
export { render, REPORTERS, summaryLine, type ReporterName } from './reporters.ts';

export interface RunOptions {
  /** A parsed target, or the path of a target file (with `baseUrl`/`apiKey` overrides). */
  target: Target | string;
  baseUrl?: string;
  apiKey?: string;
  profile?: Profile;
  only?: string | string[];
  skip?: string | string[];
  /** Per request: time to the headers and the longest silence inside a body. Default 30 s. */
  timeoutMs?: number;
  /**
   * How long a case reads again what the interface lets an implementation settle after it answered
   * (aggregated metrics, the generated title). Default 30 s; separate from the request timeout.
   */
  settleTimeoutMs?: number;
  /** Stop at the first failure; the remaining cases are reported as skipped. */
  bail?: boolean;
  /** Run the selection N times; a case passes only if it passed every time. */
  repeat?: number;
  /** Tags what the run creates; a fresh one by default (`newRunId()`). */
  runId?: string;
  /** Called as each case finishes (the pretty reporter prints progress with it). */
  onResult?: (r: CaseResult) => void;
  /**
   * Stops the run: the case under way (or else the next one) fails as interrupted, the rest are
   * skipped, and what the run created is still deleted.
   */
  signal?: AbortSignal;
  /** SIGINT and SIGTERM stop the run as `signal` does (default true); a second one ends the process. */
  handleSignals?: boolean;
}

export interface FailureDetail {
  message: string;
  /** The request that showed the failure, as a curl command with keys replaced by variables. */
  curl?: string;
  response?: string;
}

export interface CaseResult {
  id: string;
  section: string;
  level: CaseDef['level'];
  description: string;
  status: 'passed' | 'failed' | 'skipped';
  /** Why it was skipped. */
  reason?: string;
  /** Target keys it needs that the target lacks. */
  missing?: string[];
  failure?: FailureDetail;
  /** With --repeat: how many of the runs failed or were skipped, of how many. */
  failedRuns?: number;
  skippedRuns?: number;
  runs?: number;
  ms: number;
}

export interface RunResults {
  runId: string;
  profile: Profile;
  baseUrl: string;
  appId: string;
  startedAt: string;
  ms: number;
  results: CaseResult[];
  summary: { passed: number; failed: number; skipped: number };
  /** What the run created and deleted at the end. */
  cleanup: { deleted: number; failed: string[] };
  /** Why the run was stopped before its end (`SIGINT`, …). */
  interrupted?: string;
}

/** The target did not answer at all (exit 2 on the command line). */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
}

export async function runConformance(opts: RunOptions): Promise<RunResults> {
  const target = typeof opts.target === 'string' ? await loadTarget(opts.target, { baseUrl: opts.baseUrl, apiKey: opts.apiKey }) : opts.target;
  const profile = opts.profile ?? 'spec';
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const settleTimeoutMs = opts.settleTimeoutMs ?? 30_000;
  // A typo in CI must not turn into a green run of nothing.
  const unmatched = unmatchedPatterns(opts.only, profile);
  if (unmatched.length > 0) throw new UsageError(`--only ${unmatched.map((u) => `'${u.pattern}'`).join(', ')} matches no case of profile ${profile}${unmatched.some((u) => u.inReference) ? ' (it matches REFERENCE cases: --profile reference)' : ''}`);
  const cases = selectCases({ profile, only: opts.only, skip: opts.skip });
  const runId = opts.runId ?? newRunId();
  const started = Date.now();
  const secrets: Array<[string, string]> = [
    [target.apiKey, '$API_KEY'],
    ...(target.publishableKey ? ([[target.publishableKey, '$PUBLISHABLE_KEY']] as Array<[string, string]>) : []),
    ...(target.otherTeamApiKey ? ([[target.otherTeamApiKey, '$OTHER_TEAM_API_KEY']] as Array<[string, string]>) : []),
  ];
  const stop = new AbortController();
  const release = watchForStop(stop, opts);
  const http = new HttpClient({ baseUrl: target.baseUrl, apiKey: target.apiKey, timeoutMs, totalMs: timeoutMs * 4, signal: stop.signal });
  // Cleanup runs after an interruption too, so it has a client of its own.
  const cleaner = new HttpClient({ baseUrl: target.baseUrl, apiKey: target.apiKey, timeoutMs, totalMs: timeoutMs * 4 });

  try {
    await preflight(http, target);

    const repeat = Math.max(1, opts.repeat ?? 1);
    const merged = new Map<string, CaseResult>();
    const cleanup = { deleted: 0, failed: [] as string[] };
    let bailed = false;
    let interruptShown = false;
    for (let r = 0; r < repeat; r++) {
      const state: RunState = { target, profile, runId: repeat > 1 ? `${runId}-${r + 1}` : runId, http, memo: new Map(), timeoutMs, settleTimeoutMs, created: [] };
      try {
        for (const c of cases) {
          let result: CaseResult;
          if (stop.signal.aborted) {
            result = interruptShown ? skipped(c, 'not run: the run was interrupted') : interruptedCase(c, stop.signal);
            interruptShown = true;
          } else if (bailed) result = skipped(c, 'not run: --bail after a failure');
          else {
            result = await runCase(state, c, timeoutMs, secrets, stop.signal);
            if (stop.signal.aborted && result.status === 'failed') interruptShown = true;
          }
          const next = mergeResult(merged.get(c.id), result);
          merged.set(c.id, next);
          if (r === repeat - 1 || stop.signal.aborted) opts.onResult?.(next);
          if (result.status === 'failed' && opts.bail) bailed = true;
        }
      } finally {
        await cleanUp(cleaner, state, cleanup);
      }
      if (stop.signal.aborted) break;
    }
    const results = cases.map((c) => merged.get(c.id)!);
    const summary = { passed: 0, failed: 0, skipped: 0 };
    for (const r of results) summary[r.status]++;
    const interrupted = stop.signal.aborted ? stopReason(stop.signal) : undefined;
    return { runId, profile, baseUrl: target.baseUrl, appId: target.appId, startedAt: new Date(started).toISOString(), ms: Date.now() - started, results, summary, cleanup, ...(interrupted ? { interrupted } : {}) };
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
  const unlisten = () => handlers.forEach(([name, h]) => process.removeListener(name, h));
  const stopOn = (name: string) => {
    // The second signal finds no listener and ends the process the usual way.
    unlisten();
    stop.abort(name);
  };
  handlers.forEach(([name, h]) => process.on(name, h));
  return () => {
    opts.signal?.removeEventListener('abort', onAbort);
    unlisten();
  };
}

function stopReason(signal: AbortSignal): string {
  return typeof signal.reason === 'string' ? signal.reason : ((signal.reason as Error)?.message ?? 'aborted');
}

function interruptedCase(c: CaseDef, signal: AbortSignal): CaseResult {
  return { id: c.id, section: c.section, level: c.level, description: c.description, status: 'failed', failure: { message: `the run was interrupted (${stopReason(signal)}) before this case finished` }, ms: 0 };
}

/** `20261122-1a2b3c4d`: the date (for a person reading the data) and 32 random bits. */
export function newRunId(): string {
  return `${new Date().toISOString().slice(0, 10).replace(/-/g, '')}-${randomBytes(4).toString('hex')}`;
}

async function preflight(http: HttpClient, target: Target): Promise<void> {
  try {
    await http.send({ method: 'GET', path: `/apps/${encodeURIComponent(target.appId)}/config` });
  } catch (err) {
    throw new UnreachableError(`target ${target.baseUrl} is unreachable: ${(err as Error).message}`);
  }
}

function skipped(c: CaseDef, reason: string, missing?: string[]): CaseResult {
  return { id: c.id, section: c.section, level: c.level, description: c.description, status: 'skipped', reason, ...(missing ? { missing } : {}), ms: 0 };
}

async function runCase(state: RunState, c: CaseDef, timeoutMs: number, secrets: Array<[string, string]>, stop: AbortSignal): Promise<CaseResult> {
  const missing = (c.needs ?? []).filter((k) => !targetValue(state.target, k));
  if (missing.length > 0) return skipped(c, `needs target key ${missing.join(', ')}`, missing);
  const ctx = new CaseContext(state, c);
  const started = performance.now();
  const base = { id: c.id, section: c.section, level: c.level, description: c.description };
  let timer: NodeJS.Timeout | undefined;
  // A case is bounded as a whole too (each request is bounded by the client).
  const caseLimit = timeoutMs * 20 + state.settleTimeoutMs * 4;
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
    const ex = err instanceof CaseFailure ? (err.exchange ?? ctx.exchanges.at(-1)) : ctx.exchanges.at(-1);
    const message = err instanceof CaseFailure ? err.message : `the case crashed: ${(err as Error)?.stack ?? String(err)}`;
    const failure: FailureDetail = { message };
    if (ex) {
      failure.curl = toCurl(ex.request, secrets);
      failure.response = describeResponse(ex, secrets);
    }
    return { ...base, status: 'failed', failure, ms };
  } finally {
    clearTimeout(timer);
    stop.removeEventListener('abort', onStop);
  }
}

/** With --repeat: a case passes only if it passed every time; any failure fails it, any skip keeps it from passing. */
export function mergeResult(prev: CaseResult | undefined, next: CaseResult): CaseResult {
  if (!prev) return next;
  const failedRuns = (prev.failedRuns ?? (prev.status === 'failed' ? 1 : 0)) + (next.status === 'failed' ? 1 : 0);
  const skippedRuns = (prev.skippedRuns ?? (prev.status === 'skipped' ? 1 : 0)) + (next.status === 'skipped' ? 1 : 0);
  const runs = (prev.runs ?? 1) + 1;
  const counts = { failedRuns, skippedRuns, runs, ms: prev.ms + next.ms };
  if (prev.status === 'failed') return { ...prev, ...counts };
  if (next.status === 'failed') return { ...next, ...counts };
  if (prev.status === 'skipped') return { ...prev, ...counts };
  return { ...next, ...counts };
}

/** Deletes what the run created; a 404 means it was already deleted (by a case). */
async function cleanUp(http: HttpClient, state: RunState, out: RunResults['cleanup']): Promise<void> {
  for (const [app, id, key] of state.created) {
    try {
      const ex = await http.send({ method: 'DELETE', path: `/apps/${encodeURIComponent(app)}/conversations/${encodeURIComponent(id)}`, ...(key ? { key } : {}) });
      if (ex.status === 200 || ex.status === 404) out.deleted += ex.status === 200 ? 1 : 0;
      else out.failed.push(`${app}/${id}: HTTP ${ex.status}`);
    } catch (err) {
      out.failed.push(`${app}/${id}: ${(err as Error).message}`);
    }
  }
}

export { sectionTitle };
