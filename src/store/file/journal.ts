// An append-only JSON-lines journal: group commit (one write + fsync for every line queued meanwhile)
// so that each acknowledged append is on disk without paying one fsync per request. Its start-up read
// is journal-open.ts, the background fsync of `appendNow` lines journal-sync.ts.
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { atFile, withFile } from '../../core/errors.ts';
import { syncDir } from './durable.ts';
import * as io from './journal-io.ts';
import type { JournalOptions, LineAt, LineWriter, Pending } from './journal-io.ts';
import { openJournal } from './journal-open.ts';
import { BackgroundSync } from './journal-sync.ts';

export type { JournalOptions, LineWriter } from './journal-io.ts';

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
  /** The fsync of `appendNow` lines. */
  private readonly background: BackgroundSync;
  /** Read-only descriptor of the current file, for `readAt` (swapped with the file by a rewrite). */
  private readFd: number | undefined;

  constructor(
    readonly file: string,
    private readonly opts: JournalOptions = {},
  ) {
    this.background = new BackgroundSync(file, () => this.handle, opts.syncDelayMs, opts.onSyncError);
  }

  /** Reads every entry, in order, and repairs a last line a crash cut short (journal-open.ts). */
  async open(onEntry: (entry: unknown, line: number, where: LineAt) => void): Promise<{ lines: number; dropped: boolean }> {
    const opened = await openJournal(this.file, this.opts, onEntry);
    this.handle = opened.handle;
    this.readFd = opened.readFd;
    this.size = opened.size;
    this.lines += opened.entries;
    return { lines: opened.lines, dropped: opened.dropped };
  }

  /** Bytes of whole lines in the file. */
  get bytes(): number {
    return this.size;
  }

  /**
   * Appends `entry` (group commit) and resolves once it is durable, with where the line is. `durable`
   * runs as soon as it is, before any later line is written and before a rewrite takes its snapshot:
   * what it applies to memory is then always in step with the file.
   */
  append(entry: unknown, durable?: (where: LineAt) => void): Promise<LineAt> {
    return new Promise((resolve, reject) => {
      this.pending.push({ line: `${JSON.stringify(entry)}\n`, durable, resolve: resolve as (w?: LineAt) => void, reject });
      this.flushing ??= this.flush();
    });
  }

  /** The line at `where` (a position `append`, `open` or a rewrite gave), read from the current file. */
  readAt(where: LineAt): string {
    if (this.readFd === undefined) throw new Error(`journal ${this.file} is closed`);
    return io
      .readExact(this.readFd, where.at, where.len, this.file, `is shorter than expected (a line at byte ${where.at})`)
      .toString('utf8');
  }

  /**
   * Writes the line at once with write(2), before returning, and fsyncs it in the background
   * `syncDelayMs` later (default 1 s; one fsync for every line written meanwhile), without waiting.
   * A crash of the process (SIGKILL) loses nothing, since the line is in the OS's cache; a power cut
   * may lose the last second, as Redis's `appendfsync everysec` does. For entries on a request's
   * path whose loss costs little (a rate-limit count), where an fsync per request is too dear
   * (docs/benchmarks.md). Throws if the write fails, leaving no partial line. Not to be mixed with
   * `append` on the same journal; `sync` makes the lines written so far durable when one must be.
   * Returns where the line is, for `readAt`.
   */
  appendNow(entry: unknown): LineAt {
    const line = `${JSON.stringify(entry)}\n`;
    const where = this.writeNow(line);
    // During a compaction the line is also kept for the new file (see replace).
    if (this.replacing) this.held.push(line);
    this.background.wrote();
    return where;
  }

  /** Writes `text` (whole lines) at the end; returns where it is, its last newline left out. */
  private writeNow(text: string): LineAt {
    if (!this.handle) throw new Error(`journal ${this.file} is closed`);
    const buf = Buffer.from(text, 'utf8');
    io.writeSyncOrCut(this.handle.fd, buf, this.size, this.file);
    const where = { at: this.size, len: buf.length - 1 };
    this.size += buf.length;
    this.lines += text.split('\n').length - 1;
    return where;
  }

  /**
   * Makes every `appendNow` line written before the call durable now, with one fsync for the callers
   * meanwhile (the background one brought forward); rejects if that fsync fails.
   */
  sync(): Promise<void> {
    return this.background.sync();
  }

  /**
   * Rewrites the journal as `snapshot()` (taken when its turn comes, so it holds every append queued
   * before it); appends queued after it land in the new file. Atomic: a crash leaves one or the other.
   */
  compact(snapshot: () => unknown[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ snapshot, resolve: () => resolve(), reject });
      this.flushing ??= this.flush();
    });
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const first = this.pending[0]!;
      if ('snapshot' in first) {
        this.pending.shift();
        await this.replace(first.snapshot()).then(() => first.resolve(), first.reject);
        continue;
      }
      if ('swap' in first) {
        this.pending.shift();
        await first.swap().then(() => first.resolve(), first.reject);
        continue;
      }
      // Every line queued up to the next compaction goes out in one write and one fsync.
      let n = this.pending.findIndex((p) => !('line' in p));
      if (n === -1) n = this.pending.length;
      const batch = this.pending.splice(0, n) as Array<Pending & { line: string; durable?: (where: LineAt) => void }>;
      const bufs = batch.map((p) => Buffer.from(p.line, 'utf8'));
      const buf = Buffer.concat(bufs);
      try {
        if (!this.handle) throw new Error(`journal ${this.file} is closed`);
        await io.writeAll(this.handle, buf);
        await this.handle.datasync();
        let at = this.size;
        this.size += buf.length;
        this.lines += batch.length;
        const places = bufs.map((b) => {
          const where = { at, len: b.length - 1 };
          at += b.length;
          return where;
        });
        // Applied to memory before anything else runs (see `append`).
        for (const [i, p] of batch.entries()) p.durable?.(places[i]!);
        for (const [i, p] of batch.entries()) p.resolve(places[i]);
      } catch (err) {
        // Leave no half line behind for the next append (e.g. after ENOSPC).
        await this.handle?.truncate(this.size).catch(() => {});
        for (const p of batch) p.reject(withFile(err as Error, this.file));
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
    const text = Buffer.from(entries.map((e) => `${JSON.stringify(e)}\n`).join(''), 'utf8');
    const tmp = `${this.file}.tmp`;
    this.replacing = true;
    let fh: fs.FileHandle | undefined;
    let old: fs.FileHandle;
    let coveredUpTo = 0;
    try {
      fh = await fs.open(tmp, io.APPEND_NEW);
      await io.writeAll(fh, text).catch(atFile(tmp));
      await fh.sync().catch(atFile(tmp));
      // From here to the swap nothing awaits: no appendNow can come between.
      const held = Buffer.from(this.held.join(''), 'utf8');
      io.writeSyncAll(fh.fd, held);
      // Lines `sync` may have called durable in the old file stay so in the new one (rare: a compaction's few).
      if (held.length > 0) fsSync.fdatasyncSync(fh.fd);
      fsSync.renameSync(tmp, this.file);
      old = this.handle;
      this.handle = fh;
      if (this.readFd !== undefined) fsSync.closeSync(this.readFd);
      this.readFd = fsSync.openSync(this.file, 'r');
      fh = undefined;
      this.size = text.length + held.length;
      this.lines = entries.length + this.held.length;
      // Every line is in the new file, synced: the snapshot holds those before it, then the held ones.
      coveredUpTo = this.background.coverAll();
    } finally {
      this.replacing = false;
      this.held = [];
      if (fh) {
        await fh.close().catch(() => {});
        await fs.rm(tmp, { force: true }).catch(() => {});
      }
    }
    // A background fsync may still be running on the old file.
    await this.background.running;
    await old.close();
    this.background.resume();
    await syncDir(path.dirname(this.file));
    // Durable once the rename is.
    this.background.covered(coveredUpTo);
  }

  /**
   * Compaction while running: `write` fills a new file (it may take long; appends go on meanwhile to
   * the current file), then the lines appended since it began are copied after it, and the new file
   * takes the current one's place; nothing awaits between the copy and the swap but the copy's own
   * writes, during which appends wait (and `appendNow` lines, which do not, are copied in the swap's
   * own step). `begin` runs first, in step with the appends (every durable
   * line is in memory); `swapped(cut, start)` runs in the same step as the swap: a line that was at
   * byte `at >= cut` of the old file is now at `at - cut + start`. Atomic: a crash leaves the old
   * file or the new one, each holding every acknowledged line. `hold` (tests) runs once the new file
   * is written, before the swap.
   */
  async rewrite(
    begin: () => void,
    write: (out: LineWriter) => Promise<void>,
    swapped: (cut: number, start: number) => void,
    hold?: () => Promise<void>,
  ): Promise<void> {
    const tmp = `${this.file}.tmp`;
    let cut = 0;
    let linesAtCut = 0;
    await new Promise<void>((resolve, reject) => {
      this.pending.push({
        swap: async () => {
          cut = this.size;
          linesAtCut = this.lines;
          begin();
        },
        resolve: () => resolve(),
        reject,
      });
      this.flushing ??= this.flush();
    });
    const fh = await fs.open(tmp, io.APPEND_NEW);
    let swappedIn = false;
    try {
      const out = new io.ChunkedLines(fh);
      await write((line) => out.write(line)).catch(atFile(tmp));
      await out.flush().catch(atFile(tmp));
      const { size, lines } = out;
      await fh.sync().catch(atFile(tmp));
      await hold?.();
      await new Promise<void>((resolve, reject) => {
        this.pending.push({
          swap: async () => {
            if (!this.handle) throw new Error(`journal ${this.file} is closed`);
            // The lines appended meanwhile, copied whole (they are few next to the snapshot).
            const tailLen = this.size - cut;
            await io.writeAll(fh, io.readExact(this.readFd!, cut, tailLen, this.file, 'changed under the compaction'));
            await fh.datasync();
            // From here to the swap nothing awaits. `appendNow` lines written during the copy's awaits
            // (they do not queue) are copied now, in the same step.
            const lateLen = this.size - cut - tailLen;
            if (lateLen > 0) {
              io.writeSyncAll(fh.fd, io.readExact(this.readFd!, cut + tailLen, lateLen, this.file, 'changed under the compaction'));
              fsSync.fdatasyncSync(fh.fd);
            }
            const tailLines = this.lines - linesAtCut;
            fsSync.renameSync(tmp, this.file);
            const old = this.handle;
            const oldRead = this.readFd;
            this.handle = fh;
            swappedIn = true;
            this.readFd = fsSync.openSync(this.file, 'r');
            this.size = size + tailLen + lateLen;
            this.lines = lines + tailLines;
            swapped(cut, size);
            await old.close();
            if (oldRead !== undefined) fsSync.closeSync(oldRead);
            await syncDir(path.dirname(this.file));
          },
          resolve: () => resolve(),
          reject,
        });
        this.flushing ??= this.flush();
      });
    } finally {
      if (!swappedIn) {
        await fh.close().catch(() => {});
        await fs.rm(tmp, { force: true }).catch(() => {});
      }
    }
  }

  /** Waits until everything appended so far is durable (or failed). */
  async drain(): Promise<void> {
    for (;;) {
      this.background.syncNow();
      if (!this.flushing && !this.background.running) return;
      await this.flushing;
      await this.background.running;
    }
  }

  async close(): Promise<void> {
    await this.drain();
    await this.handle?.close();
    this.handle = undefined;
    if (this.readFd !== undefined) fsSync.closeSync(this.readFd);
    this.readFd = undefined;
  }
}
