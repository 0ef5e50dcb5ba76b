// A lowdb adapter whose writes are atomic and durable: temp file, fsync, rename, fsync of the folder.
// (lowdb's own JSONFile renames without fsync, and its presets swap to memory under NODE_ENV=test.)
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

  async read(): Promise<T | null> {
    let text: string;
    try {
      text = await fs.readFile(this.file, 'utf8');
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

const knownDirs = new Set<string>();

export async function writeAtomically(file: string, text: string): Promise<void> {
  await writeDurably(file, text);
  await syncDir(path.dirname(file));
}

/** Temp file, fsync, rename: the file is whole or absent. The rename is durable once its folder is synced. */
export async function writeDurably(file: string, text: string): Promise<void> {
  const dir = path.dirname(file);
  if (!knownDirs.has(dir)) {
    await fs.mkdir(dir, { recursive: true });
    knownDirs.add(dir);
  }
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

export async function syncDir(dir: string): Promise<void> {
  const dh = await fs.open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}
