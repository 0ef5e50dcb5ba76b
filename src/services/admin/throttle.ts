// Failed sign-ins (D-69, after OWASP's authentication cheat sheet): counted per (email, address) and per
// address, never per account alone, so that nobody can lock an account for everyone. Past a few
// failures a pair (or an address) backs off, doubling, and is refused with Retry-After while it does,
// before the password is checked; a correct password ends its pair's count.
import type { FailureCounts } from '../../store/control.ts';

export type { FailureCounts };

/** Failures a pair may make before it backs off; an address, for every email together. */
export const PAIR_FREE_FAILURES = 5;
export const ADDRESS_FREE_FAILURES = 50;
/** Failures older than this are forgotten. */
export const FAILURE_WINDOW_MS = 15 * 60_000;
const MAX_BACKOFF_MS = 15 * 60_000;

export const pairKey = (email: string, address: string) => `pair:${email}\u0001${address}`;
export const addressKey = (address: string) => `addr:${address}`;

/** How long `failures` (oldest first) still keep their key backing off after `free` of them, at `now`. */
export function backoffLeft(failures: readonly number[], free: number, now: number): number {
  if (failures.length < free) return 0;
  const wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (failures.length - free));
  return Math.max(0, failures.at(-1)! + wait - now);
}

export class SignInThrottle {
  constructor(
    private readonly counts: FailureCounts,
    private readonly now: () => number = Date.now,
  ) {}

  /** Milliseconds until `email` may be tried again from `address` (0: now). */
  async waitMs(email: string, address: string): Promise<number> {
    const now = this.now();
    const since = now - FAILURE_WINDOW_MS;
    const [pair, addr] = await Promise.all([
      this.counts.recent(pairKey(email, address), since),
      this.counts.recent(addressKey(address), since),
    ]);
    return Math.max(backoffLeft(pair, PAIR_FREE_FAILURES, now), backoffLeft(addr, ADDRESS_FREE_FAILURES, now));
  }

  async failed(email: string, address: string): Promise<void> {
    const at = this.now();
    await Promise.all([this.counts.add(pairKey(email, address), at), this.counts.add(addressKey(address), at)]);
  }

  async succeeded(email: string, address: string): Promise<void> {
    await this.counts.clear(pairKey(email, address));
  }
}

/** The counts of one process, in memory (the file store's journal and PostgreSQL's table implement the same). */
export class MemoryFailureCounts implements FailureCounts {
  private readonly map = new Map<string, number[]>();
  async recent(key: string, since: number): Promise<number[]> {
    const list = (this.map.get(key) ?? []).filter((t) => t >= since);
    if (list.length) this.map.set(key, list);
    else this.map.delete(key);
    return list;
  }
  async add(key: string, at: number): Promise<void> {
    const list = this.map.get(key) ?? [];
    list.push(at);
    this.map.set(key, list);
  }
  async clear(key: string): Promise<void> {
    this.map.delete(key);
  }
}
