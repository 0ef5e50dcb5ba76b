// The response log's files (docs/storage.md, D-36, D-93). A response's file (its start line, then its
// events) is in `running/` while it runs, then in `events/<xx>/` for D-36's hour; `ended/<minute>.jsonl`
// names the responses that ended in that minute (the index of the hour, which start-up reads), and
// the past index those past the hour (past-index.ts: what a look-up needs then, for its retention),
// which start-up never reads. A minute past the hour is dropped whole: its lines go to the past index,
// its responses' files are removed.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { UnsequencedEvent } from '../../contract/index.ts';
import { DataFileError } from '../../core/errors.ts';
import type { LiveResponseStart } from '../types.ts';
import { Journal } from './journal.ts';
import { readLines } from './journal-io.ts';
import { type PastIndex, refOf, shard } from './past-index.ts';

export const MINUTE_MS = 60_000;

/** A response that ended within the hour: a line of `ended/<minute>.jsonl` (its file's time and size). */
export interface EndedLine {
  id: string;
  a: string;
  c: string;
  at: number;
  end: number;
  b: number;
}

export class ResponsePaths {
  constructor(readonly dir: string) {}
  /** Shards known to exist. */
  private readonly shards = new Set<string>();

  /** Moves an ended response's file from `running/` to its shard of `events/`. */
  async keep(id: string): Promise<void> {
    const target = this.kept(id);
    const dir = path.dirname(target);
    if (!this.shards.has(dir)) {
      await fs.mkdir(dir, { recursive: true });
      this.shards.add(dir);
    }
    await fs.rename(this.running(id), target);
  }

  running(id: string): string {
    return path.join(this.dir, 'running', `${id}.jsonl`);
  }

  kept(id: string): string {
    return path.join(this.dir, 'events', shard(id), `${id}.jsonl`);
  }

  /** D-94: a running response's file set aside, cut to its start line, when its ending could not be written. */
  aside(id: string): string {
    return path.join(this.dir, 'running', `${id}.unwritten`);
  }

  ended(minute: number): string {
    return path.join(this.dir, 'ended', `${minute}.jsonl`);
  }
}

/** A response's file read whole: its start and events (a torn last line, a crash's, dropped). */
export interface ResponseFile {
  start: LiveResponseStart;
  events: UnsequencedEvent[];
  mtimeMs: number;
}

