// Failed sign-ins (D-69, after OWASP's authentication cheat sheet): counted per (email, address) and per
// address, never per account alone, so that nobody can lock an account for everyone. Past a few
// failures a pair (or an address) backs off, doubling, and is refused with Retry-After while it does,
// before the password is checked; a correct password ends its pair's count. D-165: a check counts its
// failure before the password is checked (a reservation, taken back when the password is right), so a
// burst of guesses sent at once checks no more passwords than guesses sent one after another.
import type { FailureCounts } from '../../store/control.ts';

export type { FailureCounts };

/** Failures a pair may make before it backs off; an address, for every email together. */
export const PAIR_FREE_FAILURES = 5;
export const ADDRESS_FREE_FAILURES = 50;
/** D-165: wrong current passwords a session may give before its password changes back off; a member, over all their sessions. */
export const SESSION_FREE_FAILURES = 5;
export const MEMBER_FREE_FAILURES = 10;
/** Failures older than this are forgotten. */
export const FAILURE_WINDOW_MS = 15 * 60_000;
const MAX_BACKOFF_MS = 15 * 60_000;

/** One count a check goes through: its key, the failures it allows, and whether a right password forgets them. */
export interface Rule {
  key: string;
  free: number;
  /** A right password ends the key's count (else only the check's own reservation is taken back). */
  clears: boolean;
}

export const pairKey = (email: string, address: string) => `pair:${email}\u0001${address}`;
export const addressKey = (address: string) => `addr:${address}`;

/** D-69: a sign-in's counts: its (email, address) pair and its address. */
export const signInRules = (email: string, address: string): Rule[] => [
  { key: pairKey(email, address), free: PAIR_FREE_FAILURES, clears: true },
  { key: addressKey(address), free: ADDRESS_FREE_FAILURES, clears: false },
];

/** D-165: a password change's counts: the session (or access token) it comes with, and the member. */
export const passwordChangeRules = (memberId: string, credentialId: string): Rule[] => [
  { key: `cred:${credentialId}`, free: SESSION_FREE_FAILURES, clears: true },
  { key: `member:${memberId}`, free: MEMBER_FREE_FAILURES, clears: true },
];

/** How long `failures` (oldest first) still keep their key backing off after `free` of them, at `now`. */
export function backoffLeft(failures: readonly number[], free: number, now: number): number {
  if (failures.length < free) return 0;
  const wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (failures.length - free));
  return Math.max(0, failures.at(-1)! + wait - now);
}

/** What a throttled check answers: refused for `wait` ms (the password not checked), or the check's answer. */
export type Checked = { wait: number; ok: false } | { wait: 0; ok: boolean };

export class SignInThrottle {
  constructor(
    private readonly counts: FailureCounts,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * D-165: runs `check` (a password's verification) only once a failure of every rule is counted; a
   * right password takes that failure back (and ends the counts of the rules that clear), a wrong one
   * leaves it. If `check` throws, the failure is taken back: no password was judged.
   */
  async check(rules: readonly Rule[], check: () => Promise<boolean>): Promise<Checked> {
    const at = this.now();
    const wait = await this.counts.reserve(
      rules.map((r) => r.key),
      at - FAILURE_WINDOW_MS,
      at,
      (failures) => Math.max(0, ...rules.map((r, i) => backoffLeft(failures[i]!, r.free, at))),
    );
    if (wait > 0) return { wait, ok: false };
    let ok: boolean;
    try {
      ok = await check();
    } catch (err) {
      await this.release(rules, at, false);
      throw err;
    }
    if (ok) await this.release(rules, at, true);
    return { wait: 0, ok };
  }

  private async release(rules: readonly Rule[], at: number, right: boolean): Promise<void> {
    await Promise.all(rules.map((r) => (right && r.clears ? this.counts.clear(r.key) : this.counts.release(r.key, at))));
  }
}

/** The counts of one process, in memory (the file store's journal and PostgreSQL's table implement the same). */
export class MemoryFailureCounts implements FailureCounts {
  private readonly map = new Map<string, number[]>();
  async reserve(keys: readonly string[], since: number, at: number, admit: (failures: number[][]) => number): Promise<number> {
    const wait = admit(keys.map((k) => (this.map.get(k) ?? []).filter((t) => t >= since)));
    if (wait === 0) for (const k of keys) this.map.set(k, [...(this.map.get(k) ?? []), at]);
    return wait;
  }
  async release(key: string, at: number): Promise<void> {
    const list = this.map.get(key) ?? [];
    const i = list.indexOf(at);
    if (i >= 0) list.splice(i, 1);
  }
  async clear(key: string): Promise<void> {
    this.map.delete(key);
  }
}
