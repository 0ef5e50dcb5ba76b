// D-157: requests refused for credits, a rate limit or the storage quota, counted per app, UTC day and
// reason, for the usage report. A refusal must stay cheap (a flood of 429s is what is counted), so
// counts gather in memory and are written at most once every FLUSH_MS per (app, day, reason): a journal
// line on the file store (src/store/file/refusals.ts), an upsert on PostgreSQL (src/store/pg/refusals.ts).
// A crash loses at most the last FLUSH_MS of counts; they bill nothing and limit nothing.
import { RefusalReason as Reasons } from '../contract/admin.ts';
import { dayOf } from '../core/credits.ts';

export const REFUSAL_REASONS = Reasons.options;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/**
 * D-157: the reason a refused request is counted under, or null for one that is not counted: `429`
 * `credits_exhausted` (a hard plan at zero, D-74), `storage_quota_exceeded` (D-27), and every other 429
 * of an app (its plan's rate limits, D-23; the widget's, D-52; its open streams).
 */
export function refusalOf(status: number, code: string | null | undefined): RefusalReason | null {
  if (status !== 429) return null;
  if (code === 'credits_exhausted') return 'credits';
  return code === 'storage_quota_exceeded' ? 'storage_quota' : 'rate_limit';
}

/** Refusals of one app on one UTC day for one reason. */
export interface RefusedDayRow {
  app_id: string;
  /** Days since 1970 (UTC). */
  day: number;
  reason: RefusalReason;
  n: number;
}

export interface RefusalLedger {
  /** Counts one refused request now; never waits (the count is written within FLUSH_MS). */
  count(appId: string, reason: RefusalReason): void;
  /** The counts of the apps given, days `since`…`until` (day numbers, inclusive), every instance's. */
  days(appIds: readonly string[], since: number, until: number): Promise<RefusedDayRow[]>;
  /** Writes what is counted, then closes. */
  close(): Promise<void>;
}

/** Today's day number (UTC), the day a refusal now is counted on. */
export const todayOf = (nowMs = Date.now()) => dayOf(nowMs / 1000);

/** How long counts gather before they are written. */
export const FLUSH_MS = 2_000;

const keyOf = (r: Pick<RefusedDayRow, 'app_id' | 'day' | 'reason'>) => `${r.app_id}\u0001${r.day}\u0001${r.reason}`;

/** Adds `rows` into `into`, one row per (app, day, reason). */
export function addRows(into: Map<string, RefusedDayRow>, rows: Iterable<RefusedDayRow>): void {
  for (const r of rows) {
    const k = keyOf(r);
    const had = into.get(k);
    if (had) had.n += r.n;
    else into.set(k, { ...r });
  }
}

/** The rows of `rows` in the span, in the order of the usage report (day, then app, then reason). */
export function inSpan(rows: Iterable<RefusedDayRow>, appIds: readonly string[], since: number, until: number): RefusedDayRow[] {
  const apps = new Set(appIds);
  return [...rows]
    .filter((r) => apps.has(r.app_id) && r.day >= since && r.day <= until)
    .map((r) => ({ ...r }))
    .sort((a, b) => a.day - b.day || a.app_id.localeCompare(b.app_id) || a.reason.localeCompare(b.reason));
}

/** Counts not yet written, and the one write of them at a time (see the head of this file). */
export class RefusalBuffer {
  private pending = new Map<string, RefusedDayRow>();
  /** Rows being written: still counted by `unwritten` until the write ends. */
  private writing: RefusedDayRow[] = [];
  private timer: NodeJS.Timeout | undefined;
  private done: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: (rows: RefusedDayRow[]) => Promise<void>,
    /** A failed write: its counts are dropped (they bill nothing), said once in the log by the caller. */
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Counts one refusal of `appId` on `day` (the day it was refused: `todayOf`). */
  add(appId: string, reason: RefusalReason, day: number): void {
    addRows(this.pending, [{ app_id: appId, day, reason, n: 1 }]);
    this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
  }

  /** What is counted and not yet written (PostgreSQL adds it to what it reads). */
  unwritten(): RefusedDayRow[] {
    return [...this.pending.values(), ...this.writing].map((r) => ({ ...r }));
  }

  /** Writes what is pending now (after any write under way); resolves when it is written or dropped. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const rows = [...this.pending.values()];
    this.pending = new Map();
    if (rows.length === 0) return this.done;
    this.done = this.done.then(async () => {
      this.writing = rows;
      try {
        await this.write(rows);
      } catch (err) {
        this.onError(err);
      } finally {
        this.writing = [];
      }
    });
    return this.done;
  }
}
