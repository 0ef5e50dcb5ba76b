// What memory keeps of the file store's webhook outbox (D-167): per event its ids, time, deliveries and
// where its line is in `webhooks.jsonl`; per delivery its state and where its attempts' lines are. The
// bodies and the attempts themselves stay in the file, read when a delivery is claimed or the delivery
// log is read, so memory follows the number of events kept, a few hundred bytes each, not their size.
import type { Attempt, Delivery, OutboxEvent } from '../webhooks.ts';
import type { LineAt } from './journal-io.ts';

export const keyOf = (eventId: string, endpointId: string) => `${eventId} ${endpointId}`;

/** When a delivery is first due (ms): when its event was made, or a test event's `due_at` (D-129). */
export const firstDue = (ev: Pick<OutboxEvent, 'created_at'>, d: OutboxEvent['deliveries'][number]) => d.due_at ?? ev.created_at * 1000;

/** An event as memory keeps it. */
export interface EventRef {
  id: string;
  team_id: string;
  /** Unix seconds. */
  created_at: number;
  /** The endpoints subscribed when it happened, with their first state. */
  deliveries: OutboxEvent['deliveries'];
  /** Where its `{e}` line is; undefined while that line is not written (adopt on a full disk). */
  where: LineAt | undefined;
  /** The whole event while `where` is undefined: it is in no file here yet. */
  full: OutboxEvent | undefined;
}

/** A delivery's state and where the lines of its attempts are, oldest first. */
export interface DeliveryRef {
  d: Delivery;
  lines: LineAt[];
}

export class OutboxIndex {
  readonly events = new Map<string, EventRef>();
  readonly deliveries = new Map<string, DeliveryRef>();
  /** The keys of pending deliveries: a claim looks at these only, not at a week of finished ones. */
  readonly pending = new Set<string>();
  /** Unix seconds of each endpoint's first failed attempt since its last success (D-86). */
  readonly failing = new Map<string, number>();
  /** Bytes of the lines of what is kept here, newlines included: about what a compaction writes. */
  liveBytes = 0;

  /** One line of `webhooks.jsonl`, read back at start-up, at `where`. */
  replay(e: Record<string, unknown>, where: LineAt): void {
    if (e.e) this.remember(e.e as OutboxEvent, where);
    else if (e.a) this.attempted(e.a as Attempt, e.d as Delivery, where);
    else if (typeof e.r === 'string') this.reopen(e.r, e.ep as string[], Number(e.at));
    // D-87: a prune is a line of its own, replayed where it was made, so a restart forgets what it forgot.
    else if (typeof e.p === 'number') this.prune(e.p);
  }

  /** Keeps `ev` (once) with where its line is, or whole when it has none yet; undefined if known already. */
  remember(ev: OutboxEvent, where: LineAt | undefined): EventRef | undefined {
    if (this.events.has(ev.id)) return undefined;
    const ref: EventRef = {
      id: ev.id,
      team_id: ev.team_id,
      created_at: ev.created_at,
      deliveries: ev.deliveries,
      where,
      full: where ? undefined : ev,
    };
    this.events.set(ev.id, ref);
    if (where) this.liveBytes += where.len + 1;
    for (const d of ev.deliveries)
      this.put({ event_id: ev.id, endpoint_id: d.endpoint_id, state: d.state, attempts: 0, next_at: firstDue(ev, d) }, []);
    return ref;
  }

  /** An event's line written at `where` after it was kept whole. */
  written(ref: EventRef, where: LineAt): void {
    ref.where = where;
    ref.full = undefined;
    this.liveBytes += where.len + 1;
  }

  /** An attempt whose line is at `where`, and its delivery's next state; ignored for an event not kept. */
  attempted(a: Attempt, next: Delivery, where: LineAt): void {
    this.noteAttempt(a);
    const k = keyOf(a.event_id, a.endpoint_id);
    const known = this.deliveries.get(k);
    if (!known) return;
    known.lines.push(where);
    this.put({ ...next }, known.lines);
    this.liveBytes += where.len + 1;
  }

  private put(d: Delivery, lines: LineAt[]): void {
    const k = keyOf(d.event_id, d.endpoint_id);
    this.deliveries.set(k, { d, lines });
    if (d.state === 'pending') this.pending.add(k);
    else this.pending.delete(k);
  }

  /** Puts deliveries back to pending, due at `at` (D-87's redeliver); the number changed. */
  reopen(eventId: string, endpointIds: readonly string[], at: number): number {
    let n = 0;
    for (const ep of endpointIds) {
      const known = this.deliveries.get(keyOf(eventId, ep));
      if (!known) continue;
      this.put({ ...known.d, state: 'pending', next_at: at }, known.lines);
      n++;
    }
    return n;
  }

  /** D-86: an endpoint's failures since its last success, in the order attempts were recorded. */
  private noteAttempt(a: Attempt): void {
    if (a.status !== null && a.status >= 200 && a.status < 300) this.failing.delete(a.endpoint_id);
    else if (!this.failing.has(a.endpoint_id)) this.failing.set(a.endpoint_id, a.created_at);
  }

  /** D-87: forgets events older than `before` (ms) whose deliveries are all finished; the number forgotten. */
  prune(before: number): number {
    let dropped = 0;
    for (const ref of this.events.values()) {
      if (ref.created_at * 1000 >= before) continue;
      const keys = ref.deliveries.map((d) => keyOf(ref.id, d.endpoint_id));
      if (keys.some((k) => this.pending.has(k))) continue;
      this.events.delete(ref.id);
      if (ref.where) this.liveBytes -= ref.where.len + 1;
      for (const k of keys) {
        for (const w of this.deliveries.get(k)?.lines ?? []) this.liveBytes -= w.len + 1;
        this.deliveries.delete(k);
      }
      dropped++;
    }
    return dropped;
  }

  /** The bytes of every kept line counted again (after a compaction moved and rewrote them). */
  recount(): void {
    let n = 0;
    for (const ref of this.events.values()) if (ref.where) n += ref.where.len + 1;
    for (const x of this.deliveries.values()) for (const w of x.lines) n += w.len + 1;
    this.liveBytes = n;
  }
}
