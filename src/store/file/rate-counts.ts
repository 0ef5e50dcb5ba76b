// D-23's counts in the data directory, for one process: a sliding one-minute window and a UTC-day count
// per key, in memory and in a journal (each count written before the request goes on, fsynced in the
// background) so that a restart forgets no count. PostgreSQL's twin is src/store/pg/rate-counts.ts.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { RateCount, RateCounts } from '../shared.ts';
import { Journal } from './journal.ts';

const MINUTE = 60_000;
const DAY = 86_400_000;

/** One counted request, one given back (`g`: when it was counted), or (in a compacted journal) the older part of a day's count. */
type Entry = { a: string; t: number } | { a: string; g: number } | { a: string; d: number; n: number };

interface Usage {
  /** Start (ms, UTC midnight) of the day `dayCount` belongs to. */
  day: number;
  dayCount: number;
  /** Timestamps of counted requests, ascending; those before `head` have left the minute window. */
  recent: number[];
  head: number;
}

export interface FileRateCountsOptions {
  /** The journal, e.g. `<data dir>/ratelimits.jsonl`. */
  file: string;
  now?: () => number;
  /** Lines written before the journal is rewritten as one snapshot (kept small; tests lower it). */
  compactAfter?: number;
  /** Told when a background fsync fails: the counts are still in memory and in the OS's cache. */
  onSyncError?: (err: Error) => void;
  /** Told when start-up drops a torn last line (see Journal.open). */
  warn?: (message: string) => void;
}

export class FileRateCounts implements RateCounts {
  private readonly usage = new Map<string, Usage>();
  private readonly now: () => number;
  private readonly compactAfter: number;
  /** Counting is best kept going: a damaged line costs at most one request's count. */
  private readonly journal: Journal;
  private compacting: Promise<void> | undefined;
  /** Entries written by the last compaction. */
  private snapshotLines = 0;

  private constructor(opts: FileRateCountsOptions) {
    this.now = opts.now ?? Date.now;
    this.compactAfter = opts.compactAfter ?? 10_000;
    this.journal = new Journal(opts.file, { skipBadLines: true, onSyncError: opts.onSyncError, warn: opts.warn });
  }

  /** Reads the journal (a torn last line was never acknowledged and is dropped) and opens it for appends. */
  static async open(opts: FileRateCountsOptions): Promise<FileRateCounts> {
    const counts = new FileRateCounts(opts);
    await fs.mkdir(path.dirname(opts.file), { recursive: true });
    await counts.journal.open((e) => {
      if (typeof (e as Entry | null)?.a === 'string') counts.replay(e as Entry);
    });
    return counts;
  }

  private replay(e: Entry): void {
    const now = this.now();
    const today = dayStart(now);
    const u = this.usageOf(e.a, now);
    if ('g' in e) {
      this.forget(e.a, e.g);
    } else if ('t' in e) {
      if (dayStart(e.t) === today) u.dayCount++;
      if (e.t > now - MINUTE && e.t <= now) insertSorted(u.recent, e.t);
    } else if (e.d === today) {
      u.dayCount += e.n;
    }
  }

  private usageOf(key: string, now: number): Usage {
    let u = this.usage.get(key);
    if (!u) {
      u = { day: dayStart(now), dayCount: 0, recent: [], head: 0 };
      this.usage.set(key, u);
    }
    if (u.day !== dayStart(now)) {
      u.day = dayStart(now);
      u.dayCount = 0;
    }
    while (u.head < u.recent.length && u.recent[u.head]! <= now - MINUTE) u.head++;
    if (u.head > 1024 && u.head * 2 > u.recent.length) {
      u.recent = u.recent.slice(u.head);
      u.head = 0;
    }
    return u;
  }

  /**
   * Counts one request or refuses it, synchronously: the slot is taken before anything awaits, so
   * concurrent requests can never pass the limit together, and the count is written to the journal
   * (write(2), fsynced in the background) before the request goes on: a restart or a crash of the
   * process forgets no count, and the request does not wait for an fsync (docs/reliability.md).
   * If the line cannot be written, the slot is given back and this throws.
   */
  take(key: string, perMinute: number, perDay: number): RateCount {
    const now = this.now();
    const u = this.usageOf(key, now);
    const inMinute = u.recent.length - u.head;
    const found = { now, inMinute, day: u.day, dayCount: u.dayCount, newest: u.recent.at(-1) };
    if (inMinute >= perMinute || u.dayCount >= perDay) {
      return { ...found, taken: false, freesAt: inMinute >= perMinute ? u.recent[u.head + inMinute - perMinute] : undefined };
    }
    u.recent.push(now);
    u.dayCount++;
    try {
      this.journal.appendNow({ a: key, t: now } satisfies Entry);
    } catch (err) {
      this.forget(key, now);
      throw err;
    }
    this.compactIfDue();
    return { ...found, taken: true };
  }

  /**
   * Forgets the count, in memory and in the journal (D-92: a request refused by its handler is not
   * charged, across a restart too). A line that cannot be written leaves the count to a restart: the
   * safe side.
   */
  async giveBack(key: string, at: number): Promise<void> {
    this.forget(key, at);
    try {
      this.journal.appendNow({ a: key, g: at } satisfies Entry);
    } catch {
      // Counted again after a restart: a request too many, never one too few.
    }
    this.compactIfDue();
  }

  private forget(key: string, t: number): void {
    const u = this.usage.get(key);
    if (!u) return;
    const at = u.recent.lastIndexOf(t);
    if (at >= u.head) u.recent.splice(at, 1);
    if (dayStart(t) === u.day && u.dayCount > 0) u.dayCount--;
  }

  /**
   * Keeps the journal small whatever the traffic: today's counts plus the last minute's requests.
   * It is rewritten once it holds `compactAfter` lines and twice what the last snapshot held (a busy
   * minute's snapshot can itself be thousands of lines; rewriting it on every count would be waste).
   */
  private compactIfDue(): void {
    if (this.compacting || this.journal.lines <= Math.max(this.compactAfter, 2 * this.snapshotLines)) return;
    this.compacting = this.journal
      .compact(() => {
        const entries = this.snapshot();
        this.snapshotLines = entries.length;
        return entries;
      })
      .then(
        () => {
          this.compacting = undefined;
          // Counts taken during the compaction were appended after it: they may call for another.
          this.compactIfDue();
        },
        () => {
          // A failed compaction leaves the longer journal, which still holds every count.
          this.compacting = undefined;
        },
      );
  }

  private snapshot(): Entry[] {
    const now = this.now();
    const entries: Entry[] = [];
    for (const key of this.usage.keys()) {
      const u = this.usageOf(key, now);
      // A key that counts nothing today is dropped: memory holds today's keys, not every key ever seen
      // (D-92 counts each visitor and address).
      if (u.dayCount === 0 && u.head === u.recent.length) {
        this.usage.delete(key);
        continue;
      }
      const recent = u.recent.slice(u.head);
      const older = u.dayCount - recent.filter((t) => dayStart(t) === u.day).length;
      if (older > 0) entries.push({ a: key, d: u.day, n: older });
      for (const t of recent) entries.push({ a: key, t });
    }
    return entries;
  }

  async close(): Promise<void> {
    while (this.compacting) await this.compacting;
    await this.journal.close();
  }
}

function dayStart(t: number): number {
  return t - (((t % DAY) + DAY) % DAY);
}

function insertSorted(list: number[], t: number): void {
  let i = list.length;
  while (i > 0 && list[i - 1]! > t) i--;
  list.splice(i, 0, t);
}
