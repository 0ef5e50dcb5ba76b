// The past index of the response log (D-93, revised by D-93's retention): where each response past
// D-36's hour belongs (id, app, conversation, time, end), which the look-up needs once its events are
// gone. A folder per UTC day of the responses' ends, `past/<day>/<xx>.jsonl` (256 shards by the id's
// last two characters); a day is dropped whole once its last end is past the look-up's retention
// (RESPONSE_LOOKUP_RETENTION_MS), so that the index holds that retention's responses, not the whole
// history, and nothing is ever rewritten. Start-up lists the folders and never reads a line.
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline';
import { DataFileError } from '../../core/errors.ts';
import type { ResponseRef } from '../types.ts';
import { syncDir } from './durable.ts';
import { writeAll } from './journal-io.ts';

export const DAY_MS = 86_400_000;

/** A response past the hour: a line of `past/<day>/<xx>.jsonl` (and of the earlier releases' index). */
export interface PastLine {
  id: string;
  a: string;
  c: string;
  at: number;
  /** When it ended (ms); absent on a line of an earlier release. */
  end?: number;
}

export const refOf = (l: PastLine): ResponseRef => ({ id: l.id, app_id: l.a, conversation_id: l.c, created_at: l.at });

/** A past response and when it ended. */
export interface PastEntry {
  ref: ResponseRef;
  end: number;
}

/** Sharded by the id's last two characters, as conversations are: no folder holds a day's responses. */
export const shard = (id: string) => id.slice(-2);
const SHARD_FILE = /^[A-Za-z0-9_-]{1,2}\.jsonl$/;

export class PastIndex {
  private readonly root: string;
  /** The days with a folder. */
  readonly days = new Set<number>();

  constructor(
    dir: string,
    private readonly retentionMs: number,
    private readonly now: () => number,
  ) {
    this.root = path.join(dir, 'past');
  }

  private file(day: number, id: string): string {
    return path.join(this.root, String(day), `${shard(id)}.jsonl`);
  }

  /**
   * Lists the day folders. The shards of the release before days (`past/<xx>.jsonl`, ends unknown)
   * are moved whole into today's folder: kept one retention from the upgrade.
   */
  async open(): Promise<void> {
    await fs.mkdir(this.root, { recursive: true });
    const today = Math.floor(this.now() / DAY_MS);
    for (const name of await fs.readdir(this.root)) {
      if (/^\d+$/.test(name)) this.days.add(Number(name));
      else if (SHARD_FILE.test(name)) await this.adopt(path.join(this.root, name), today);
    }
  }

  private async adopt(file: string, day: number): Promise<void> {
    const target = path.join(this.root, String(day), path.basename(file));
    await fs.mkdir(path.dirname(target), { recursive: true });
    this.days.add(day);
    // A target already there (a crash after appends to it): the old lines go after its own.
    if (
      await fs.stat(target).then(
        () => true,
        () => false,
      )
    )
      await fs.appendFile(target, await fs.readFile(file));
    else await fs.rename(file, target);
    await fs.rm(file, { force: true });
    await syncDir(path.dirname(target));
  }

  /** Appends lines, grouped by day and shard: each file's lines in one write, each file durable. */
  async append(entries: Iterable<PastEntry>): Promise<void> {
    const byFile = new Map<string, { day: number; lines: string[] }>();
    for (const { ref, end } of entries) {
      const day = Math.floor(end / DAY_MS);
      const f = this.file(day, ref.id);
      const group = byFile.get(f) ?? { day, lines: [] };
      group.lines.push(`${JSON.stringify({ id: ref.id, a: ref.app_id, c: ref.conversation_id, at: ref.created_at, end })}\n`);
      byFile.set(f, group);
    }
    const dirs = new Set<string>();
    for (const [f, { day, lines }] of byFile) {
      if (!this.days.has(day)) {
        await fs.mkdir(path.dirname(f), { recursive: true });
        this.days.add(day);
        dirs.add(this.root);
      }
      const fh = await fs.open(f, 'a');
      try {
        await writeAll(fh, Buffer.from(lines.join(''), 'utf8'));
        await fh.datasync();
      } finally {
        await fh.close();
      }
      dirs.add(path.dirname(f));
    }
    // A file or a day made now is durable once its folder is.
    for (const d of dirs) await syncDir(d);
  }

