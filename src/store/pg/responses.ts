// Resumable responses on PostgreSQL (docs/postgres.md, D-30…D-39, D-43, D-90, D-91, D-100): a response's
// start and events are rows, so any instance can look one up, follow it or cancel it. A response's
// events are written in batches, one statement and one notification each (D-100): an event is handed
// to no reader before its batch is committed. Followers and producers are told by LISTEN/NOTIFY (sent
// in the statement that writes a batch, so it arrives after the batch is readable); a follower also
// reads again every few seconds, in case a notification was lost while the listening connection
// reconnected. A response's producer renews a lease on it, and holds a session advisory lock named
// after itself for as long as it lives (liveness.ts): a response whose lease expired, or whose
// producer's lock stays free (its connection, so its process, is gone), is what `unfinished` hands to
// start-up and to the running instances' sweep (D-38). Past D-36's hour a response keeps its row alone
// (its events deleted, what it was asked emptied) for the look-up's retention, then the row goes
// (D-93): pruned in bounded batches (response-prune.ts).
import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { listenOn } from '../../core/listeners.ts';
import { Periodic } from '../../core/periodic.ts';
import type { UnsequencedEvent } from '../../contract/index.ts';
import { ResponseEventsExpired, StoreUnavailable } from '../../core/errors.ts';
import {
  RESPONSE_LOOKUP_RETENTION_MS,
  TERMINAL_EVENTS,
  type LiveResponseStart,
  type LiveResponses,
  type ResponseRef,
  type ResponseTrace,
  type UnfinishedResponse,
} from '../types.ts';
import { CHANNELS, LEASE_MS, Liveness, LOCK_OF, RELOCK_GRACE_MS, RETRY_MS } from './liveness.ts';
import { pruneResponses } from './response-prune.ts';
import { isConnectionLoss } from './rows.ts';

export { LEASE_MS };
/** A follower's read when no notification came (a lost one must not stall it). */
const RECHECK_MS = 5_000;
/** D-91: a producer stops this long before the lease it last proved runs out. */
const MARGIN_MS = 5_000;
/** D-93: how often ended responses are pruned (response-prune.ts). */
const PRUNE_MS = 60_000;
/**
 * D-100: an event waits at most this long for others to share its write (a terminal event does not
 * wait), and a batch holds at most BATCH_MAX events. Figures: docs/benchmarks.md.
 */
export const BATCH_MS = 10;
const BATCH_MAX = 100;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

interface Row {
  id: string;
  app_id: string;
  conversation_id: string;
  created_at: string;
  ended_at: string | null;
}

/** An event appended and not yet written, with the promise its `append` returned. */
interface Queued {
  event: UnsequencedEvent;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** A response this instance produces (D-100: its events written in batches, one batch at a time, in order). */
interface Producing {
  /** The next event's sequence number: the number of events written. */
  next: number;
  /** Events appended, not yet written, oldest first. */
  queue: Queued[];
  /** Writes the queue BATCH_MS after its first event, unless a flush came first. */
  timer: NodeJS.Timeout | undefined;
  /** A write is chained that takes the whole queue when it starts. */
  flushing: boolean;
  /** The last write chained (the next one waits for it, whatever its outcome; close() too). */
  writing: Promise<void>;
}

const producing = (next: number): Producing => ({ next, queue: [], timer: undefined, flushing: false, writing: Promise.resolve() });

const refOf = (r: Row): ResponseRef => ({
  id: r.id,
  app_id: r.app_id,
  conversation_id: r.conversation_id,
  created_at: Number(r.created_at),
});

/** A running response's row, with what it was asked (emptied once the response is past D-36's hour). */
const startOf = (r: Row & { input: string }): LiveResponseStart => ({
  ...refOf(r),
  input: JSON.parse(r.input) as LiveResponseStart['input'],
});

export class PgResponses implements LiveResponses {
  /** This instance, as the owner of the responses it produces (and of its liveness lock, D-90). */
  readonly owner = randomUUID();
  /** Responses produced here, with their events not yet written. */
  private readonly producing = new Map<string, Producing>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly cancels = new Map<string, Set<() => void>>();
  /** D-90: the lock, LISTEN and the leases, on a connection of their own. */
  readonly liveness: Liveness;
  private closing = false;
  private pruner: Periodic | undefined;

