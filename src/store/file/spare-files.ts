// D-35 (revised): response files created ahead, so that a begin's durable step is its start line's
// write and `fdatasync` only. A spare is an empty file `running/<random>.spare`, open for appending,
// whose folder entry was synced before it was handed out. A begin writes its start line into one,
// syncs it, then renames it to `<id>.jsonl` off the path (not synced: if a crash undoes the rename,
// start-up finds the start line under the spare's name and names it after the id it records).
// Start-up removes every spare without a start line (empty, or its line torn: nothing was sent for
// it), and close removes those not taken.
import { randomUUID } from 'node:crypto';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { SAFE_ID } from '../record.ts';
import { syncDir } from './durable.ts';
import { writeAll } from './journal-io.ts';
import { readResponseFile, type ResponsePaths } from './response-files.ts';

export const SPARE_SUFFIX = '.spare';
const FLAGS = fsSync.constants.O_WRONLY | fsSync.constants.O_CREAT | fsSync.constants.O_EXCL | fsSync.constants.O_APPEND;

export interface Spare {
  file: string;
  handle: fs.FileHandle;
}

export class SpareFiles {
  private readonly ready: Spare[] = [];
  private filling: Promise<void> | undefined;
  private closed = false;
  /** The last fill failed (a full disk): said once, not at every begin until one succeeds. */
  private failing = false;

  /** `size` spares kept ready (0: none, every begin creates its file). */
  constructor(
    private readonly dir: string,
    private readonly size: number,
    private readonly warn?: (message: string) => void,
  ) {}

  /** A spare whose folder entry is durable, if one is ready; the pool is refilled in the background. */
  take(): Spare | undefined {
    const spare = this.ready.shift();
    if (this.ready.length <= this.size / 2) void this.fill();
    return spare;
  }

  /** Creates spares up to the pool's size, then syncs their folder once for them all. */
  fill(): Promise<void> {
    if (this.closed || this.size === 0) return Promise.resolve();
    this.filling ??= (async () => {
      const made: Spare[] = [];
      try {
        while (this.ready.length + made.length < this.size) {
          const file = path.join(this.dir, `${randomUUID()}${SPARE_SUFFIX}`);
          made.push({ file, handle: await fs.open(file, FLAGS) });
        }
        await syncDir(this.dir);
        if (this.closed) await Promise.all(made.map(discard));
        else this.ready.push(...made);
        this.failing = false;
      } catch (err) {
        // Without spares each begin creates its own file, as before: slower, as durable.
        await Promise.all(made.map(discard));
        if (!this.failing) this.warn?.(`response files could not be created ahead: ${(err as Error).message}`);
        this.failing = true;
      } finally {
        this.filling = undefined;
      }
    })();
    return this.filling;
  }

  /** Removes the spares not taken (a crash's are removed by the next start-up). */
  async close(): Promise<void> {
    this.closed = true;
    await this.filling;
    await Promise.all(this.ready.splice(0).map(discard));
  }
}

/** A spare not used: closed and removed (an empty file left behind is removed at the next start-up). */
export async function discard(spare: Spare): Promise<void> {
  await spare.handle.close().catch(() => {});
  await fs.rm(spare.file, { force: true }).catch(() => {});
}

/**
 * D-35: a response's file holding its start line (and its first event, D-35 revised), durable, before
 * anything is sent. From a spare, its folder entry durable already, the lines' `fdatasync` alone makes it so; `named` then renames
 * it after the response, off the path and not synced (start-up names it if a crash undoes the rename;
 * on ext4 a rename waits for a journal commit under way, which must not hold the event loop). Without
 * a spare, the file is created and its data and folder entry synced at once (two threads). Nothing is
 * left behind if it fails.
 */
export async function beginFile(
  spares: SpareFiles,
  file: string,
  lines: string,
  warn?: (message: string) => void,
): Promise<{ handle: fs.FileHandle; named: Promise<void> }> {
  const spare = spares.take();
  let handle = spare?.handle;
  try {
    const buf = Buffer.from(lines);
    if (spare) {
      // Whole (write(2) may write less): a torn start line is no response at start-up.
      await writeAll(spare.handle, buf);
      await spare.handle.datasync();
      // Its writes and its end wait for it (the response log chains them after `named`).
      const named = fs.rename(spare.file, file).catch((err: Error) => warn?.(`${spare.file} not renamed to ${file}: ${err.message}`));
      return { handle: spare.handle, named };
    }
    handle = await fs.open(file, fsSync.constants.O_WRONLY | fsSync.constants.O_CREAT | fsSync.constants.O_APPEND);
    await writeAll(handle, buf);
    const synced = await Promise.allSettled([handle.datasync(), syncDir(path.dirname(file))]);
    for (const r of synced) if (r.status === 'rejected') throw r.reason;
    return { handle, named: Promise.resolve() };
  } catch (err) {
    await handle?.close().catch(() => {});
    if (spare) await discard(spare);
    await fs.rm(file, { force: true }).catch(() => {});
    throw err;
  }
}

/**
 * The spares a stopped process left in `dir` (`running/`): one without a start line was never begun
 * (nothing was sent for it) and is removed; one with a start line is a response whose rename a crash
 * undid, named after the id its start line records, then reopened as any running file.
 */
export async function settleSpares(dir: string, paths: ResponsePaths): Promise<void> {
  let renamed = false;
  for (const name of await fs.readdir(dir)) {
    if (!name.endsWith(SPARE_SUFFIX)) continue;
    const file = path.join(dir, name);
    const read = await readResponseFile(file).catch(() => undefined);
    if (read && SAFE_ID.test(read.start.id)) {
      await fs.rename(file, paths.running(read.start.id));
      renamed = true;
    } else await fs.rm(file, { force: true });
  }
  if (renamed) await syncDir(dir);
}
