// An append-only JSON-lines journal: group commit (one write + fsync for every line queued meanwhile)
// so that each acknowledged append is on disk without paying one fsync per request.
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { syncDir } from './atomic-json-file.ts';
import { StoreError } from './types.ts';

/** A line to append, or a compaction: the journal replaced by a snapshot, in turn with the appends. */
type Pending = ({ line: string } | { snapshot: () => unknown[] }) & {
  resolve: () => void;
  reject: (err: Error) => void;
};

export interface JournalOptions {
  /**
   * Skip lines that are not JSON instead of refusing to start: for journals whose loss of one
   * entry costs little (a rate-limit count) and where staying up matters more.
   */
  skipBadLines?: boolean;
  /** Bytes read at a time at open (tests use small ones to cut lines across chunks). */
  chunkBytes?: number;
  /** Told when a background fsync of `appendNow` lines fails (the lines are still in the OS's cache). */
  onSyncError?: (err: Error) => void;
  /** How long after an `appendNow` line its fsync comes (one fsync for every line written meanwhile). */
  syncDelayMs?: number;
  /** Told when open() drops a torn last line (default: a process warning on stderr). */
  warn?: (message: string) => void;
}

/**
 * Appends all of `buf`. write(2) may write less than asked (a nearly full disk fills its last page
 * and stops): the rest is written again, so the error, if any, surfaces instead of a torn line.
 */
export async function writeAll(handle: fs.FileHandle, buf: Buffer): Promise<void> {
  let offset = 0;
  while (offset < buf.length) {
    const { bytesWritten } = await handle.write(buf, offset, buf.length - offset, null);
    if (bytesWritten <= 0) throw Object.assign(new Error('write(2) wrote nothing'), { code: 'EIO' });
    offset += bytesWritten;
  }
}

/** writeAll's synchronous twin (write(2) may write less than asked). */
function writeSyncAll(fd: number, buf: Buffer): void {
  let offset = 0;
  while (offset < buf.length) {
    const n = fsSync.writeSync(fd, buf, offset, buf.length - offset);
    if (n <= 0) throw Object.assign(new Error('write(2) wrote nothing'), { code: 'EIO' });
    offset += n;
  }
}

/** A new file opened for appends (O_APPEND: after a cut-back write, the next one lands at the end). */
const APPEND_NEW = fsSync.constants.O_WRONLY | fsSync.constants.O_CREAT | fsSync.constants.O_TRUNC | fsSync.constants.O_APPEND;

export class Journal {
  private handle: fs.FileHandle | undefined;
  private pending: Pending[] = [];
  private flushing: Promise<void> | undefined;
  /** Bytes known to be whole lines; a failed write is cut back to this. */
  private size = 0;
  /** Entries in the file (read at open, appended or written by the last compaction). */
  lines = 0;
  /** `appendNow` lines written to the old file during a compaction: they belong in the new file too. */
  private held: string[] = [];
  private replacing = false;
  /** Set by `appendNow`; the background fsync loop runs while it is. */
  private unsynced = false;
  private syncTimer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;

  constructor(
    readonly file: string,
    private readonly opts: JournalOptions = {},
  ) {}

