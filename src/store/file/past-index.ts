// The past index of the response log (D-93, revised by D-93's retention): where each response past
// D-36's hour belongs (id, app, conversation, time, end), which the look-up needs once its events are
// gone. A folder per UTC day of the responses' ends, `past/<day>/<xx>.jsonl` (256 shards by the id's
// last two characters); a day is dropped whole once its last end is past the look-up's retention
// (RESPONSE_LOOKUP_RETENTION_MS), so that the index holds that retention's responses, not the whole
// history, and nothing is ever rewritten. Start-up lists the folders and never reads a line.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ResponseRef } from '../types.ts';
import { syncDir } from './durable.ts';
import { writeAll } from './journal-io.ts';

export const DAY_MS = 86_400_000;

/** A response past the hour: a line of `past/<day>/<xx>.jsonl`. */
export interface PastLine {
  id: string;
  a: string;
  c: string;
  at: number;
  /** When it ended (ms). */
  end: number;
}

export const refOf = (l: PastLine): ResponseRef => ({ id: l.id, app_id: l.a, conversation_id: l.c, created_at: l.at });

/** A past response and when it ended. */
export interface PastEntry {
  ref: ResponseRef;
  end: number;
}

/** Sharded by the id's last two characters, as conversations are: no folder holds a day's responses. */
export const shard = (id: string) => id.slice(-2);

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

  /** Lists the day folders (start-up reads no line). */
  async open(): Promise<void> {
    await fs.mkdir(this.root, { recursive: true });
    for (const name of await fs.readdir(this.root)) if (/^\d+$/.test(name)) this.days.add(Number(name));
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
      if (l) return l.end <= cutoff ? undefined : refOf(l);
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
