// Background work on a timer: a task run every `ms`, never two at once (a tick while one runs is
// skipped), the timer unref'd so that it keeps no process alive, and a stop that waits for the one under
// way. The stores' prunes and sweeps, the retention's sweep and D-114's statistics each run on one.

export class Periodic {
  private readonly timer: NodeJS.Timeout;
  private running: Promise<void> | undefined;

  /** Starts at once: the first run is `ms` from now. `onError` hears a run that failed; the next runs anyway. */
  constructor(task: () => Promise<unknown>, ms: number, onError: (err: Error) => void = () => {}) {
    this.timer = setInterval(() => {
      this.running ??= task()
        .then(() => {}, onError)
        .finally(() => (this.running = undefined));
    }, ms);
    this.timer.unref();
  }

  /** No run after this; resolves once the one under way (if any) has ended. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
