// D-52's per-visitor and per-address minute windows for one process, in memory only: they stop a burst
// from one visitor or one address, and a restart forgetting them loses at most a minute's counts.
// PostgreSQL's twin counts them once for every instance (src/store/pg/rate-counts.ts).
import type { MinuteWindows } from '../shared.ts';

const MINUTE = 60_000;

export class MemoryMinuteWindows implements MinuteWindows {
  private readonly hits = new Map<string, number[]>();
  private writes = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** Checked and counted in one synchronous step: concurrent requests cannot pass the limit together. */
  async take(key: string, perMinute: number): Promise<{ at: number } | { retryAfterMs: number }> {
    const now = this.now();
    const list = this.recent(key, now);
    if (list.length >= perMinute) return { retryAfterMs: list.length ? list[Math.max(0, list.length - perMinute)]! + MINUTE - now : 0 };
    list.push(now);
    this.hits.set(key, list);
    // Keys whose requests all left the window are swept now and then, so memory follows live traffic.
    if (++this.writes % 1024 === 0) for (const k of this.hits.keys()) if (this.recent(k, now).length === 0) this.hits.delete(k);
    return { at: now };
  }

  async giveBack(key: string, at: number): Promise<void> {
    const list = this.hits.get(key);
    const i = list?.lastIndexOf(at) ?? -1;
    if (i !== -1) list!.splice(i, 1);
  }

  async close(): Promise<void> {}

  private recent(key: string, now: number): number[] {
    const list = this.hits.get(key) ?? [];
    let i = 0;
    while (i < list.length && list[i]! <= now - MINUTE) i++;
    if (i > 0) list.splice(0, i);
    return list;
  }
}
