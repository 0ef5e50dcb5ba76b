// D-90: an instance's proof of life on PostgreSQL, kept for as long as the process lives. One
// connection of its own holds a session advisory lock named after the instance (the server frees it
// when that connection closes, as a kill -9 closes it, so the others see the instance gone at once)
// and LISTENs on the channels of the resumable responses. Every RENEW_MS it checks that its session
// still holds the lock: a database restart or a terminated backend gives it a new session, on which
// the lock is taken again and LISTEN issued again; then it renews the leases of the replies the
// instance produces. A failed look is tried again every RETRY_MS until it succeeds, and a closed
// connection starts one at once, so a living instance holds its lock again within a fraction of a
// second of the database's return (others wait RELOCK_GRACE_MS before they believe a free lock).
import type { Sql } from 'postgres';

/** A live response's lease: renewed every RENEW_MS by its producer. */
export const LEASE_MS = 30_000;
/** How often the liveness connection proves itself and renews the leases. */
export const RENEW_MS = 3_000;
/** A failed look is tried again after this. */
export const RETRY_MS = 250;
/**
 * D-90: a free lock is believed (its instance dead) only when it is still free this long after it was
 * first seen free: a living instance whose connection dropped, or the database restarted, has taken
 * it again by then.
 */
export const RELOCK_GRACE_MS = 5_000;
export const CHANNELS = { events: 'parley_response_events', cancels: 'parley_response_cancel' } as const;

/** The advisory lock of `owner` (a column or a value) as pg_locks shows it, for `WHERE`. */
export const LOCK_OF = (owner: string) => `l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = ((hashtextextended(${owner}, 0) >> 32) & 4294967295)::oid
  AND l.objid = (hashtextextended(${owner}, 0) & 4294967295)::oid`;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export class Liveness {
  /** The backend pid of the session that holds the lock and listens. */
  private session: number | undefined;
  private live = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  /**
   * D-91: the end of the lease the last renewal proved; past it (less a margin) this instance stops
   * producing, since another would take its replies for those of a dead instance.
   */
  provenUntil = 0;

  constructor(
    /** A connection of its own (max 1, no idle or lifetime limit). */
    private readonly conn: Sql,
    private readonly owner: string,
    /** Told when a new session listens: notifications sent meanwhile were lost. */
    private readonly onSession: () => void,
    private readonly now: () => number,
  ) {}

  /** Whether the last look succeeded: the database answers and this instance holds its lock. */
  get available(): boolean {
    return this.live;
  }

  async open(): Promise<void> {
    await this.prove();
    this.timer = setInterval(() => void this.tick(), RENEW_MS);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.ticking;
  }

  /** The connection closed: look again at once. */
  lost(): void {
    if (this.closed) return;
    this.live = false;
    void this.tick();
  }

  /** One look, retried until it succeeds (or the instance closes); looks asked for meanwhile join it. */
  tick(): Promise<void> {
    this.ticking ??= (async () => {
      while (!this.closed) {
        try {
          return await this.prove();
        } catch (err) {
          this.live = false;
          // Ended on purpose (a close): nothing to try again.
          if ((err as { code?: string }).code === 'CONNECTION_ENDED') return;
          await pause(RETRY_MS);
        }
      }
    })().finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  private async prove(): Promise<void> {
    const at = this.now();
    const [row] = await this.conn.unsafe<{ pid: number; held: boolean }[]>(
      `SELECT pg_backend_pid() AS pid, EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = pg_backend_pid() AND ${LOCK_OF('$1')}) AS held`,
      [this.owner],
    );
    if (row!.pid !== this.session || !row!.held) {
      // A new session: LISTEN again, and the lock (a try: a lock still held by the old session,
      // which the server has not yet seen go, fails this look rather than blocking it).
      for (const channel of Object.values(CHANNELS)) await this.conn.unsafe(`LISTEN ${channel}`);
      const [got] = await this.conn<{ ok: boolean }[]>`SELECT pg_try_advisory_lock(hashtextextended(${this.owner}, 0)) AS ok`;
      if (!got!.ok) throw new Error('the liveness lock is still held by an earlier session');
      this.session = row!.pid;
      this.onSession();
    }
    await this.conn`UPDATE live_responses SET lease_until = ${at + LEASE_MS} WHERE owner = ${this.owner} AND ended_at IS NULL`;
    this.provenUntil = at + LEASE_MS;
    this.live = true;
  }
}
