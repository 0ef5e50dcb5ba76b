// The file store's histories kept parsed in memory (D-29), least recently used first out, by count and
// by bytes on disk; one being written is never evicted, so reads see its writes.
import fs from 'node:fs/promises';
import path from 'node:path';
import { HistoryFile, legacyPath } from './history-file.ts';

/** Histories kept parsed, at most. */
const CACHE_SIZE = 1_000;
const CACHE_BYTES = 64 * 2 ** 20;

export class HistoryCache {
  /** Most recently used last (a Map iterates in insertion order). */
  private readonly files = new Map<string, Promise<HistoryFile>>();

  constructor(
    private readonly dataDir: string,
    private readonly maxBytes = CACHE_BYTES,
  ) {}

  /** Where a conversation's history is: sharded by the id's last two characters, so that no folder holds 100,000 files. */
  path(id: string): string {
    return path.join(this.dataDir, 'conversations', id.slice(-2), `${id}.jsonl`);
  }

  /** The conversation's history, read once and kept (an empty one if it has no file yet). */
  get(id: string): Promise<HistoryFile> {
    let p = this.files.get(id);
    if (p) {
      this.files.delete(id);
      this.files.set(id, p);
      return p;
    }
    p = HistoryFile.read(this.path(id));
    this.files.set(id, p);
    p.catch(() => this.files.delete(id));
    void p.then(
      (h) => {
        loaded.set(p, h);
        this.evict();
      },
      () => {},
    );
    return p;
  }

  /** Whether the history of `id` is held (tests of the bounds). */
  has(id: string): boolean {
    return this.files.has(id);
  }

  get size(): number {
    return this.files.size;
  }

  /** Lets go of the copy in memory (after a failed write: the history is read again from disk when next needed). */
  forget(id: string): void {
    this.files.delete(id);
  }

  /** D-73: a purged conversation's history is never served again: its files go (D-27 freed its quota at the delete). */
  async drop(id: string): Promise<void> {
    const file = this.path(id);
    const cached = this.files.get(id);
    this.files.delete(id);
    await cached?.then((h) => h.idle()).catch(() => {});
    await fs.rm(file, { force: true }).catch(() => {});
    await fs.rm(legacyPath(file), { force: true }).catch(() => {});
  }

  /** Resolves once every write under way to a history held has finished. */
  async idle(): Promise<void> {
    await Promise.all(
      [...this.files.values()].map(async (p) => {
        const h = await p.catch(() => undefined);
        if (h) await h.idle();
      }),
    );
  }

  /** Drops the least recently used histories beyond the count or the bytes; one being written is kept. */
  private evict(): void {
    let count = this.files.size;
    let bytes = 0;
    const ready: Array<[string, HistoryFile]> = [];
    for (const [id, p] of this.files) {
      const h = loaded.get(p);
      if (h) {
        bytes += h.bytes;
        ready.push([id, h]);
      }
    }
    for (const [id, h] of ready) {
      if (count <= CACHE_SIZE && bytes <= this.maxBytes) break;
      if (h.busy) continue;
      this.files.delete(id);
      count--;
      bytes -= h.bytes;
    }
  }
}

/** The histories read so far, by their promise (for the cache's count of bytes). */
const loaded = new WeakMap<Promise<HistoryFile>, HistoryFile>();