  constructor(
    private readonly sql: Sql,
    /** A connection of its own for the liveness lock and LISTEN (see `notified` and `Liveness.lost`). */
    livenessConn: Sql,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    /** D-93: how long the look-up still finds a response after its end. */
    private readonly retentionMs: number = RESPONSE_LOOKUP_RETENTION_MS,
  ) {
    // A new session missed the notifications sent while there was none: every follower reads again.
    const wakeAll = () => {
      for (const set of this.waiters.values()) for (const f of set) f();
    };
    this.liveness = new Liveness(livenessConn, this.owner, wakeAll, now);
  }

  /** A notification on the liveness connection. */
  notified(channel: string, id: string): void {
    const map = channel === CHANNELS.events ? this.waiters : channel === CHANNELS.cancels ? this.cancels : undefined;
    for (const f of map?.get(id) ?? []) f();
  }

  async open(): Promise<void> {
    await this.liveness.open();
    // Never at start-up (its work is the running rows only, D-93): a minute on, then every minute.
    this.pruner = new Periodic(() => this.prune(), PRUNE_MS);
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.pruner?.stop();
    for (const [id, p] of this.producing) this.flush(id, p);
    await this.liveness.close();
    await Promise.all([...this.producing.values()].map((p) => p.writing));
  }

  async begin(start: LiveResponseStart, first: UnsequencedEvent): Promise<{ running?: string }> {
    for (let attempt = 0; ; attempt++) {
      // D-35: the partial unique index (one live response per conversation) decides, across instances;
      // revised: the first event is written in the same statement (none when nothing is begun).
      const made = await this.sql`
        WITH made AS (
          INSERT INTO live_responses (id, app_id, conversation_id, created_at, input, owner, lease_until)
          VALUES (${start.id}, ${start.app_id}, ${start.conversation_id}, ${start.created_at}, ${JSON.stringify(start.input)}, ${this.owner}, ${this.now() + LEASE_MS})
          ON CONFLICT DO NOTHING RETURNING id),
        e AS (INSERT INTO response_events (response_id, seq, body) SELECT id, 0, ${JSON.stringify(first)}::text FROM made)
        SELECT id FROM made`;
      if (made.length === 1) {
        this.producing.set(start.id, producing(1));
        return {};
      }
      const [running] = await this.sql<
        { id: string }[]
      >`SELECT id FROM live_responses WHERE conversation_id = ${start.conversation_id} AND ended_at IS NULL`;
      if (running) return { running: running.id };
      // It ended between the two statements: try again (or the id itself was taken).
      if (attempt > 0) throw new Error(`responses.begin: ${start.id} already exists`);
    }
  }

  /**
   * D-100: resolves once the event is written, with the others of its batch. A terminal event is
   * written at once (after the write under way, if any), with the events before it still waiting; any
   * other waits at most BATCH_MS for more (`response.created` was written with the begin, D-35 revised).
   */
  append(id: string, event: UnsequencedEvent): Promise<void> {
    const p = this.producing.get(id);
    if (!p) return Promise.reject(new Error(`${id} is not a live response of this instance`));
    return new Promise<void>((resolve, reject) => {
      p.queue.push({ event, resolve, reject });
      if (TERMINAL_EVENTS.has(event.event) || p.queue.length >= BATCH_MAX || this.closing) this.flush(id, p);
      else p.timer ??= setTimeout(() => this.flush(id, p), BATCH_MS);
    });
  }

  /** Chains a write of the queue, taken whole when the write before it is done. */
  private flush(id: string, p: Producing): void {
    clearTimeout(p.timer);
    p.timer = undefined;
    if (p.flushing) return;
    p.flushing = true;
    p.writing = p.writing.then(async () => {
      p.flushing = false;
      clearTimeout(p.timer);
      p.timer = undefined;
      const batch = p.queue.splice(0);
      if (batch.length === 0) return;
      const events = batch.map((q) => q.event);
      const terminal = TERMINAL_EVENTS.has(events.at(-1)!.event);
      try {
        await this.write(id, p.next, events, terminal);
        p.next += batch.length;
        if (terminal) this.producing.delete(id);
      } catch (err) {
        for (const q of batch) q.reject(err);
        return;
      }
      for (const q of batch) q.resolve();
    });
  }

