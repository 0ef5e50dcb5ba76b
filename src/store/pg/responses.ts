// Resumable responses on PostgreSQL (docs/postgres.md, D-30…D-39, D-43): a response's start and
// events are rows, so any instance can look one up, follow it or cancel it. Followers and producers
// are told by LISTEN/NOTIFY (a notification is sent in the transaction that appends the event, so it
// arrives after the event is readable); a follower also reads again every few seconds, in case a
// notification was lost while the listening connection reconnected. A response's producer renews a
// lease on it, and holds a session advisory lock named after itself for as long as it runs: a response
// whose lease expired, or whose producer's lock is free (its connection, so its process, is gone), is
// what `unfinished` hands to start-up and to the running instances' sweep (D-38).
import { randomUUID } from 'node:crypto';
import type { ReservedSql, Sql } from 'postgres';
import type { UnsequencedEvent } from '../../contract/index.ts';
import { ResponseEventsExpired } from '../../core/errors.ts';
import { TERMINAL_EVENTS, type LiveResponseStart, type LiveResponses, type ResponseTrace, type UnfinishedResponse } from '../types.ts';

const EVENTS = 'parley_response_events';
const CANCELS = 'parley_response_cancel';
/** A live response's lease: renewed every third of it by its producer. */
export const LEASE_MS = 30_000;
/** A follower's read when no notification came (a lost one must not stall it). */
const RECHECK_MS = 5_000;

interface Row {
  id: string;
  app_id: string;
  conversation_id: string;
  created_at: string;
  input: string;
  ended_at: string | null;
}

const startOf = (r: Row): LiveResponseStart => ({
  id: r.id,
  app_id: r.app_id,
  conversation_id: r.conversation_id,
  created_at: Number(r.created_at),
  input: JSON.parse(r.input) as LiveResponseStart['input'],
});

