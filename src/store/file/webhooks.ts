// The webhook outbox in the data directory (docs/webhooks.md, D-84): `webhooks.jsonl`, lines
// `{e: event}` (with its deliveries), `{a: attempt, d: delivery}` (an attempt and the delivery's next
// state) and `{r: event id, ep: endpoints, at}` (a redeliver), replayed into memory at open and written
// back without what retention let go (D-87). Leases are in memory: one process owns the directory (D-25).
// An event reporting a conversation's change is first written in that change's journal line
// (conversations.jsonl), and `adopt` brings it here; start-up adopts those this journal lacks.
import { Listeners } from '../../core/listeners.ts';
import path from 'node:path';
import { DataFileError } from '../../core/errors.ts';
import {
  type Attempt,
  type Claimed,
  type Delivery,
  type DeliveryQuery,
  type Due,
  LocalFollows,
  type OutboxEvent,
  type WebhookOutbox,
} from '../webhooks.ts';
import { Journal } from './journal.ts';

export type { OutboxEvent };

const keyOf = (eventId: string, endpointId: string) => `${eventId} ${endpointId}`;

/** `w`, the webhook events a conversations.jsonl line carries (D-84), when there are any. */
export const withEvents = <T extends object>(line: T, w: OutboxEvent[]) => (w.length > 0 ? { ...line, w } : line);

export class FileOutbox implements WebhookOutbox {
  private readonly events = new Map<string, OutboxEvent>();
  private readonly deliveryMap = new Map<string, Delivery>();
  /** The keys of pending deliveries: a claim looks at these only, not at a week of finished ones. */
  private readonly pending = new Set<string>();
  private readonly attemptMap = new Map<string, Attempt[]>();
  private readonly leases = new Map<string, { owner: string; until: number }>();
  /** Unix seconds of each endpoint's first failed attempt since its last success (D-86). */
  private readonly failing = new Map<string, number>();
  private readonly listeners = new Listeners<OutboxEvent[]>();
  /** D-88: one process owns the directory, so its listeners are all there are. */
  readonly follows = new LocalFollows();
  private journal!: Journal;
  /** Events `adopt` could not write here (a full disk): written again by `settled`. */
  private unwritten: OutboxEvent[] = [];

  /**
   * Opens `webhooks.jsonl` and adopts the events of `carried` (read from conversations.jsonl) it lacks:
   * their change is durable, and the process ended before they reached the outbox. Those older than
   * the retention (D-87, the settings' WEBHOOK_RETENTION_DAYS) are not brought back; with none given, all are.
   */
  static async open(dataDir: string, carried: OutboxEvent[] = [], retentionMs?: number): Promise<FileOutbox> {
    const o = await FileOutbox.read(dataDir);
    const since = retentionMs === undefined ? -Infinity : (Date.now() - retentionMs) / 1000;
    o.adopt(carried.filter((e) => e.created_at >= since));
    await o.settled();
    return o;
  }

  private static async read(dataDir: string): Promise<FileOutbox> {
    const o = new FileOutbox();
    const file = path.join(dataDir, 'webhooks.jsonl');
    o.journal = new Journal(file);
    const { lines } = await o.journal.open((e, line) => {
      if (!e || typeof e !== 'object') throw new DataFileError(file, `line ${line}: not an object`);
      o.replay(e as Record<string, unknown>);
    });
    if (o.liveLines() < lines) await o.journal.compact(() => o.snapshot());
    return o;
  }

  private replay(e: Record<string, unknown>): void {
    if (e.e) this.remember(e.e as OutboxEvent);
    else if (e.a) {
      const a = e.a as Attempt;
      const d = e.d as Delivery;
      this.put(d);
      const list = this.attemptMap.get(keyOf(a.event_id, a.endpoint_id)) ?? [];
      list.push(a);
      this.attemptMap.set(keyOf(a.event_id, a.endpoint_id), list);
      this.noteAttempt(a);
    } else if (typeof e.r === 'string') this.reopen(e.r, e.ep as string[], Number(e.at));
  }

