// D-91: a reply whose store is out of reach ends failed (`store_unavailable`); its exchange is saved, then
// its terminal event appended, once the store is back, tried again every second until shutdown begins.
import type { Logger } from 'pino';
import type { UnsequencedEvent } from '../../contract/index.ts';
import type { Store } from '../../store/types.ts';
import type { ResponseRun } from './response-runner.ts';
import { STOPS, StopReason } from './stops.ts';

/** D-91: how often a save waiting for the store is tried again. */
const SAVE_RETRY_MS = 1_000;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export class OutageSaves {
  /** Saves waiting for the store to come back; they stop trying once shutdown begins. */
  private readonly waiting = new Set<Promise<void>>();
  private stopping = false;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  /**
   * D-91: the run's save. A run stopped because the store is out of reach saves nothing now, and one
   * whose save finds it out of reach ends failed the same way; both are saved by `saveWhenBack`.
   */
  async finish(run: ResponseRun, signal: AbortSignal, save: (r: ResponseRun) => Promise<void>): Promise<void> {
    const lost = signal.reason instanceof StopReason && signal.reason.error === STOPS.storeUnavailable;
    if (!lost) {
      try {
        return await save(run);
      } catch (err) {
        if (!this.store.isUnavailable(err)) throw err;
      }
    }
    run.status = 'failed';
    run.error = STOPS.storeUnavailable;
  }

  /** D-91: saves the exchange (failed, `store_unavailable`), then appends its terminal event, as soon as the store is back. */
  saveWhenBack(id: string, save: () => Promise<void>, terminal: UnsequencedEvent): void {
    const task = (async () => {
      for (;;) {
        try {
          await save();
          break;
        } catch (err) {
          if (this.stopping || !this.store.isUnavailable(err)) throw err;
        }
        await pause(SAVE_RETRY_MS);
      }
      // Tried again by the store while the connection is lost.
      await this.store.responses.append(id, terminal);
    })().catch((err: unknown) => this.log.error({ err, response_id: id }, 'response not saved'));
    this.waiting.add(task);
    void task.finally(() => this.waiting.delete(task));
  }

  /** Shutdown begins: a save waiting for the store gives up at its next failure. */
  stop(): void {
    this.stopping = true;
  }
}
