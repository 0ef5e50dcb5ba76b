// The journal's byte-level reading and writing: whole writes (write(2) may write less than asked), exact
// reads at a position, a file read line by line in chunks, and a new file written line by line in chunks.
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import { DataFileError, withFile } from '../../core/errors.ts';

/** Where a line is in the file: its first byte and its length in bytes (without the newline). */
export interface LineAt {
  at: number;
  len: number;
}

/** A new file opened for appends (O_APPEND: after a cut-back write, the next one lands at the end). */
export const APPEND_NEW = fsSync.constants.O_WRONLY | fsSync.constants.O_CREAT | fsSync.constants.O_TRUNC | fsSync.constants.O_APPEND;

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
export function writeSyncAll(fd: number, buf: Buffer): void {
  let offset = 0;
  while (offset < buf.length) {
    const n = fsSync.writeSync(fd, buf, offset, buf.length - offset);
    if (n <= 0) throw Object.assign(new Error('write(2) wrote nothing'), { code: 'EIO' });
    offset += n;
  }
}

/**
 * writeSyncAll, or if it fails the file cut back to its `size` whole bytes (no partial line is left)
 * and the error thrown, naming `file` (D-94).
 */
export function writeSyncOrCut(fd: number, buf: Buffer, size: number, file: string): void {
  try {
    writeSyncAll(fd, buf);
  } catch (err) {
    try {
      fsSync.ftruncateSync(fd, size);
    } catch {
      // The next open drops a torn last line anyway.
    }
    throw withFile(err, file);
  }
}

/** `len` bytes at `at` of the open file `fd`, synchronously; `short` words the error if the file ends first. */
export function readExact(fd: number, at: number, len: number, file: string, short: string): Buffer {
  const buf = Buffer.allocUnsafe(len);
  let read = 0;
  while (read < len) {
    const n = fsSync.readSync(fd, buf, read, len - read, at + read);
    if (n === 0) throw new DataFileError(file, short);
    read += n;
  }
  return buf;
}

/**
 * Reads `file` in chunks of `chunkBytes`, handing each whole line to `onLine` with where it is; one line
 * is decoded at a time (the whole file as one string raised start-up's peak heap, and with it how far V8
 * lets the heap grow later: docs/benchmarks.md). Returns the bytes of whole lines and the last line if
 * it has no newline; undefined if there is no file.
 */
export async function readLines(
  file: string,
  chunkBytes: number,
  onLine: (raw: string, where: LineAt) => void,
): Promise<{ whole: number; tail?: Buffer } | undefined> {
  let reader: fs.FileHandle;
  try {
    reader = await fs.open(file, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new DataFileError(file, `cannot be read (${code})`);
  }
  /** Bytes of whole lines (newline included). */
  let whole = 0;
  try {
    // A line can span chunks (splitting on the byte 0x0A is safe: UTF-8 never uses it inside a character).
    let carry: Buffer[] = [];
    const chunk = Buffer.allocUnsafe(chunkBytes);
    for (;;) {
      let n: number;
      try {
        n = (await reader.read(chunk, 0, chunk.length, null)).bytesRead;
      } catch (err) {
        throw new DataFileError(file, `cannot be read (${(err as NodeJS.ErrnoException).code})`);
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
        const where = { at: whole, len: raw.length };
        whole += raw.length + 1;
        onLine(raw.toString('utf8'), where);
      }
    }
    return carry.length > 0 ? { whole, tail: Buffer.concat(carry) } : { whole };
  } finally {
    await reader.close();
  }
}

/** Writes lines to a new file in chunks (a large snapshot is never one string in memory), saying where each went. */
export class ChunkedLines {
  /** Bytes and lines written so far. */
  size = 0;
  lines = 0;
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;

  constructor(private readonly fh: fs.FileHandle) {}

  async write(line: string): Promise<LineAt> {
    const b = Buffer.from(`${line}\n`, 'utf8');
    const where = { at: this.size, len: b.length - 1 };
    this.size += b.length;
    this.lines++;
    this.buffered.push(b);
    this.bufferedBytes += b.length;
    if (this.bufferedBytes >= 1 << 20) await this.flush();
    return where;
  }

  async flush(): Promise<void> {
    if (this.bufferedBytes === 0) return;
    const chunk = Buffer.concat(this.buffered);
    this.buffered = [];
    this.bufferedBytes = 0;
    await writeAll(this.fh, chunk);
  }
}

export function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * A line to append (with what to do once it is durable, before anything else runs), a compaction (the
 * journal replaced by a snapshot, in turn with the appends), or the swap that ends a compaction made
 * while running (see `rewrite`).
 */
export type Pending = (
  | { line: string; durable?: (where: LineAt) => void }
  | { snapshot: () => unknown[] }
  | { swap: () => Promise<void> }
) & {
  resolve: (where?: LineAt) => void;
  reject: (err: Error) => void;
};

/** What `rewrite` writes the new file with: it appends a line and says where it went in the new file. */
export type LineWriter = (line: string) => Promise<LineAt>;

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
  /** How open() parses a line (default JSON.parse); it throws on a line that is not JSON. */
  parse?: (raw: string) => unknown;
}