  private remember(ev: OutboxEvent): void {
    if (this.events.has(ev.id)) return;
    this.events.set(ev.id, ev);
    for (const d of ev.deliveries)
      this.put({ event_id: ev.id, endpoint_id: d.endpoint_id, state: d.state, attempts: 0, next_at: d.due_at ?? ev.created_at * 1000 });
  }

  private put(d: Delivery): void {
    const k = keyOf(d.event_id, d.endpoint_id);
    this.deliveryMap.set(k, d);
    if (d.state === 'pending') this.pending.add(k);
    else this.pending.delete(k);
  }

  private reopen(eventId: string, endpointIds: readonly string[], at: number): number {
    let n = 0;
    for (const ep of endpointIds) {
      const d = this.deliveryMap.get(keyOf(eventId, ep));
      if (!d) continue;
      this.put({ ...d, state: 'pending', next_at: at });
      n++;
    }
    return n;
  }

  private liveLines(): number {
    let n = this.events.size;
    for (const list of this.attemptMap.values()) n += list.length;
    return n;
  }

  /** What is alive, as lines: each event, then each attempt with its delivery's state at the end. */
  private snapshot(): unknown[] {
    const out: unknown[] = [];
    for (const ev of this.events.values()) {
      out.push({ e: ev });
      for (const d of ev.deliveries) {
        const k = keyOf(ev.id, d.endpoint_id);
        const delivery = this.deliveryMap.get(k)!;
        const attempts = this.attemptMap.get(k) ?? [];
        // Each attempt line carries the delivery's state as it is now: the last one replayed sets it.
        for (const a of attempts) out.push({ a, d: delivery });
        // A redelivered one with no attempt since keeps its state in a line of its own.
        if (attempts.length === 0 && (delivery.state !== d.state || delivery.next_at !== (d.due_at ?? ev.created_at * 1000)))
          out.push({ r: ev.id, ep: [d.endpoint_id], at: delivery.next_at });
      }
    }
    return out;
  }

  /** Whether `id` is known here (start-up adopts from conversations.jsonl only those that are not). */
  has(id: string): boolean {
    return this.events.has(id);
  }

  /**
   * Takes events already durable in a conversation's journal line: remembered at once (the worker
   * may start on them) and written here without waiting for an fsync (D-84: that line holds them
   * until `settled` has made them durable here).
   */
  adopt(events: OutboxEvent[]): void {
    const fresh = events.filter((e) => !this.events.has(e.id));
    if (fresh.length === 0) return;
    for (const ev of fresh) this.remember(ev);
    this.write(fresh);
    this.tell(fresh);
  }

  private write(events: OutboxEvent[]): void {
    for (const [i, ev] of events.entries()) {
      try {
        this.journal.appendNow({ e: ev });
      } catch {
        // Still in memory and in conversations.jsonl: `settled` tries again before that journal lets it go.
        this.unwritten.push(...events.slice(i));
        return;
      }
    }
  }

  /** Every adopted event durable here (before conversations.jsonl is compacted without them); rejects if one cannot be. */
  async settled(): Promise<void> {
    const retry = this.unwritten.splice(0);
    for (const [i, ev] of retry.entries()) {
      try {
        this.journal.appendNow({ e: ev });
      } catch (err) {
        this.unwritten.unshift(...retry.slice(i));
        throw err;
      }
    }
    await this.journal.sync();
  }

  private tell(events: OutboxEvent[]): void {
    this.listeners.tell(events);
  }

  onEvents(fn: (events: OutboxEvent[]) => void): () => void {
    return this.listeners.add(fn);
  }

  async add(events: OutboxEvent[]): Promise<void> {
    const fresh = events.filter((e) => !this.events.has(e.id));
    for (const ev of fresh) this.journal.appendNow({ e: ev });
    await this.journal.sync();
    for (const ev of fresh) this.remember(ev);
    this.tell(fresh);
  }

