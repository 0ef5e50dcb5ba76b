// The fsync of a journal's `appendNow` lines: one in the background `syncDelayMs` after a line (one for
// every line written meanwhile), brought forward by `sync` when a caller needs its lines durable now.
import type fs from 'node:fs/promises';
import { withFile } from '../../core/errors.ts';

export class BackgroundSync {
  /** Set by a line written; the background fsync loop runs while it is. */
  private unsynced = false;
  /** `appendNow` lines written since open, and how many of them an fsync (or a compaction) has made durable. */
  private written = 0;
  private durableUpTo = 0;
  private timer: NodeJS.Timeout | undefined;
  private syncing: Promise<Error | undefined> | undefined;

  constructor(
    private readonly file: string,
    /** The journal's current file (swapped by a compaction), none once closed. */
    private readonly handle: () => fs.FileHandle | undefined,
    private readonly delayMs = 1_000,
    private readonly onSyncError?: (err: Error) => void,
  ) {}

  /** The fsync under way, if any (resolves with its error, never rejects). */
  get running(): Promise<Error | undefined> | undefined {
    return this.syncing;
  }

  /** A line was written: its fsync comes within `delayMs`. */
  wrote(): void {
    this.written++;
    this.syncSoon();
  }

  private syncSoon(): void {
    this.unsynced = true;
    if (this.timer || this.syncing) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.syncing ??= this.syncInBackground();
    }, this.delayMs);
    // A pending fsync does not keep the process alive; close() makes it at once.
    this.timer.unref();
  }

  /** Starts the fsync that `syncSoon` scheduled, now. */
  syncNow(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.unsynced) this.syncing ??= this.syncInBackground();
  }

  /**
   * Makes every line written before the call durable now, with one fsync for the callers meanwhile
   * (the background one brought forward); rejects if that fsync fails.
   */
  async sync(): Promise<void> {
    const need = this.written;
    while (this.durableUpTo < need) {
      // A running fsync may have begun before the last lines: wait for it, then make one that covers them.
      if (!this.syncing) {
        this.unsynced = true;
        this.syncNow();
      }
      const err = await this.syncing;
      if (err && this.durableUpTo < need) throw withFile(err, this.file);
    }
  }

  /** One fsync of the lines written; resolves with its error, if it failed (told to onSyncError too). */
  private async syncInBackground(): Promise<Error | undefined> {
    try {
      const handle = this.handle();
      if (this.unsynced && handle) {
        this.unsynced = false;
        const upTo = this.written;
        const err = await handle.datasync().then(
          () => undefined,
          (e: Error) => e,
        );
        if (err) {
          this.onSyncError?.(err);
          return err;
        }
        this.durableUpTo = Math.max(this.durableUpTo, upTo);
      }
      return undefined;
    } finally {
      this.syncing = undefined;
      // Lines written while it ran wait for the next one.
      if (this.unsynced) this.syncSoon();
    }
  }

  /**
   * A compaction wrote every line so far to its new file, synced: none waits for an fsync now. Returns
   * how many lines that covers, for `covered` once the new file's rename is durable.
   */
  coverAll(): number {
    this.unsynced = false;
    return this.written;
  }

  /** After the swap, lines written meanwhile (to the new file) wait for the next fsync. */
  resume(): void {
    if (this.unsynced) this.syncSoon();
  }

  /** The first `upTo` lines are durable (a compaction's rename is). */
  covered(upTo: number): void {
    this.durableUpTo = Math.max(this.durableUpTo, upTo);
  }
}