export class PgResponses implements LiveResponses {
  /** This instance, as the owner of the responses it produces. */
  private readonly owner = randomUUID();
  /** Responses produced here: the next event's sequence number, and the appends in order. */
  private readonly producing = new Map<string, { next: number; writing: Promise<void> }>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly cancels = new Map<string, Set<() => void>>();
  private readonly unlisten: (() => Promise<void>)[] = [];
  private renewer: NodeJS.Timeout | undefined;
  /** The connection that holds this instance's liveness lock (see `unfinished`). */
  private holder: ReservedSql | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async open(): Promise<void> {
    // Held by a session: it goes with the connection, so a killed instance frees it at once.
    this.holder = await this.sql.reserve();
    await this.holder`SELECT pg_advisory_lock(hashtextextended(${this.owner}, 0))`;
    const wake = (map: Map<string, Set<() => void>>) => (id: string) => {
      for (const f of map.get(id) ?? []) f();
    };
    this.unlisten.push((await this.sql.listen(EVENTS, wake(this.waiters))).unlisten);
    this.unlisten.push((await this.sql.listen(CANCELS, wake(this.cancels))).unlisten);
    this.renewer = setInterval(() => void this.renew(), LEASE_MS / 3);
    this.renewer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.renewer);
    await Promise.all([...this.producing.values()].map((p) => p.writing));
    for (const u of this.unlisten.splice(0)) await u().catch(() => {});
    this.holder?.release();
    this.holder = undefined;
  }

  private async renew(): Promise<void> {
    if (this.producing.size === 0) return;
    await this.sql`UPDATE live_responses SET lease_until = ${this.now() + LEASE_MS} WHERE owner = ${this.owner} AND ended_at IS NULL`.catch(
      () => {},
    );
  }

  async begin(start: LiveResponseStart): Promise<{ running?: string }> {
    for (let attempt = 0; ; attempt++) {
      // D-35: the partial unique index (one live response per conversation) decides, across instances.
      const made = await this.sql`
        INSERT INTO live_responses (id, app_id, conversation_id, created_at, input, owner, lease_until)
        VALUES (${start.id}, ${start.app_id}, ${start.conversation_id}, ${start.created_at}, ${JSON.stringify(start.input)}, ${this.owner}, ${this.now() + LEASE_MS})
        ON CONFLICT DO NOTHING RETURNING id`;
      if (made.length === 1) {
        this.producing.set(start.id, { next: 0, writing: Promise.resolve() });
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

  append(id: string, event: UnsequencedEvent): Promise<void> {
    const p = this.producing.get(id);
    if (!p) return Promise.reject(new Error(`${id} is not a live response of this instance`));
    const seq = p.next++;
    const terminal = TERMINAL_EVENTS.has(event.event);
    if (terminal) this.producing.delete(id);
    // One statement (one transaction): the event, the response's end, and the notification; nothing
    // once another instance took the response over (D-38: it thought this one dead).
    const run = async () => {
      const done = await this.sql`
        WITH mine AS (UPDATE live_responses SET ended_at = ${terminal ? this.now() : null}::bigint
                      WHERE id = ${id} AND owner = ${this.owner} AND ended_at IS NULL RETURNING id),
        e AS (INSERT INTO response_events (response_id, seq, body) SELECT id, ${seq}, ${JSON.stringify(event)} FROM mine)
        SELECT pg_notify(${EVENTS}, id) FROM mine`;
      if (done.length === 0) {
        this.producing.delete(id);
        throw new Error(`${id} is no longer a live response of this instance (another took it over)`);
      }
    };
    const result = p.writing.then(run, run);
    // The next append waits for this one, whatever its outcome; close() too.
    p.writing = result.catch(() => {});
    return result;
  }

  async trace(id: string): Promise<ResponseTrace | undefined> {
    const t = await this.state(id, 0);
    return t && { start: t.start, events: t.events, ended: t.ended };
  }

  /** A response's start, its events from `from`, and whether it ended (events null past D-36's retention). */
  private async state(
    id: string,
    from: number,
  ): Promise<{ start: LiveResponseStart; events: UnsequencedEvent[] | null; ended: boolean } | undefined> {
    const [row] = await this.sql<
      Row[]
    >`SELECT id, app_id, conversation_id, created_at, input, ended_at FROM live_responses WHERE id = ${id}`;
    if (!row) return undefined;
    const ended = row.ended_at !== null;
    if (ended && Number(row.ended_at) <= this.now() - this.ttlMs) {
      await this.sql`DELETE FROM response_events WHERE response_id = ${id}`;
      return { start: startOf(row), events: null, ended };
    }
    // Read after the row: an event appended in between is read too, never an end without its event.
    const events = await this.sql<
      { body: string }[]
    >`SELECT body FROM response_events WHERE response_id = ${id} AND seq >= ${from} ORDER BY seq`;
    return { start: startOf(row), events: events.map((e) => JSON.parse(e.body) as UnsequencedEvent), ended };
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
    await this.sql`SELECT pg_notify(${CANCELS}, ${id})`;
  }

  onCancelRequest(id: string, listener: () => void): () => void {
    const set = this.cancels.get(id) ?? new Set();
    set.add(listener);
    this.cancels.set(id, set);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.cancels.get(id) === set) this.cancels.delete(id);
    };
  }

  /**
   * D-38: live responses whose producer is gone, taken over by this instance so that the caller (start-up,
   * or the sweep of a running instance) appends their terminal event. Gone: its lease expired, or its
   * liveness lock is free (the server frees it when the producer's connection closes, as a kill -9
   * does), so a restart need not wait out the lease. One UPDATE takes them: when two instances sweep
   * at once, the second finds each row already renewed by the first, and takes none of them.
   */
  async unfinished(): Promise<UnfinishedResponse[]> {
    const now = this.now();
    const taken = await this.sql<Row[]>`
      UPDATE live_responses SET owner = ${this.owner}, lease_until = ${now + LEASE_MS}
      WHERE ended_at IS NULL AND owner <> ${this.owner} AND (lease_until < ${now} OR NOT EXISTS (
        SELECT 1 FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid = ((hashtextextended(owner, 0) >> 32) & 4294967295)::oid
          AND l.objid = (hashtextextended(owner, 0) & 4294967295)::oid))
      RETURNING id, app_id, conversation_id, created_at, input, ended_at`;
    const out: UnfinishedResponse[] = [];
    for (const row of taken) {
      const events = await this.sql<{ body: string }[]>`SELECT body FROM response_events WHERE response_id = ${row.id} ORDER BY seq`;
      this.producing.set(row.id, { next: events.length, writing: Promise.resolve() });
      out.push({ start: startOf(row), events: events.map((e) => JSON.parse(e.body) as UnsequencedEvent), ended: false });
    }
    return out;
  }
}
