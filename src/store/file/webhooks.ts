// The webhook outbox in the data directory (docs/webhooks.md, D-84): `webhooks.jsonl`, lines
// `{e: event}` (with its deliveries), `{a: attempt, d: delivery}` (an attempt and the delivery's next
// state), `{r: event id, ep: endpoints, at}` (a redeliver) and `{p: before}` (a prune, D-87), read back
// at open line by line. D-167: memory holds an index (outbox-index.ts), the bodies and attempts stay in
// the file, which is compacted as the store's journal is (outbox-compaction.ts). Leases are in memory:
// one process owns the directory (D-25). An event reporting a conversation's change is first written in
// that change's journal line (conversations.jsonl), and `adopt` brings it here; start-up adopts those
// this journal lacks.
import path from 'node:path';
import { DataFileError } from '../../core/errors.ts';
import { Listeners } from '../../core/listeners.ts';
import {
  type Attempt,
  type Claimed,
  type Delivery,
  type DeliveryQuery,
  type Due,
  failedAs,
  LocalFollows,
  type OutboxEvent,
  type WebhookOutbox,
} from '../webhooks.ts';
import { compactionDue } from './compaction.ts';
import { Journal } from './journal.ts';
import type { FileStoreOptions } from './options.ts';
import { compactOutbox } from './outbox-compaction.ts';
import { type EventRef, OutboxIndex, keyOf } from './outbox-index.ts';

export type { OutboxEvent };

/** `w`, the webhook events a conversations.jsonl line carries (D-84), when there are any. */
export const withEvents = <T extends object>(line: T, w: OutboxEvent[]) => (w.length > 0 ? { ...line, w } : line);

/** What the outbox is opened with: the store's (FileStoreOptions). */
export type OutboxOptions = Pick<FileStoreOptions, 'compaction' | 'onCompactionError' | 'warn' | 'webhookRetentionMs'>;

export class FileOutbox implements WebhookOutbox {
  private readonly index = new OutboxIndex();
  private readonly leases = new Map<string, { owner: string; until: number }>();
  private readonly listeners = new Listeners<OutboxEvent[]>();
  /** D-88: one process owns the directory, so its listeners are all there are. */
  readonly follows = new LocalFollows();
  private journal!: Journal;
  /** Events `adopt` could not write here (a full disk): written again by `settled`. */
  private unwritten: OutboxEvent[] = [];
  private compacting: Promise<void> | undefined;
  /** The file's size right after the last compaction (compactionDue). */
  private compactedBytes = 0;

  private constructor(private readonly opts: OutboxOptions) {}

  /**
   * Opens `webhooks.jsonl` and adopts the events of `carried` (read from conversations.jsonl) it lacks
   * (see `lacks`): their change is durable, and the process ended before they reached the outbox.
   */
  static async open(dataDir: string, carried: OutboxEvent[] = [], opts: OutboxOptions = {}): Promise<FileOutbox> {
    const o = new FileOutbox(opts);
    const file = path.join(dataDir, 'webhooks.jsonl');
    o.journal = new Journal(file);
    // Line by line (Journal.open): each body is parsed and let go, only the index is kept.
    await o.journal.open((e, line, where) => {
      if (!e || typeof e !== 'object') throw new DataFileError(file, `line ${line}: not an object`);
      o.index.replay(e as Record<string, unknown>, where);
    });
    try {
      if (o.due()) await o.compact();
      o.adopt(carried.filter((e) => o.lacks(e)));
      await o.settled();
    } catch (err) {
      await o.journal.close().catch(() => {});
      throw err;
    }
    return o;
  }

  /**
   * Whether start-up should adopt `e`, carried by a conversations.jsonl line: it is not here, and not
   * older than the retention (D-87, the settings' WEBHOOK_RETENTION_DAYS; with none given, all are).
   */
  lacks(e: OutboxEvent): boolean {
    const retention = this.opts.webhookRetentionMs;
    if (retention !== undefined && e.created_at < (Date.now() - retention) / 1000) return false;
    return !this.index.events.has(e.id);
  }

  /** Whether `id` is known here. */
  has(id: string): boolean {
    return this.index.events.has(id);
  }

  /**
   * Takes events already durable in a conversation's journal line: remembered at once (the worker
   * may start on them) and written here without waiting for an fsync (D-84: that line holds them
   * until `settled` has made them durable here).
   */
  adopt(events: OutboxEvent[]): void {
    const fresh: Array<{ ev: OutboxEvent; ref: EventRef }> = [];
    for (const ev of events) {
      const ref = this.index.remember(ev, undefined);
      if (ref) fresh.push({ ev, ref });
    }
    if (fresh.length === 0) return;
    for (const [i, { ev, ref }] of fresh.entries()) {
      try {
        this.index.written(ref, this.journal.appendNow({ e: ev }));
      } catch {
        // Kept whole and in conversations.jsonl: `settled` tries again before that journal lets it go.
        this.unwritten.push(...fresh.slice(i).map((f) => f.ev));
        break;
      }
    }
    this.tell(fresh.map((f) => f.ev));
  }

