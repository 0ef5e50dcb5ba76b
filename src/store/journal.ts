// An append-only JSON-lines journal: group commit (one write + fsync for every line queued meanwhile)
// so that each acknowledged append is on disk without paying one fsync per request.
import fs from 'node:fs/promises';
import path from 'node:path';
import { syncDir } from './atomic-json-file.ts';
import { StoreError } from './types.ts';

interface Pending {
  line: string;
  resolve: () => void;
  reject: (err: Error) => void;
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

export class Journal {
  private handle: fs.FileHandle | undefined;
  private pending: Pending[] = [];
  private flushing: Promise<void> | undefined;
  /** Bytes known to be whole lines; a failed write is cut back to this. */
  private size = 0;

  constructor(readonly file: string) {}

  /**
   * Reads every entry, in order. A last line cut short by a crash (no newline, not JSON) was never
   * acknowledged, so it is dropped; a bad line anywhere else is damage and stops start-up.
   */
  async open(onEntry: (entry: unknown, line: number) => void): Promise<{ lines: number; dropped: boolean }> {
    let text = '';
    try {
      text = await fs.readFile(this.file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') throw new StoreError(this.file, `cannot be read (${code})`);
    }
    let dropped = false;
    let start = 0;
    let lineNo = 0;
    while (start < text.length) {
      const end = text.indexOf('\n', start);
      lineNo++;
      if (end === -1) {
        // A torn tail: the write that produced it was never answered.
        dropped = true;
        text = text.slice(0, start);
        break;
      }
      const raw = text.slice(start, end);
      start = end + 1;
      if (raw.trim() === '') continue;
      let entry: unknown;
      try {
        entry = JSON.parse(raw);
      } catch {
        throw new StoreError(this.file, `line ${lineNo} is not valid JSON; restore the file from a backup or remove that line`);
      }
      onEntry(entry, lineNo);
    }
    try {
      this.handle = await fs.open(this.file, 'a');
    } catch (err) {
      throw new StoreError(this.file, `cannot be opened for writing (${(err as NodeJS.ErrnoException).code})`);
    }
    if (dropped) await this.handle.truncate(Buffer.byteLength(text));
    this.size = Buffer.byteLength(text);
    return { lines: lineNo, dropped };
  }

  append(entry: unknown): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ line: JSON.stringify(entry) + '\n', resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      const buf = Buffer.from(batch.map((p) => p.line).join(''), 'utf8');
      try {
        if (!this.handle) throw new Error(`journal ${this.file} is not open`);
        await writeAll(this.handle, buf);
        await this.handle.datasync();
        this.size += buf.length;
        for (const p of batch) p.resolve();
      } catch (err) {
        // Leave no half line behind for the next append (e.g. after ENOSPC).
        await this.handle?.truncate(this.size).catch(() => {});
        for (const p of batch) p.reject(err as Error);
      }
    }
    this.flushing = undefined;
  }

  /** Waits until everything appended so far is durable (or failed). */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  async close(): Promise<void> {
    await this.drain();
    await this.handle?.close();
    this.handle = undefined;
  }

  /** Replaces the journal with `entries`, atomically (compaction at start-up). */
  static async rewrite(file: string, entries: unknown[]): Promise<void> {
    const tmp = `${file}.tmp`;
    const fh = await fs.open(tmp, 'w');
    try {
      await fh.writeFile(entries.map((e) => JSON.stringify(e) + '\n').join(''));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, file);
    await syncDir(path.dirname(file));
  }
}
