// D-38: no response stays `in_progress` forever. At start-up, and every so often on a shared store,
// the responses a process left live (a kill -9) are saved `failed`, code `interrupted`, with the output
// their stored events show (folded by the runner's reducer).
import type { Logger } from 'pino';
import { Periodic } from '../../core/periodic.ts';
import type { Store } from '../../store/types.ts';
import type { ExchangeWriter, Outcome } from './exchange.ts';
import { foldEvents } from './response-fold.ts';
import { STOPS } from './stops.ts';

export class ResponseRecovery {
  private sweeper: Periodic | undefined;

  constructor(
    private readonly store: Store,
    private readonly exchanges: ExchangeWriter,
    private readonly log: Logger,
  ) {}

  /**
   * Saves the responses the last process left live; one saved just before the crash gets its terminal
   * event only. Resolves with how many there were.
   */
  async recover(): Promise<number> {
    const unfinished = await this.store.responses.unfinished();
    for (const t of unfinished) {
      const { start } = t;
      const file = await this.store.readHistory(start.conversation_id).catch(() => undefined);
      const saved = file?.responses.find((r) => r.id === start.id);
      if (saved) {
        const usage = saved.usage ? { usage: saved.usage } : {};
        await this.store.responses.append(
          start.id,
          saved.status === 'completed'
            ? { event: 'response.completed', data: { id: start.id, status: 'completed', ...usage } }
            : { event: 'response.failed', data: { id: start.id, status: 'failed', error: saved.error!, ...usage } },
        );
        continue;
      }
      const outcome: Outcome = {
        id: start.id,
        status: 'failed',
        error: STOPS.interrupted,
        usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
        output: foldEvents(t.events ?? []).output,
        text: '',
        source: undefined,
      };
      if (await this.store.getConversation(start.conversation_id)) {
        await this.exchanges.save(start.app_id, start.conversation_id, outcome, { ...start.input, createdAt: start.created_at }, undefined);
      }
      await this.store.responses.append(start.id, {
        event: 'response.failed',
        data: { id: start.id, status: 'failed', error: STOPS.interrupted, usage: outcome.usage },
      });
    }
    return unfinished.length;
  }

  /**
   * D-38 across instances: every `ms` while this one runs, the responses an instance left when it died
   * are saved `interrupted` by `recover`, start-up's path (the store hands each to one instance only).
   */
  sweep(ms: number): void {
    this.sweeper = new Periodic(
      async () => {
        const n = await this.recover();
        if (n > 0) this.log.warn({ count: n }, 'responses left running by a stopped instance saved as interrupted');
      },
      ms,
      (err) => this.log.warn({ err: err.message }, 'the sweep of interrupted responses failed; it runs again later'),
    );
  }

  /** Stops the sweep, once the one under way (if any) has finished. */
  async stopSweeping(): Promise<void> {
    await this.sweeper?.stop();
  }
}