  /**
   * A batch of events in one statement (one transaction): the events, the response's end if the last
   * is terminal, and one notification (D-100); nothing once another instance took the response over
   * (D-38: it thought this one dead). A lost connection is tried again (D-91): a batch that ends the
   * response until it is written, another while this instance can prove it lives (its lease), after
   * which it throws StoreUnavailable and the reply stops.
   */
  private async write(id: string, first: number, events: UnsequencedEvent[], terminal: boolean): Promise<void> {
    const bodies = events.map((e) => JSON.stringify(e));
    const last = first + events.length - 1;
    for (let attempt = 0; ; attempt++) {
      if (!terminal && this.now() >= this.liveness.provenUntil - MARGIN_MS)
        throw new StoreUnavailable('this instance cannot prove it lives: its lease would run out');
      try {
        // A batch that does not end the response locks its row rather than updating it: the same wait
        // for a takeover's update, and no dead row version per batch for autovacuum to clear. The row so
        // taken is the events' only reference check (D-114: no foreign key checks it once per event).
        const mine = terminal
          ? this.sql`UPDATE live_responses SET ended_at = ${this.now()}::bigint
                     WHERE id = ${id} AND owner = ${this.owner} AND ended_at IS NULL RETURNING id`
          : this.sql`SELECT id FROM live_responses
                     WHERE id = ${id} AND owner = ${this.owner} AND ended_at IS NULL FOR NO KEY UPDATE`;
        const done = await this.sql`
          WITH mine AS (${mine}),
          e AS (INSERT INTO response_events (response_id, seq, body)
                SELECT mine.id, ${first}::int + b.n::int - 1, b.body
                FROM mine, unnest(${this.sql.array(bodies)}::text[]) WITH ORDINALITY AS b(body, n))
          SELECT pg_notify(${CHANNELS.events}, id) FROM mine`;
        if (done.length > 0 || (attempt > 0 && (await this.written(id, last)))) return;
        this.producing.delete(id);
        throw new Error(`${id} is no longer a live response of this instance (another took it over)`);
      } catch (err) {
        // An attempt cut off after its commit: the batch is there (it is one statement).
        if (attempt > 0 && (err as { code?: string }).code === '23505') return;
        if (!isConnectionLoss(err) || this.closing) throw err;
      }
      await pause(RETRY_MS);
    }
  }

  private async written(id: string, seq: number): Promise<boolean> {
    const rows = await this.sql`SELECT 1 FROM response_events e JOIN live_responses r ON r.id = e.response_id
      WHERE e.response_id = ${id} AND e.seq = ${seq} AND r.owner = ${this.owner}`;
    return rows.length > 0;
  }

  async trace(id: string): Promise<ResponseTrace | undefined> {
    const t = await this.state(id, 0);
    return t && { start: t.start, events: t.events, ended: t.ended };
  }

  /** A response's start, its events from `from`, and whether it ended (events null past D-36's retention). */
  private async state(
    id: string,
    from: number,
  ): Promise<{ start: ResponseRef; events: UnsequencedEvent[] | null; ended: boolean } | undefined> {
    const [row] = await this.sql<Row[]>`SELECT id, app_id, conversation_id, created_at, ended_at FROM live_responses WHERE id = ${id}`;
    if (!row) return undefined;
    const ended = row.ended_at !== null;
    // D-93: past the look-up's retention, to the millisecond, whether or not the prune has removed it yet.
    if (ended && Number(row.ended_at) <= this.now() - this.retentionMs) return undefined;
    if (ended && Number(row.ended_at) <= this.now() - this.ttlMs) {
      await this.sql`DELETE FROM response_events WHERE response_id = ${id}`;
      return { start: refOf(row), events: null, ended };
    }
    // Read after the row: an event appended in between is read too, never an end without its event.
    const events = await this.sql<
      { body: string }[]
    >`SELECT body FROM response_events WHERE response_id = ${id} AND seq >= ${from} ORDER BY seq`;
    return { start: refOf(row), events: events.map((e) => JSON.parse(e.body) as UnsequencedEvent), ended };
  }

