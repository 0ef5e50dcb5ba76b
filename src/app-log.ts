// The server's log: a caller's logger, or Parley's own, written to stdout in batches, and flushed
// (or let go) at close and exit (D-26).
import pino, { type Logger } from 'pino';

/** How long close() lets buffered log lines take to leave (main.ts waits as long at exit). */
export const LOG_FLUSH_MS = 2_000;

export interface LogHandle {
  logger: Logger;
  flushLog(ms: number): Promise<boolean>;
  abandonLog(): void;
}

/** A caller's logger (tests): its flushing is the caller's. */
export function borrowedLog(logger: Logger): LogHandle {
  return { logger, flushLog: async () => true, abandonLog: () => {} };
}

/**
 * Parley's own logger writes to stdout asynchronously, in batches of 4 KiB or every 50 ms, whichever
 * comes first, instead of one blocking write(2) per request (the largest Parley-owned item in the get
 * profile, docs/benchmarks.md); a developer still sees a line within 50 ms. close() flushes it, and pino
 * flushes it synchronously on exit, so no line is lost, unless the destination takes nothing for
 * LOG_FLUSH_MS (a pipe nobody reads): then it is let go, so that exit cannot hang (D-26).
 */
export function ownLog(level: string): LogHandle {
  const dest = pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 50 });
  let abandoned = false;
  // As pino does on EPIPE: later lines and the flush at exit become no-ops.
  const abandonLog = () => {
    abandoned = true;
    dest.write = () => true;
    dest.flushSync = () => {};
  };
  const flushLog = (ms: number) =>
    new Promise<boolean>((resolve) => {
      if (abandoned) return resolve(false);
      const timer = setTimeout(() => {
        abandonLog();
        resolve(false);
      }, ms);
      // Called back once the buffer is written (an fsync error on a pipe or terminal is no loss).
      dest.flush(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  return { logger: pino({ level }, dest), flushLog, abandonLog };
}
