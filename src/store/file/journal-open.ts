// A journal's start-up: every entry read back in order, and a last line a crash cut short repaired
// (dropped, or given its newline) before the journal takes its first append (journal.ts).
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import { DataFileError, atFile } from '../../core/errors.ts';
import * as io from './journal-io.ts';
import type { JournalOptions, LineAt } from './journal-io.ts';

/** What `Journal` continues from: its file open for appends and for `readAt`, and what it holds. */
export interface OpenedJournal {
  handle: fs.FileHandle;
  readFd: number;
  /** Bytes of whole lines (the repaired last line included). */
  size: number;
  /** Entries `onEntry` accepted. */
  entries: number;
  /** Lines read, blank and dropped ones included (the count a line number is from). */
  lines: number;
  dropped: boolean;
}

/**
 * Reads every entry, in order. A last line without its newline is kept (the newline is added) if
 * it is JSON and `onEntry` accepts it: a hand edit can lose a final newline, and cutting a whole
 * record would lose data. One that is not JSON was cut short by a crash, so it was never
 * acknowledged: it is dropped, with a warning naming the file and the bytes. A bad line anywhere
 * else is damage and stops start-up. Read in chunks, one line decoded at a time (journal-io.ts).
 */
export async function openJournal(
  file: string,
  opts: JournalOptions,
  onEntry: (entry: unknown, line: number, where: LineAt) => void,
): Promise<OpenedJournal> {
  let lineNo = 0;
  let entries = 0;
  const parse = (raw: string, where: LineAt) => {
    if (parseLine(file, opts, raw, ++lineNo, onEntry, where)) entries++;
  };
  const read = await io.readLines(file, opts.chunkBytes ?? 1 << 20, parse);
  /** Bytes of whole lines (newline included). */
  const whole = read?.whole ?? 0;
  /** The last line, if it has no newline, and whether it is kept. */
  const tail = read?.tail;
  let keepTail = false;
  if (tail) {
    const text = tail.toString('utf8');
    // Whole JSON (or blank) is a line that only lacks its newline; onEntry may still refuse it.
    keepTail = text.trim() === '' || io.isJson(text);
    if (keepTail) parse(text, { at: whole, len: tail.length });
    else lineNo++;
  }
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, 'a');
  } catch (err) {
    throw new DataFileError(file, `cannot be opened for writing (${(err as NodeJS.ErrnoException).code})`);
  }
  const readFd = fsSync.openSync(file, 'r');
  let size = whole;
  const dropped = tail !== undefined && !keepTail;
  const named = atFile(file);
  try {
    if (dropped) {
      await handle.truncate(whole).catch(named);
      (opts.warn ?? ((m: string) => process.emitWarning(m)))(
        `${file}: dropped the last ${tail!.length} bytes (line ${lineNo}: not JSON and no final newline, a write cut short by a crash and never acknowledged)`,
      );
    } else if (tail !== undefined) {
      await io.writeAll(handle, Buffer.from('\n')).catch(named);
      await handle.datasync().catch(named);
      size = whole + tail.length + 1;
    }
  } catch (err) {
    // Start-up stops here: nothing is left open behind it.
    await handle.close().catch(() => {});
    fsSync.closeSync(readFd);
    throw err;
  }
  return { handle, readFd, size, entries, lines: lineNo, dropped };
}

/** One line given to `onEntry`; false for a blank line or, with `skipBadLines`, one that is not JSON. */
function parseLine(
  file: string,
  opts: JournalOptions,
  raw: string,
  lineNo: number,
  onEntry: (entry: unknown, line: number, where: LineAt) => void,
  where: LineAt,
): boolean {
  if (raw.trim() === '') return false;
  let entry: unknown;
  try {
    entry = opts.parse ? opts.parse(raw) : JSON.parse(raw);
  } catch {
    if (opts.skipBadLines) return false;
    throw new DataFileError(file, `line ${lineNo} is not valid JSON; restore the file from a backup or remove that line`);
  }
  onEntry(entry, lineNo, where);
  return true;
}
