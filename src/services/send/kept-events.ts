// D-100: a reply's events are handed to the store as they come, without waiting for each to be kept
// (PostgreSQL writes them in batches), and to the answer (LiveEvents) once kept, in their order: every
// reader, the requesting connection included, still sees only stored events (D-30, D-35).
import type { UnsequencedEvent } from '../../contract/index.ts';
import type { LiveEvents } from './live-events.ts';

export interface KeptEventsOptions {
  /** The store's append: resolves once the event is kept. */
  append: (e: UnsequencedEvent) => Promise<void>;
  live: LiveEvents;
  /** The store is out of reach (D-91): the reply stops, the events already kept stay the answer's. */
  unavailable: (err: unknown) => boolean;
  onUnavailable: () => void;
}

export class KeptEvents {
  private chain: Promise<void> = Promise.resolve();
  /** An append failed otherwise than for a lost store (another instance took the reply over): production ends. */
  private failed: { err: unknown } | undefined;

  constructor(private readonly o: KeptEventsOptions) {}

  /** Appends `e`; the answer gets it once kept, after the events before it. */
  add(e: UnsequencedEvent, terminal: boolean): void {
    // Settled at once, so that a failure waiting for its turn is never an unhandled rejection.
    const outcome = this.o.append(e).then(
      () => undefined,
      (err: unknown) => ({ err }),
    );
    this.chain = this.chain.then(async () => {
      const r = await outcome;
      if (this.failed) return;
      if (!r) return this.o.live.add(e, terminal);
      // The exchange is saved (or its save failed) by then: the client hears of its end all the same.
      if (terminal) this.o.live.add(e, true);
      if (terminal || !this.o.unavailable(r.err)) this.failed = r;
      // D-91: this instance cannot prove it lives: it stops producing (the event was not kept).
      else this.o.onUnavailable();
    });
  }

  /** An event the store keeps already (the first, kept with the begin, D-35 revised): the answer gets it in its turn. */
  kept(e: UnsequencedEvent): void {
    this.chain = this.chain.then(() => {
      if (!this.failed) this.o.live.add(e, false);
    });
  }

  /** Throws the failure that ends production, if any came. */
  check(): void {
    if (this.failed) throw this.failed.err;
  }

  /** Once every event added so far is kept (or not): throws the failure that ends production, if any. */
  async settled(): Promise<void> {
    await this.chain;
    this.check();
  }
}