  async claim(owner: string, now: number, leaseMs: number, pick: (due: Due[]) => Due[]): Promise<Claimed[]> {
    const oldest = new Map<string, Delivery>();
    for (const k of this.pending) {
      const d = this.deliveryMap.get(k)!;
      if (d.state !== 'pending' || d.next_at > now) continue;
      const lease = this.leases.get(k);
      if (lease && lease.until > now) continue;
      const held = oldest.get(d.endpoint_id);
      if (!held || d.next_at < held.next_at) oldest.set(d.endpoint_id, d);
    }
    const due = [...oldest.values()].map((d) => ({ delivery: { ...d }, team_id: this.events.get(d.event_id)!.team_id }));
    const out: Claimed[] = [];
    for (const { delivery: d } of pick(due)) {
      const k = keyOf(d.event_id, d.endpoint_id);
      // Only what was offered: a pick is never a way to lease a delivery that is not due.
      const lease = this.leases.get(k);
      if (oldest.get(d.endpoint_id) !== this.deliveryMap.get(k) || (lease && lease.until > now)) continue;
      this.leases.set(k, { owner, until: now + leaseMs });
      out.push({ delivery: d, event: this.events.get(d.event_id)! });
    }
    return out;
  }

  /**
   * D-85 (revised): an attempt is a log line, written at once and fsynced in the background (within a
   * second, one fsync for all meanwhile). A kill -9 loses none; a power cut may lose the last second's,
   * and a delivery whose success is lost is attempted again: at least once allows it.
   */
  async settle(attempt: Attempt, next: Delivery): Promise<void> {
    const k = keyOf(next.event_id, next.endpoint_id);
    this.journal.appendNow({ a: attempt, d: next });
    this.put({ ...next });
    const list = this.attemptMap.get(k) ?? [];
    list.push(attempt);
    this.attemptMap.set(k, list);
    this.noteAttempt(attempt);
    this.leases.delete(k);
  }

  async redeliver(eventId: string, endpointIds: readonly string[], now: number): Promise<number> {
    const known = endpointIds.filter((ep) => this.deliveryMap.has(keyOf(eventId, ep)));
    if (known.length === 0) return 0;
    this.journal.appendNow({ r: eventId, ep: known, at: now });
    await this.journal.sync();
    return this.reopen(eventId, known, now);
  }

  async event(id: string): Promise<OutboxEvent | undefined> {
    return this.events.get(id);
  }

  async deliveries(q: DeliveryQuery) {
    const out: Array<{ event: OutboxEvent; delivery: Delivery; attempts: Attempt[] }> = [];
    const events = [...this.events.values()].filter((e) => e.team_id === q.team_id && (!q.event_id || e.id === q.event_id));
    for (let i = events.length - 1; i >= 0 && out.length < q.limit; i--) {
      const ev = events[i]!;
      for (const d of ev.deliveries) {
        if (q.endpoint_id && d.endpoint_id !== q.endpoint_id) continue;
        const k = keyOf(ev.id, d.endpoint_id);
        out.push({ event: ev, delivery: { ...this.deliveryMap.get(k)! }, attempts: [...(this.attemptMap.get(k) ?? [])].reverse() });
        if (out.length >= q.limit) break;
      }
    }
    return out;
  }

  async failingSince(endpointId: string): Promise<number | null> {
    return this.failing.get(endpointId) ?? null;
  }

  /** D-86: an endpoint's failures since its last success, in the order attempts were recorded. */
  private noteAttempt(a: Attempt): void {
    if (a.status !== null && a.status >= 200 && a.status < 300) this.failing.delete(a.endpoint_id);
    else if (!this.failing.has(a.endpoint_id)) this.failing.set(a.endpoint_id, a.created_at);
  }

  async prune(before: number): Promise<void> {
    let dropped = 0;
    for (const ev of this.events.values()) {
      if (ev.created_at * 1000 >= before) continue;
      const keys = ev.deliveries.map((d) => keyOf(ev.id, d.endpoint_id));
      if (keys.some((k) => this.deliveryMap.get(k)?.state === 'pending')) continue;
      this.events.delete(ev.id);
      for (const k of keys) {
        this.deliveryMap.delete(k);
        this.pending.delete(k);
        this.attemptMap.delete(k);
        this.leases.delete(k);
      }
      dropped++;
    }
    if (dropped > 0) await this.journal.compact(() => this.snapshot());
  }

  async close(): Promise<void> {
    await this.settled().catch(() => {});
    await this.journal.close();
  }
}