  /**
   * Reads every entry, in order. A last line without its newline is kept (the newline is added) if
   * it is JSON and `onEntry` accepts it: a hand edit can lose a final newline, and cutting a whole
   * record would lose data. One that is not JSON was cut short by a crash, so it was never
   * acknowledged: it is dropped, with a warning naming the file and the bytes. A bad line anywhere
   * else is damage and stops start-up.
   * Read in chunks, one line decoded at a time: the whole file as one string raised start-up's peak
   * heap and with it how far V8 lets the heap grow later (docs/benchmarks.md).
   */
  async open(onEntry: (entry: unknown, line: number) => void): Promise<{ lines: number; dropped: boolean }> {
    let reader: fs.FileHandle | undefined;
    try {
      reader = await fs.open(this.file, 'r');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') throw new StoreError(this.file, `cannot be read (${code})`);
    }
    let lineNo = 0;
    /** Bytes of whole lines (newline included). */
    let whole = 0;
    /** The last line, if it has no newline, and whether it is kept. */
    let tail: Buffer | undefined;
    let keepTail = false;
    if (reader) {
      try {
        // A line can span chunks (splitting on the byte 0x0A is safe: UTF-8 never uses it inside a character).
        let carry: Buffer[] = [];
        const chunk = Buffer.allocUnsafe(this.opts.chunkBytes ?? 1 << 20);
        for (;;) {
          let n: number;
          try {
            n = (await reader.read(chunk, 0, chunk.length, null)).bytesRead;
          } catch (err) {
            throw new StoreError(this.file, `cannot be read (${(err as NodeJS.ErrnoException).code})`);
          }
          if (n === 0) break;
          const view = chunk.subarray(0, n);
          let start = 0;
          for (;;) {
            const end = view.indexOf(0x0a, start);
            if (end === -1) {
              // The chunk buffer is reused: keep a copy of the unfinished line.
              if (start < n) carry.push(Buffer.from(view.subarray(start)));
              break;
            }
            let raw = view.subarray(start, end);
            if (carry.length > 0) {
              carry.push(raw);
              raw = Buffer.concat(carry);
              carry = [];
            }
            start = end + 1;
            whole += raw.length + 1;
            this.parseLine(raw.toString('utf8'), ++lineNo, onEntry);
          }
        }
        if (carry.length > 0) {
          tail = Buffer.concat(carry);
          const text = tail.toString('utf8');
          // Whole JSON (or blank) is a line that only lacks its newline; onEntry may still refuse it.
          keepTail = text.trim() === '' || isJson(text);
          if (keepTail) this.parseLine(text, ++lineNo, onEntry);
          else lineNo++;
        }
      } finally {
        await reader.close();
      }
    }
    try {
      this.handle = await fs.open(this.file, 'a');
    } catch (err) {
      throw new StoreError(this.file, `cannot be opened for writing (${(err as NodeJS.ErrnoException).code})`);
    }
    this.size = whole;
    const dropped = tail !== undefined && !keepTail;
    if (dropped) {
      await this.handle.truncate(whole);
      (this.opts.warn ?? ((m: string) => process.emitWarning(m)))(
        `${this.file}: dropped the last ${tail!.length} bytes (line ${lineNo}: not JSON and no final newline, a write cut short by a crash and never acknowledged)`,
      );
    } else if (tail !== undefined) {
      await writeAll(this.handle, Buffer.from('\n'));
      await this.handle.datasync();
      this.size = whole + tail.length + 1;
    }
    return { lines: lineNo, dropped };
  }

  private parseLine(raw: string, lineNo: number, onEntry: (entry: unknown, line: number) => void): void {
    if (raw.trim() === '') return;
    let entry: unknown;
    try {
      entry = JSON.parse(raw);
    } catch {
      if (this.opts.skipBadLines) return;
      throw new StoreError(this.file, `line ${lineNo} is not valid JSON; restore the file from a backup or remove that line`);
    }
    onEntry(entry, lineNo);
    this.lines++;
  }

  append(entry: unknown): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ line: JSON.stringify(entry) + '\n', resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  /**
   * Writes the line at once with write(2), before returning, and fsyncs it in the background
   * `syncDelayMs` later (default 1 s; one fsync for every line written meanwhile), without waiting.
   * A crash of the process (SIGKILL) loses nothing, since the line is in the OS's cache; a power cut
   * may lose the last second, as Redis's `appendfsync everysec` does. For entries on a request's
   * path whose loss costs little (a rate-limit count), where an fsync per request is too dear
   * (docs/benchmarks.md). Throws
   * if the write fails, leaving no partial line. Not to be mixed with `append` on the same journal.
   */
  appendNow(entry: unknown): void {
    const line = JSON.stringify(entry) + '\n';
    this.writeNow(line);
    // During a compaction the line is also kept for the new file (see replace).
    if (this.replacing) this.held.push(line);
    this.syncSoon();
  }

  private syncSoon(): void {
    this.unsynced = true;
    if (this.syncTimer || this.syncing) return;
    this.syncTimer = setTimeout(() => {
      this.syncTimer = undefined;
      this.syncing ??= this.syncInBackground();
    }, this.opts.syncDelayMs ?? 1_000);
    // A pending fsync does not keep the process alive; close() makes it at once.
    this.syncTimer.unref();
  }

  /** Starts the fsync that `syncSoon` scheduled, now. */
  private syncNow(): void {
    if (this.syncTimer) {
      clearTimeout(this.syncTimer);
      this.syncTimer = undefined;
    }
    if (this.unsynced) this.syncing ??= this.syncInBackground();
  }

