// A lowdb adapter whose writes are atomic and durable: temp file, fsync, rename, fsync of the folder.
// (lowdb's own JSONFile renames without fsync, and its presets swap to memory under NODE_ENV=test.)
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Adapter } from 'lowdb';
import { StoreError } from './types.ts';

export class AtomicJsonFile<T> implements Adapter<T> {
  /** Writes to one file are chained so that a later write never lands before an earlier one. */
  private tail: Promise<void> = Promise.resolve();
  private writing = 0;

  constructor(
    readonly file: string,
    private readonly validate: (data: unknown) => string | null = () => null,
  ) {}

  get busy(): boolean {
    return this.writing > 0;
  }

  /** Resolves when every write started so far has finished (or failed). */
  idle(): Promise<void> {
    return this.tail;
  }

  async read(): Promise<T | null> {
    let text: string;
    try {
      text = readSmallSync(this.file) ?? (await fs.readFile(this.file, 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      throw new StoreError(this.file, 'is not valid JSON');
    }
    const problem = this.validate(data);
    if (problem) throw new StoreError(this.file, problem);
    return data as T;
  }

  write(data: T): Promise<void> {
    // Serialise now: the caller may change `data` again before this write's turn comes.
    const text = JSON.stringify(data);
    this.writing++;
    const run = this.tail.then(() => writeAtomically(this.file, text));
    this.tail = run.catch(() => {});
    return run.finally(() => {
      this.writing--;
    });
  }
}

/**
 * Files up to this size are read synchronously: fs.promises.readFile costs four thread-pool round
 * trips, several times the CPU of the same syscalls made directly (docs/benchmarks.md), and it
 * dominated reads of conversations not in the cache. Parsing the JSON blocks for longer than reading
 * it, so the bound keeps the added blocking small; larger files still go through the thread pool.
 */
const SYNC_READ_MAX = 64 * 1024;

/** The file's text if it is at most SYNC_READ_MAX bytes, otherwise undefined. Throws ENOENT like readFile. */
function readSmallSync(file: string): string | undefined {
  const fd = fsSync.openSync(file, 'r');
  try {
    const { size } = fsSync.fstatSync(fd);
    if (size > SYNC_READ_MAX) return undefined;
    const buf = Buffer.allocUnsafe(size);
    let read = 0;
    while (read < size) {
      const n = fsSync.readSync(fd, buf, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    return buf.toString('utf8', 0, read);
  } finally {
    fsSync.closeSync(fd);
  }
}

const knownDirs = new Set<string>();

export async function writeAtomically(file: string, text: string): Promise<void> {
  await writeDurably(file, text);
  await syncDir(path.dirname(file));
}

/** Temp file, fsync, rename: the file is whole or absent. The rename is durable once its folder is synced (syncDir). */
export async function writeDurably(file: string, text: string): Promise<void> {
  const dir = path.dirname(file);
  if (!knownDirs.has(dir)) {
    await fs.mkdir(dir, { recursive: true });
    knownDirs.add(dir);
  }
  // One writer per file (writes are chained above), so a fixed temporary name suffices; a crash
  // may leave it behind, and the next write of that file replaces it.
  const tmp = `${file}.tmp`;
  const fh = await fs.open(tmp, 'w');
  try {
    await fh.writeFile(text);
    await fh.datasync();
  } catch (err) {
    await fh.close().catch(() => {});
    await fs.rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
  await fh.close();
  await fs.rename(tmp, file);
}

/** A rename is only durable once its folder is synced. */
export async function syncDir(dir: string): Promise<void> {
  const dh = await fs.open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}
