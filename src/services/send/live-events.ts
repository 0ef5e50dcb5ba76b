// The events of a reply this process produces, in the order its producer hands them out: the answer to
// the request that started the reply (and a keyed retry of it on this instance, D-30) reads them here
// rather than from the store, so that its client gets its terminal event also while the store is out
// of reach (D-91). An event is added once the store kept it (the terminal one also when it could not be).
// Kept while the reply runs and its answers are read.
import type { UnsequencedEvent } from '../../contract/index.ts';

export class LiveEvents {
  private readonly list: UnsequencedEvent[] = [];
  private readonly waiting = new Set<() => void>();
  /** No more events: the terminal one was added, or the producer stopped without one (`abandoned`). */
  private closed = false;
  /** The producer stopped without a terminal event (another instance took the reply over): see `follow`. */
  abandoned = false;

  add(e: UnsequencedEvent, terminal: boolean): void {
    if (this.closed) return;
    this.list.push(e);
    if (terminal) this.close();
    else this.wakeAll();
  }

  /** The producer stopped without a terminal event. */
  abandon(): void {
    if (this.closed) return;
    this.abandoned = true;
    this.close();
  }

  /** The events from the first, then each as it is added, until the last. */
  async *follow(): AsyncGenerator<UnsequencedEvent> {
    for (let n = 0; ; ) {
      while (n < this.list.length) yield this.list[n++]!;
      if (this.closed) return;
      await new Promise<void>((resolve) => this.waiting.add(resolve));
    }
  }

  private close(): void {
    this.closed = true;
    this.wakeAll();
  }

  private wakeAll(): void {
    for (const f of this.waiting) f();
    this.waiting.clear();
  }
}
