// D-167: the outbox's `webhooks.jsonl` compacted as the store's journal is (D-28, compaction.ts): the
// lines of what is kept copied from the current file into a new one line by line while deliveries go
// on, then swapped in (Journal.rewrite); the positions memory holds are moved with them.
import type { Attempt, Delivery, OutboxEvent } from '../webhooks.ts';
import type { Journal } from './journal.ts';
import type { LineAt } from './journal-io.ts';
import { type EventRef, type OutboxIndex, firstDue, keyOf } from './outbox-index.ts';

/** An event as the compaction's snapshot holds it: what was kept when it began. */
interface Kept {
  ref: EventRef;
  where: LineAt | undefined;
  full: OutboxEvent | undefined;
  deliveries: Array<{ first: OutboxEvent['deliveries'][number]; d: Delivery; lines: LineAt[] }>;
}

/**
 * Rewrites `journal` as each kept event's line followed by its attempts' lines (the last of each
 * delivery carrying the delivery's state, so that replaying it sets that state) or, for a delivery
 * redelivered with no attempt since, a redeliver line. Events forgotten while it runs are left out.
 */
export async function compactOutbox(journal: Journal, index: OutboxIndex): Promise<void> {
  let kept: Kept[] = [];
  /** Where each line of the snapshot went (an event's by its ref, an attempt's by its old position). */
  const moved = new Map<EventRef | LineAt, LineAt>();
  await journal.rewrite(
    () => {
      kept = [...index.events.values()].map((ref) => ({
        ref,
        where: ref.where,
        full: ref.full,
        deliveries: ref.deliveries.map((first) => {
          const x = index.deliveries.get(keyOf(ref.id, first.endpoint_id))!;
          return { first, d: { ...x.d }, lines: [...x.lines] };
        }),
      }));
    },
    async (out) => {
      for (let i = 0; i < kept.length; i++) {
        const k = kept[i]!;
        if (index.events.get(k.ref.id) !== k.ref) continue;
        moved.set(k.ref, await out(k.where ? journal.readAt(k.where) : JSON.stringify({ e: k.full })));
        for (const x of k.deliveries) await writeDelivery(journal, out, k, x, moved);
        // Deliveries go on between batches.
        if (i % 512 === 511) await new Promise((r) => setImmediate(r));
      }
    },
    (cut, start) => {
      // A line appended since the snapshot began moved with the tail; one in the snapshot is where it was written.
      const move = (w: LineAt | undefined, to: LineAt | undefined) =>
        w !== undefined && w.at >= cut ? { at: w.at - cut + start, len: w.len } : (to ?? w);
      for (const ref of index.events.values()) {
        const where = move(ref.where, moved.get(ref));
        if (where && !ref.where) index.written(ref, where);
        else ref.where = where;
        for (const first of ref.deliveries) {
          const x = index.deliveries.get(keyOf(ref.id, first.endpoint_id));
          if (x) x.lines = x.lines.map((w) => move(w, moved.get(w))!);
        }
      }
      index.recount();
    },
  );
}

async function writeDelivery(
  journal: Journal,
  out: (line: string) => Promise<LineAt>,
  k: Kept,
  x: Kept['deliveries'][number],
  moved: Map<EventRef | LineAt, LineAt>,
): Promise<void> {
  for (let j = 0; j < x.lines.length; j++) {
    const w = x.lines[j]!;
    const raw = journal.readAt(w);
    const last = j === x.lines.length - 1;
    moved.set(w, await out(last ? JSON.stringify({ a: (JSON.parse(raw) as { a: Attempt }).a, d: x.d }) : raw));
  }
  // A redelivered one with no attempt since keeps its state in a line of its own.
  if (x.lines.length === 0 && (x.d.state !== x.first.state || x.d.next_at !== firstDue(k.ref, x.first)))
    await out(JSON.stringify({ r: k.ref.id, ep: [x.first.endpoint_id], at: x.d.next_at }));
}
