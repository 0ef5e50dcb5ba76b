// One conversation's history on disk: an append-only JSON-lines file, `<id>.jsonl`, one line per
// exchange (`{"items":[…],"responses":[…]}`), so that an exchange costs a write of its own size
// (D-29). A history in the older format, one JSON document `<id>.json`, is read as its first part and
// never rewritten (D-29).
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { isPlainObject, type ItemT } from '../../contract/index.ts';
import { syncDir } from './durable.ts';
import { writeAll } from './journal-io.ts';
import { DataFileError, atFile } from '../../core/errors.ts';
import type { History, ResponseRecord } from '../types.ts';

const PartSchema = z.object({
  items: z.array(z.looseObject({ id: z.string(), type: z.string() })),
  responses: z.array(z.looseObject({ id: z.string() })),
});

/**
 * PartSchema's rules without zod's copy of the whole part (reads of uncached conversations showed
 * zod's copy as GC time, bench/lab/profile.ts get); zod still words the error when this says no.
 */
function isPart(data: unknown): data is History {
  if (!isPlainObject(data) || !Array.isArray(data.items) || !Array.isArray(data.responses)) return false;
  for (const item of data.items as unknown[]) {
    if (!isPlainObject(item) || typeof item.id !== 'string' || typeof item.type !== 'string') return false;
  }
  for (const r of data.responses as unknown[]) if (!isPlainObject(r) || typeof r.id !== 'string') return false;
  return true;
}

function problemOf(data: unknown): string | null {
  if (isPart(data)) return null;
  const parsed = PartSchema.safeParse(data);
  return parsed.success ? null : `${parsed.error.issues[0]!.path.join('.') || 'file'}: ${parsed.error.issues[0]!.message}`;
}

/** A history as read: the parts in order, merged; `bytes` is what it occupies on disk (both files). */
export class HistoryFile implements History {
  readonly items: ItemT[] = [];
  readonly responses: ResponseRecord[] = [];
  /** Bytes on disk: the legacy document, if any, plus the whole lines of the JSON-lines file. */
  bytes = 0;
  /** Told of each change of `bytes` after the read (the cache's running total). */
  onResize: ((delta: number) => void) | undefined;
  /** Bytes of whole lines in `<id>.jsonl`; anything after them is a write cut short by a crash. */
  private good = 0;
  /** Whether `<id>.jsonl` holds more than `good` bytes (cut back before the next append). */
  private torn = false;
  private exists = false;
  /** Appends are chained: a later one never lands before an earlier one. */
  private tail: Promise<void> = Promise.resolve();
  private writing = 0;

  private constructor(readonly file: string) {}

  /**
   * `<dir>/<id>.jsonl`; the legacy document is `<dir>/<id>.json`, looked for only when `withLegacy`
   * (D-163: start-up's sweep saw one, or did not run yet).
   */
  static async read(file: string, withLegacy = true): Promise<HistoryFile> {
    const h = new HistoryFile(file);
    const legacy = legacyPath(file);
    const old = withLegacy ? readIfExists(legacy) : undefined;
    if (old !== undefined) {
      h.add(parseJson(legacy, old.toString('utf8')), legacy);
      h.bytes += old.length;
    }
    const text = readIfExists(file);
    if (text !== undefined) {
      h.exists = true;
      let start = 0;
      let lineNo = 0;
      for (;;) {
        const end = text.indexOf(0x0a, start);
        if (end === -1) break;
        lineNo++;
        const raw = text.toString('utf8', start, end);
        if (raw.trim() !== '') h.add(parseJson(file, raw, lineNo), file, lineNo);
        start = end + 1;
      }
      // A last line without its newline was never acknowledged (the journal's completion line comes
      // after it): not part of the history, and cut off before the next append.
      h.good = start;
      h.torn = start < text.length;
      h.bytes += start;
    }
    return h;
  }

  get busy(): boolean {
    return this.writing > 0;
  }

  /** Resolves when every append started so far has finished (or failed). */
  idle(): Promise<void> {
    return this.tail;
  }

  /**
   * Appends one part durably (write, fdatasync; the folder is synced when the file is new) and then
   * adds it to this in-memory copy. Resolves with the bytes written.
   */
  append(part: History): Promise<number> {
    const line = Buffer.from(`${JSON.stringify(part)}\n`, 'utf8');
    this.writing++;
    const run = this.tail.then(async () => {
      await fs.mkdir(path.dirname(this.file), { recursive: true });
      const fh = await fs.open(this.file, 'a');
      try {
        if (this.torn) {
          await fh.truncate(this.good);
          this.torn = false;
        }
        try {
          await writeAll(fh, line);
          await fh.datasync();
        } catch (err) {
          // Leave no half line for the next append (e.g. after ENOSPC).
          await fh.truncate(this.good).catch(() => {
            this.torn = true;
          });
          atFile(this.file)(err);
        }
      } finally {
        await fh.close();
      }
      if (!this.exists) {
        await syncDir(path.dirname(this.file));
        this.exists = true;
      }
      this.good += line.length;
      this.bytes += line.length;
      this.onResize?.(line.length);
      this.add(part, this.file);
      return line.length;
    });
    this.tail = run.then(
      () => {},
      () => {},
    );
    return run.finally(() => {
      this.writing--;
    });
  }

  /**
   * D-94: takes back the last append (`bytes`, what it resolved with), cutting the file (which needs no
   * space) and syncing it: an exchange whose journal line then failed leaves no line that start-up
   * would take for a saved exchange. Its parts stay in this copy: the caller lets go of it.
   */
  retract(bytes: number): Promise<void> {
    const run = this.tail.then(async () => {
      const fh = await fs.open(this.file, 'r+');
      try {
        await fh.truncate(this.good - bytes);
        await fh.datasync();
      } finally {
        await fh.close();
      }
      this.good -= bytes;
      this.bytes -= bytes;
      this.onResize?.(-bytes);
    });
    this.tail = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  private add(part: unknown, file: string, lineNo?: number): void {
    const problem = problemOf(part);
    if (problem) throw new DataFileError(file, lineNo === undefined ? problem : `line ${lineNo}: ${problem}`);
    const p = part as History;
    this.items.push(...p.items);
    for (const r of p.responses) {
      // A response saved again (the same id) replaces the earlier version.
      const at = this.responses.findIndex((x) => x.id === r.id);
      if (at >= 0) this.responses[at] = r;
      else this.responses.push(r);
    }
  }
}

/** The legacy document's path for a history file: both are removed when the conversation's history is purged (D-73). */
export function legacyPath(file: string): string {
  return file.slice(0, -1);
}

function readIfExists(file: string): Buffer | undefined {
  try {
    return fsSync.readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function parseJson(file: string, text: string, lineNo?: number): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new DataFileError(file, lineNo === undefined ? 'is not valid JSON' : `line ${lineNo} is not valid JSON`);
  }
}
