// One line per key: work on a key runs after every earlier work on that key has settled, in the order it
// came. The stores keep each conversation's changes in turn with it, and D-37's line of messages behind a
// running reply waits in it (with a cap on those waiting and a way out for a client that leaves).

interface Line {
  /** Settles once the last holder of the line has passed the turn on. */
  tail: Promise<void>;
  /** Holders and waiters: the line is forgotten when none is left. */
  size: number;
  /** Those still waiting for their turn. */
  waiting: number;
}

export class KeyedQueue {
  private readonly lines = new Map<string, Line>();

  /** Runs `fn` in the turn of `key`, after every earlier `run` or `enter` of it; resolves or rejects as `fn` does. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const line = this.line(key);
    const run = line.tail.then(fn);
    line.tail = run.then(
      () => this.leave(key, line),
      () => this.leave(key, line),
    );
    return run;
  }

  /**
   * Waits for the turn of `key`; resolves with the function that passes it on (call it once done; a
   * second call does nothing). A `signal` that aborts while waiting rejects with its reason, and the
   * turn passes on as soon as it would have come.
   */
  enter(key: string, signal?: AbortSignal): Promise<() => void> {
    const line = this.line(key);
    const before = line.tail;
    let pass!: () => void;
    const mine = new Promise<void>((resolve) => (pass = resolve));
    line.tail = before.then(() => mine).then(() => this.leave(key, line));
    line.waiting++;
    let passed = false;
    const release = () => {
      if (passed) return;
      passed = true;
      pass();
    };
    return new Promise<() => void>((resolve, reject) => {
      const gone = () => {
        line.waiting--;
        void before.then(release);
        reject(signal!.reason);
      };
      if (signal?.aborted) return gone();
      signal?.addEventListener('abort', gone, { once: true });
      void before.then(() => {
        if (signal?.aborted) return;
        signal?.removeEventListener('abort', gone);
        line.waiting--;
        resolve(release);
      });
    });
  }

  /** Resolves once every turn queued so far, of every key, has passed (a store's close waits for its changes). */
  idle(): Promise<void> {
    return Promise.all([...this.lines.values()].map((l) => l.tail)).then(() => {});
  }

  /** How many wait for the turn of `key` (not counting the one holding it). */
  waiting(key: string): number {
    return this.lines.get(key)?.waiting ?? 0;
  }

  private line(key: string): Line {
    let line = this.lines.get(key);
    if (!line) {
      line = { tail: Promise.resolve(), size: 0, waiting: 0 };
      this.lines.set(key, line);
    }
    line.size++;
    return line;
  }

  private leave(key: string, line: Line): void {
    if (--line.size === 0 && this.lines.get(key) === line) this.lines.delete(key);
  }
}