  /** Every adopted event durable here (before conversations.jsonl is compacted without them); rejects if one cannot be. */
  async settled(): Promise<void> {
    const retry = this.unwritten.splice(0);
    for (const [i, ev] of retry.entries()) {
      const ref = this.index.events.get(ev.id);
      // Written meanwhile by a compaction, or forgotten.
      if (!ref || ref.where) continue;
      try {
        this.index.written(ref, this.journal.appendNow({ e: ev }));
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
    const fresh = events.filter((e) => !this.index.events.has(e.id));
    // Kept in the same step as its line is written: a compaction's snapshot then holds every line before it.
    for (const ev of fresh) this.index.remember(ev, this.journal.appendNow({ e: ev }));
    await this.journal.sync();
    this.tell(fresh);
  }

  /** An event read back whole: from memory while it is in no file here, else its line (D-167). */
  private read(ref: EventRef): OutboxEvent {
    if (!ref.where) return ref.full!;
    const ev = (JSON.parse(this.journal.readAt(ref.where)) as { e?: OutboxEvent }).e;
    if (ev?.id !== ref.id) throw new DataFileError(this.journal.file, `no event ${ref.id} at byte ${ref.where.at}`);
    return ev;
  }

  async claim(owner: string, now: number, leaseMs: number, pick: (due: Due[]) => Due[]): Promise<Claimed[]> {
    // D-169: the oldest due delivery of each endpoint, offered with its event's team (kept in the index).
    const oldest = new Map<string, Delivery>();
    for (const k of this.index.pending) {
      const { d } = this.index.deliveries.get(k)!;
      if (d.next_at > now) continue;
      const lease = this.leases.get(k);
      if (lease && lease.until > now) continue;
      const held = oldest.get(d.endpoint_id);
      if (!held || d.next_at < held.next_at) oldest.set(d.endpoint_id, d);
    }
    const due = [...oldest.values()].map((d) => ({ delivery: { ...d }, team_id: this.index.events.get(d.event_id)!.team_id }));
    const out: Claimed[] = [];
    for (const { delivery: d } of pick(due)) {
      const k = keyOf(d.event_id, d.endpoint_id);
      // Only what was offered: a pick is never a way to lease a delivery that is not due.
      const lease = this.leases.get(k);
      if (oldest.get(d.endpoint_id) !== this.index.deliveries.get(k)?.d || (lease && lease.until > now)) continue;
      this.leases.set(k, { owner, until: now + leaseMs });
      // Only a leased delivery's body is read from the file (D-167).
      out.push({ delivery: { ...d }, event: this.read(this.index.events.get(d.event_id)!) });
    }
    return out;
  }

  /**
   * D-85 (revised): an attempt is a log line, written at once and fsynced in the background (within a
   * second, one fsync for all meanwhile). A kill -9 loses none; a power cut may lose the last second's,
   * and a delivery whose success is lost is attempted again: at least once allows it.
   */
  async settle(attempt: Attempt, next: Delivery): Promise<void> {
    this.index.attempted(attempt, next, this.journal.appendNow({ a: attempt, d: next }));
    this.leases.delete(keyOf(next.event_id, next.endpoint_id));
  }

  async redeliver(eventId: string, endpointIds: readonly string[], now: number): Promise<number> {
    const known = endpointIds.filter((ep) => this.index.deliveries.has(keyOf(eventId, ep)));
    if (known.length === 0) return 0;
    this.journal.appendNow({ r: eventId, ep: known, at: now });
    const n = this.index.reopen(eventId, known, now);
    await this.journal.sync();
    return n;
  }

  async event(id: string): Promise<OutboxEvent | undefined> {
    const ref = this.index.events.get(id);
    return ref && this.read(ref);
  }

  async deliveries(q: DeliveryQuery) {
    const out: Array<{ event: OutboxEvent; delivery: Delivery; attempts: Attempt[] }> = [];
    const events = [...this.index.events.values()].filter(
      (e) => e.team_id === q.team_id && (!q.event_id || e.id === q.event_id) && (q.since === undefined || e.created_at >= q.since),
    );
    for (let i = events.length - 1; i >= 0 && out.length < q.limit; i--) {
      const ref = events[i]!;
      let ev: OutboxEvent | undefined;
      for (const first of ref.deliveries) {
        if (q.endpoint_id && first.endpoint_id !== q.endpoint_id) continue;
        const { d, lines } = this.index.deliveries.get(keyOf(ref.id, first.endpoint_id))!;
        if (q.failed && !failedAs(d, q.failed)) continue;
        ev ??= this.read(ref);
        const attempts = lines.map((w) => (JSON.parse(this.journal.readAt(w)) as { a: Attempt }).a).reverse();
        out.push({ event: ev, delivery: { ...d }, attempts });
        if (out.length >= q.limit) break;
      }
    }
    return out;
  }

  async failingSince(endpointId: string): Promise<number | null> {
    return this.index.failing.get(endpointId) ?? null;
  }

  /**
   * D-87: the events past `before` let go, and a line saying so; the file is compacted once they made
   * up most of it (compactionDue), in the background: deliveries go on meanwhile.
   */
  async prune(before: number): Promise<void> {
    if (this.index.prune(before) === 0) return;
    // In the same step: replayed at this point, the line forgets what was just forgotten.
    this.journal.appendNow({ p: before });
    for (const k of this.leases.keys()) if (!this.index.deliveries.has(k)) this.leases.delete(k);
    if (this.due() && !this.compacting)
      this.compacting = this.compact()
        // The longer file still holds everything; the next prune tries again.
        .catch((err: Error) =>
          (this.opts.onCompactionError ?? ((e) => this.opts.warn?.(`webhooks.jsonl not compacted: ${e.message}`)))(err),
        )
        .finally(() => {
          this.compacting = undefined;
        });
  }

  private due(): boolean {
    return compactionDue(this.journal.bytes, this.index.liveBytes, this.compactedBytes, this.opts.compaction);
  }

  private async compact(): Promise<void> {
    await compactOutbox(this.journal, this.index);
    this.compactedBytes = this.journal.bytes;
  }

  /** Waits for the compaction under way, if any. */
  async idle(): Promise<void> {
    while (this.compacting) await this.compacting;
  }

  async close(): Promise<void> {
    await this.idle();
    await this.settled().catch(() => {});
    await this.journal.close();
  }
}