  async *follow(id: string, after: number, signal?: AbortSignal): AsyncGenerator<UnsequencedEvent> {
    let n = after + 1;
    for (;;) {
      // Listening before reading: an event appended meanwhile wakes the wait below at once.
      let woken = false;
      let wake = () => {
        woken = true;
      };
      const set = this.waiters.get(id) ?? new Set();
      this.waiters.set(id, set);
      const waiter = () => wake();
      set.add(waiter);
      try {
        const t = await this.state(id, n);
        if (!t) return;
        if (!t.events) throw new ResponseEventsExpired(id);
        for (const e of t.events) {
          yield e;
          n++;
          if (signal?.aborted) return;
        }
        if (t.ended || signal?.aborted) return;
        if (!woken) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(done, RECHECK_MS);
            function done() {
              clearTimeout(timer);
              signal?.removeEventListener('abort', done);
              resolve();
            }
            wake = done;
            signal?.addEventListener('abort', done, { once: true });
          });
        }
        if (signal?.aborted) return;
      } finally {
        set.delete(waiter);
        if (set.size === 0 && this.waiters.get(id) === set) this.waiters.delete(id);
      }
    }
  }

  async requestCancel(id: string): Promise<void> {
    await this.sql`SELECT pg_notify(${CHANNELS.cancels}, ${id})`;
  }

  onCancelRequest(id: string, listener: () => void): () => void {
    return listenOn(this.cancels, id, listener);
  }

  /**
   * D-38: live responses whose producer is gone, taken over by this instance so that the caller (start-up,
   * or the sweep of a running instance) appends their terminal event. Gone: its lease expired, or its
   * liveness lock is free and still free RELOCK_GRACE_MS later (D-90: the server frees it when the
   * producer's connection closes, as a kill -9 does; a living producer whose connection dropped, or
   * whose database restarted, has taken it again by then), so a restart need not wait out the lease.
   * One UPDATE takes them: when two instances sweep at once, the second finds each row already renewed
   * by the first, and takes none of them.
   */
  async unfinished(): Promise<UnfinishedResponse[]> {
    const lockFree = `NOT EXISTS (SELECT 1 FROM pg_locks l WHERE ${LOCK_OF('owner')})`;
    const suspects = (
      await this.sql.unsafe<{ id: string }[]>(
        `SELECT id FROM live_responses WHERE ended_at IS NULL AND owner <> $1 AND lease_until >= $2 AND ${lockFree}`,
        [this.owner, this.now()],
      )
    ).map((r) => r.id);
    if (suspects.length > 0) await pause(RELOCK_GRACE_MS);
    const now = this.now();
    const taken = await this.sql.unsafe<(Row & { input: string })[]>(
      `UPDATE live_responses SET owner = $1, lease_until = $2
       WHERE ended_at IS NULL AND owner <> $1 AND (lease_until < $3 OR (id = ANY($4::text[]) AND ${lockFree}))
       RETURNING id, app_id, conversation_id, created_at, input, ended_at`,
      [this.owner, now + LEASE_MS, now, suspects],
    );
    const out: UnfinishedResponse[] = [];
    for (const row of taken) {
      const events = await this.sql<{ body: string }[]>`SELECT body FROM response_events WHERE response_id = ${row.id} ORDER BY seq`;
      this.producing.set(row.id, producing(events.length));
      out.push({ start: startOf(row), events: events.map((e) => JSON.parse(e.body) as UnsequencedEvent), ended: false });
    }
    return out;
  }

  /** D-93: ended responses pruned in bounded batches (response-prune.ts); how many rows each step touched. */
  prune(): Promise<{ emptied: number; deleted: number }> {
    return pruneResponses(this.sql, this.now, this.ttlMs, this.retentionMs);
  }
}
