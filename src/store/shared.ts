// The state kept beside conversations (docs/postgres.md): usage, the D-23 counts, D-52's minute windows,
// the Idempotency-Key answers and the widget's owners. Each has two backends behind these interfaces:
// the data directory's files (src/store/file/, one process) and PostgreSQL (src/store/pg/, any number
// of instances); src/store/backend.ts opens one or the other.
import type { UsageT } from '../contract/index.ts';
import type { IdempotencyClaim } from '../core/claims.ts';

/** §1: completions are billed in credits by token usage; one credit buys this many tokens. */
export const TOKENS_PER_CREDIT = 1_000;

export interface AppUsage {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  credits: number;
}

export function appUsage(requests: number, inputTokens: number, outputTokens: number): AppUsage {
  const total = inputTokens + outputTokens;
  return { requests, input_tokens: inputTokens, output_tokens: outputTokens, total_tokens: total, credits: total / TOKENS_PER_CREDIT };
}

/** D-74: what a response or a completion debits its team, written in its usage record. */
export interface Debit {
  team_id: string;
  /** Credits × 1,000, an integer (src/core/credits.ts prices it). */
  millicredits: number;
}

/** One usage row (D-74: with its debit), for a store that writes it in an exchange's own step (D-104). */
export interface UsageEntry {
  app_id: string;
  kind: 'response' | 'completion';
  id: string;
  /** Unix seconds. */
  at: number;
  input_tokens: number;
  output_tokens: number;
  debit?: Debit;
}

/** D-74: one app's usage on one UTC day. */
export interface UsageDayRow {
  app_id: string;
  /** Days since 1970 (UTC). */
  day: number;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  millicredits: number;
}

/** Token usage per app (credits, §1, §4.7), and D-74's debits. */
export interface UsageLedger {
  /**
   * Records one response's or completion's usage, with its debit (D-74), in one step; resolves once
   * durable. A completion's Idempotency-Key claim is saved with it, in the same step (its usage is its
   * only save).
   */
  record(appId: string, kind: 'response' | 'completion', id: string, usage: UsageT, claim?: IdempotencyClaim, debit?: Debit): Promise<void>;
  /**
   * D-104: records a response's usage by handing its row to `step`, a store's save that writes it in
   * its own atomic step (`Store.savesUsage`: the ledger's rows are in the store's database), instead of
   * a step of its own; resolves with what `step` did. None: `record`, then the step.
   */
  recordWith?<T>(appId: string, id: string, usage: UsageT, step: (entry: UsageEntry) => Promise<T>, debit?: Debit): Promise<T>;
  /** The app's totals, as every instance sees them. */
  of(appId: string): Promise<AppUsage>;
  /** D-74: the millicredits debited to the team at or after `since` (Unix seconds), every instance's. */
  debited(teamId: string, since: number): Promise<number>;
  /** D-74: usage per app per UTC day, for the apps given, days `since`…`until` (day numbers, inclusive). */
  days(appIds: readonly string[], since: number, until: number): Promise<UsageDayRow[]>;
  close(): Promise<void>;
}

/** D-23: what counting one request found, for the limiter to answer with its headers. */
export interface RateCount {
  /** When it was counted (ms), on the clock that counted it. */
  now: number;
  /** Counted (false: refused, and nothing changed). */
  taken: boolean;
  /** Requests in the last minute before this one (a full window may count as just `perMinute`). */
  inMinute: number;
  /** Start (ms, UTC midnight) of the day, and its count before this request. */
  day: number;
  dayCount: number;
  /** When refused by the minute: the time of the request whose leaving the window frees a slot. */
  freesAt?: number;
  /** The newest request in the minute window. */
  newest?: number;
}

/** D-23's two windows, counted per key (the REST plans and D-52's widget budgets count apart). */
export interface RateCounts {
  /**
   * Counts a request for `key` unless it would pass `perMinute` or `perDay`; a refusal changes nothing.
   * Counts of one process answer synchronously (checked and taken in one step); shared ones are awaited.
   */
  take(key: string, perMinute: number, perDay: number): RateCount | Promise<RateCount>;
  /** Forgets the request counted for `key` at `at` (one another limit then refused). */
  giveBack(key: string, at: number): Promise<void>;
  close(): Promise<void>;
}

/** An Idempotency-Key's kept answer. */
export interface KeptAnswer {
  /** Hash of method, path and canonical body: what "the same request" means. */
  f: string;
  at: number;
  kind: 'json' | 'sse';
  /** The answer's body (JSON text, or the SSE stream's text); null when too large to keep. */
  b: string | null;
  /** Written by earlier versions: the stream was cut by the client before its last event (D-19). */
  cut?: boolean;
  /** The work was saved but its answer was lost in a crash (only its claim was kept with it). */
  lost?: boolean;
}

/** What a key holds when a request comes with it. */
export type KeyState = { state: 'new' } | { state: 'running'; f: string; responseId?: string } | { state: 'done'; answer: KeptAnswer };

/** The Idempotency-Key answers (the policy: src/pipeline/idempotency.ts), keyed by the app's hashed key. */
export interface IdempotencyAnswers {
  /**
   * Takes key `k` for a request of fingerprint `f` (`new`: the caller runs it, then calls `finish`),
   * unless it is running or answered: then says so. Taking is atomic: one caller gets `new`.
   */
  begin(k: string, f: string): KeyState | Promise<KeyState>;
  /** Ends the run of `k`: keeps its answer, or releases the key when there is none (the work may run again). */
  finish(k: string, answer: KeptAnswer | undefined): Promise<void>;
  /**
   * D-30: names the response the running work of `k` produces, so that a retry on another instance
   * follows it (`begin` then tells it as `responseId`). Without it, only this process joins it.
   */
  produces?(k: string, responseId: string): Promise<void>;
  close(): Promise<void>;
}

/** D-48: which visitor owns which widget conversation. */
export interface WidgetOwners {
  /** Durable when it resolves; the widget learns the conversation's id only after it. */
  claim(conversationId: string, visitorId: string): Promise<void>;
  ownerOf(conversationId: string): Promise<string | undefined>;
  close(): Promise<void>;
}

/** D-52's per-visitor and per-address limits: requests per key in a sliding minute. */
export interface MinuteWindows {
  /** Counts a request for `key` unless `perMinute` are in its last minute; a refusal changes nothing. */
  take(key: string, perMinute: number): Promise<{ at: number } | { retryAfterMs: number }>;
  /** Forgets a request `take` counted (one another limit then refused). */
  giveBack(key: string, at: number): Promise<void>;
  close(): Promise<void>;
}