  private writeNow(text: string): void {
    if (!this.handle) throw new Error(`journal ${this.file} is closed`);
    const buf = Buffer.from(text, 'utf8');
    const fd = this.handle.fd;
    try {
      writeSyncAll(fd, buf);
    } catch (err) {
      try {
        fsSync.ftruncateSync(fd, this.size);
      } catch {
        // The next open drops a torn last line anyway.
      }
      throw err;
    }
    this.size += buf.length;
    this.lines += text.split('\n').length - 1;
  }

  private async syncInBackground(): Promise<void> {
    try {
      if (this.unsynced && this.handle) {
        this.unsynced = false;
        await this.handle.datasync().catch((err: Error) => this.opts.onSyncError?.(err));
      }
    } finally {
      this.syncing = undefined;
      // Lines written while it ran wait for the next one.
      if (this.unsynced) this.syncSoon();
    }
  }

  /**
   * Rewrites the journal as `snapshot()` (taken when its turn comes, so it holds every append queued
   * before it); appends queued after it land in the new file. Atomic: a crash leaves one or the other.
   */
  compact(snapshot: () => unknown[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ snapshot, resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const first = this.pending[0]!;
      if ('snapshot' in first) {
        this.pending.shift();
        await this.replace(first.snapshot()).then(first.resolve, first.reject);
        continue;
      }
      // Every line queued up to the next compaction goes out in one write and one fsync.
      let n = this.pending.findIndex((p) => 'snapshot' in p);
      if (n === -1) n = this.pending.length;
      const batch = this.pending.splice(0, n) as Array<Pending & { line: string }>;
      const buf = Buffer.from(batch.map((p) => p.line).join(''), 'utf8');
      try {
        if (!this.handle) throw new Error(`journal ${this.file} is closed`);
        await writeAll(this.handle, buf);
        await this.handle.datasync();
        this.size += buf.length;
        this.lines += batch.length;
        for (const p of batch) p.resolve();
      } catch (err) {
        // Leave no half line behind for the next append (e.g. after ENOSPC).
        await this.handle?.truncate(this.size).catch(() => {});
        for (const p of batch) p.reject(err as Error);
      }
    }
    this.flushing = undefined;
  }

  /**
   * Until the new file takes the old one's place, `appendNow` lines still go to the old file (a
   * crash meanwhile forgets none) and are kept in `held`; they are written to the new file in the
   * same synchronous step as the rename, so the file at `this.file` always holds every line.
   */
  private async replace(entries: unknown[]): Promise<void> {
    if (!this.handle) throw new Error(`journal ${this.file} is closed`);
    const text = Buffer.from(entries.map((e) => JSON.stringify(e) + '\n').join(''), 'utf8');
    const tmp = `${this.file}.tmp`;
    this.replacing = true;
    let fh: fs.FileHandle | undefined;
    let old: fs.FileHandle;
    try {
      fh = await fs.open(tmp, APPEND_NEW);
      await writeAll(fh, text);
      await fh.sync();
      // From here to the swap nothing awaits: no appendNow can come between.
      const held = Buffer.from(this.held.join(''), 'utf8');
      writeSyncAll(fh.fd, held);
      fsSync.renameSync(tmp, this.file);
      old = this.handle;
      this.handle = fh;
      fh = undefined;
      this.size = text.length + held.length;
      this.lines = entries.length + this.held.length;
      // The held lines are the only ones not yet fsynced in the new file.
      this.unsynced = held.length > 0;
    } finally {
      this.replacing = false;
      this.held = [];
      if (fh) {
        await fh.close().catch(() => {});
        await fs.rm(tmp, { force: true }).catch(() => {});
      }
    }
    // A background fsync may still be running on the old file.
    await this.syncing;
    await old.close();
    if (this.unsynced) this.syncSoon();
    await syncDir(path.dirname(this.file));
  }

  /** Waits until everything appended so far is durable (or failed). */
  async drain(): Promise<void> {
    for (;;) {
      this.syncNow();
      if (!this.flushing && !this.syncing) return;
      await this.flushing;
      await this.syncing;
    }
  }

  async close(): Promise<void> {
    await this.drain();
    await this.handle?.close();
    this.handle = undefined;
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