  /** The line of `id`, newest day first (one shard per day); none once past the retention. */
  async find(id: string): Promise<ResponseRef | undefined> {
    const cutoff = this.now() - this.retentionMs;
    for (const day of [...this.days].sort((a, b) => b - a)) {
      if ((day + 1) * DAY_MS <= cutoff) break;
      const l = await findIn(this.file(day, id), id);
      if (l) return l.end !== undefined && l.end <= cutoff ? undefined : refOf(l);
    }
    return undefined;
  }

  /** Drops the days whose every response ended more than the retention ago. */
  async sweep(): Promise<void> {
    const cutoff = this.now() - this.retentionMs;
    for (const day of [...this.days].sort((a, b) => a - b)) {
      if ((day + 1) * DAY_MS > cutoff) break;
      await fs.rm(path.join(this.root, String(day)), { recursive: true, force: true });
      this.days.delete(day);
    }
  }

  /**
   * Copies an earlier release's index (`responses/index.jsonl`, a line per response ever begun) into
   * today's folder, a line at a time and a shard at a time in chunks, each file synced once.
   */
  async adoptIndex(index: string): Promise<void> {
    const day = Math.floor(this.now() / DAY_MS);
    await fs.mkdir(path.join(this.root, String(day)), { recursive: true });
    this.days.add(day);
    const handles = new Map<string, fs.FileHandle>();
    const buffered = new Map<string, string[]>();
    let bytes = 0;
    const flush = async () => {
      for (const [f, lines] of buffered) {
        let fh = handles.get(f);
        if (!fh) handles.set(f, (fh = await fs.open(f, 'a')));
        await writeAll(fh, Buffer.from(lines.join(''), 'utf8'));
      }
      buffered.clear();
      bytes = 0;
    };
    try {
      let n = 0;
      let torn = 0;
      const lines = readline.createInterface({ input: fsSync.createReadStream(index), crlfDelay: Number.POSITIVE_INFINITY });
      for await (const raw of lines) {
        n++;
        if (raw.trim() === '') continue;
        // A torn last line was never acknowledged (the journal's own rule); one elsewhere is damage.
        if (torn) throw new DataFileError(index, `line ${torn} is not valid JSON; restore the file from a backup or remove that line`);
        let l: PastLine;
        try {
          l = JSON.parse(raw) as PastLine;
        } catch {
          torn = n;
          continue;
        }
        if (typeof l?.id !== 'string' || typeof l.a !== 'string' || typeof l.c !== 'string')
          throw new DataFileError(index, `line ${n} lacks id, a or c`);
        const f = this.file(day, l.id);
        const group = buffered.get(f) ?? [];
        group.push(`${JSON.stringify({ id: l.id, a: l.a, c: l.c, at: l.at })}\n`);
        buffered.set(f, group);
        bytes += raw.length;
        if (bytes >= 4 << 20) await flush();
      }
      await flush();
      for (const fh of handles.values()) await fh.datasync();
    } finally {
      for (const fh of handles.values()) await fh.close().catch(() => {});
    }
    await syncDir(path.join(this.root, String(day)));
    await syncDir(this.root);
    await fs.rm(index);
  }
}

/** The line of `id` in one shard file. */
async function findIn(file: string, id: string): Promise<PastLine | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const needle = `{"id":${JSON.stringify(id)},`;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) {
    if (at > 0 && text[at - 1] !== '\n') continue;
    const end = text.indexOf('\n', at);
    if (end === -1) return undefined;
    return JSON.parse(text.slice(at, end)) as PastLine;
  }
  return undefined;
}