export async function readResponseFile(file: string): Promise<ResponseFile | undefined> {
  let text: string;
  let mtimeMs: number;
  try {
    const fh = await fs.open(file, 'r');
    try {
      mtimeMs = (await fh.stat()).mtimeMs;
      text = await fh.readFile('utf8');
    } finally {
      await fh.close();
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const lines = text.split('\n').filter((l) => l.length > 0);
  const parsed: unknown[] = [];
  for (const [i, l] of lines.entries()) {
    try {
      parsed.push(JSON.parse(l));
    } catch {
      // A last line cut short by a crash was never followed by anyone (D-38); one elsewhere is damage.
      if (i === lines.length - 1 && !text.endsWith('\n')) break;
      throw new DataFileError(file, `line ${i + 1} is not JSON`);
    }
  }
  const start = parsed[0] as LiveResponseStart | undefined;
  if (!start || typeof start.id !== 'string') return undefined;
  return { start, events: parsed.slice(1) as UnsequencedEvent[], mtimeMs };
}

/** Where a reader of a growing response file is: the byte after the last line it read, and that line's event. */
export interface FileCursor {
  offset: number;
  /** Sequence number of the event at `offset` (-1: the start line). */
  next: number;
}

/**
 * Events `cursor.next` up to `to` (excluded) of a response file whose lines are only ever appended,
 * read from where the cursor stopped; the first of `files` that exists (it moves when its response
 * ends). Fewer if the file ends first.
 */
export async function readEvents(files: readonly string[], cursor: FileCursor, to: number): Promise<UnsequencedEvent[]> {
  const out: UnsequencedEvent[] = [];
  if (cursor.next >= to) return out;
  let fh: fs.FileHandle | undefined;
  for (const f of files) {
    fh = await fs.open(f, 'r').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (fh) break;
  }
  if (!fh) return out;
  try {
    const chunk = Buffer.allocUnsafe(1 << 16);
    // The bytes from the cursor's line to where the file was read (a line can span chunks).
    let carry: Buffer[] = [];
    let pos = cursor.offset;
    while (cursor.next < to) {
      const n = (await fh.read(chunk, 0, chunk.length, pos)).bytesRead;
      if (n === 0) break;
      pos += n;
      const view = chunk.subarray(0, n);
      let start = 0;
      for (let end = view.indexOf(0x0a); end !== -1 && cursor.next < to; end = view.indexOf(0x0a, start)) {
        const raw = carry.length > 0 ? Buffer.concat([...carry, view.subarray(start, end)]) : view.subarray(start, end);
        carry = [];
        if (cursor.next >= 0) out.push(JSON.parse(raw.toString('utf8')) as UnsequencedEvent);
        cursor.offset += raw.length + 1;
        cursor.next++;
        start = end + 1;
      }
      if (start < n) carry.push(Buffer.from(view.subarray(start)));
    }
  } finally {
    await fh.close();
  }
  return out;
}

/**
 * The index of the hour: a journal per minute of ends (`ended/<minute>.jsonl`, group commit), each
 * dropped whole once its minute is past the retention.
 */
export class EndedIndex {
  private readonly journals = new Map<number, Promise<Journal>>();
  /** Minutes with a file (at most the retention's minutes, and those not yet dropped). */
  readonly minutes = new Set<number>();

  constructor(
    private readonly paths: ResponsePaths,
    private readonly past: PastIndex,
    private readonly warn?: (message: string) => void,
  ) {}

  async open(): Promise<void> {
    await fs.mkdir(path.join(this.paths.dir, 'ended'), { recursive: true });
    for (const name of await fs.readdir(path.join(this.paths.dir, 'ended'))) {
      const m = /^(\d+)\.jsonl$/.exec(name);
      if (m) this.minutes.add(Number(m[1]));
    }
  }

  /** Resolves once the line is durable. */
  async append(line: EndedLine): Promise<void> {
    const minute = Math.floor(line.end / MINUTE_MS);
    let j = this.journals.get(minute);
    if (!j) {
      const journal = new Journal(this.paths.ended(minute), { warn: this.warn });
      j = journal.open(() => {}).then(() => journal);
      this.journals.set(minute, j);
      j.catch(() => this.journals.delete(minute));
      this.minutes.add(minute);
    }
    await (await j).append(line);
  }

  /** Appends the line unless its minute lists it already (a start-up after a crash between the two). */
  async appendOnce(line: EndedLine): Promise<void> {
    const minute = Math.floor(line.end / MINUTE_MS);
    let listed = false;
    if (this.minutes.has(minute)) await this.read(minute, (l) => (listed ||= l.id === line.id));
    if (!listed) await this.append(line);
  }

  /** Every line of a minute's file, in order (a torn last line dropped). */
  async read(minute: number, onLine: (l: EndedLine) => void): Promise<void> {
    const file = this.paths.ended(minute);
    await readLines(file, 1 << 20, (raw, where) => {
      if (raw.trim() === '') return;
      let l: EndedLine;
      try {
        l = JSON.parse(raw) as EndedLine;
      } catch {
        throw new DataFileError(file, `the line at byte ${where.at} is not JSON`);
      }
      if (typeof l?.id !== 'string' || typeof l.a !== 'string' || typeof l.b !== 'number')
        throw new DataFileError(file, `the line at byte ${where.at} lacks id, a or b`);
      onLine(l);
    });
  }

  /** Closes the journals of minutes before `minute` (no response ends in them any more). */
  async closeBefore(minute: number): Promise<void> {
    for (const [m, j] of this.journals) {
      if (m >= minute) continue;
      this.journals.delete(m);
      await (await j.catch(() => undefined))?.close();
    }
  }

  /** Drops a minute: its lines to the past index, then its responses' files, then its own file. */
  async drop(minute: number, forget: (l: EndedLine) => void): Promise<void> {
    await this.closeBefore(minute + 1);
    const lines: EndedLine[] = [];
    await this.read(minute, (l) => lines.push(l));
    await this.past.append(lines.map((l) => ({ ref: refOf(l), end: l.end })));
    for (const l of lines) {
      await fs.rm(this.paths.kept(l.id), { force: true });
      forget(l);
    }
    await fs.rm(this.paths.ended(minute), { force: true });
    this.minutes.delete(minute);
  }

  async close(): Promise<void> {
    await this.closeBefore(Number.POSITIVE_INFINITY);
  }
}
