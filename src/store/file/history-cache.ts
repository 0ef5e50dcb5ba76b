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
  /** Bytes of the histories held and read, kept as they change: eviction need not add them up on every read. */
  private bytes = 0;
  /**
   * D-163: the conversations that have a history of the earlier release (`<id>.json`), as start-up's
   * sweep found them; until it has run, every read looks. A read of any other history opens one file:
   * the failed open of a missing document, and its exception, cost a fifth of an uncached get.
   */
  private legacy: ReadonlySet<string> | undefined;
  /** D-163: the ids of the last reads by `peek` that were not kept, oldest first. */
  private readonly seen = new Set<string>();

  constructor(
    private readonly dataDir: string,
    private readonly maxBytes = CACHE_BYTES,
  ) {}

  /** Where a conversation's history is: sharded by the id's last two characters, so that no folder holds 100,000 files. */
  path(id: string): string {
    return path.join(this.dataDir, 'conversations', id.slice(-2), `${id}.jsonl`);
  }

  /** D-163: the conversations whose folder holds an `<id>.json` (start-up's sweep lists every file). */
  knowLegacy(ids: ReadonlySet<string>): void {
    this.legacy = ids;
  }

  /**
   * D-163: a history for a get, which only reads it: one held is served as `get` serves it; one not
   * held is read and kept only if it was read so within the last 1,000 such reads, else read and let
   * go. A get of one of 100,000 conversations does not push a held one out for a history that dies
   * young (the collector then copies no 1,000 histories from read to read), and a conversation read
   * again soon is held as before.
   */
  peek(id: string): Promise<HistoryFile> {
    if (this.files.has(id) || this.seen.delete(id)) return this.get(id);
    this.seen.add(id);
    if (this.seen.size > CACHE_SIZE) this.seen.delete(this.seen.values().next().value!);
    return HistoryFile.read(this.path(id), this.legacy?.has(id) ?? true);
  }

  /** The conversation's history, read once and kept (an empty one if it has no file yet). */
  get(id: string): Promise<HistoryFile> {
    const p = this.files.get(id);
    if (p) {
      this.files.delete(id);
      this.files.set(id, p);
      return p;
    }
    const read = HistoryFile.read(this.path(id), this.legacy?.has(id) ?? true);
    this.files.set(id, read);
    read.catch(() => this.files.delete(id));
    void read.then(
      (h) => {
        loaded.set(read, h);
        // Counted only if still held (a forget may have come first).
        if (this.files.get(id) === read) {
          this.bytes += h.bytes;
          h.onResize = (delta) => {
            this.bytes += delta;
          };
        }
        this.evict();
      },
      () => {},
    );
    return read;
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
    this.remove(id);
  }

  /** Lets go of `id`'s history, and of its bytes in the total. */
  private remove(id: string): void {
    const p = this.files.get(id);
    this.files.delete(id);
    const h = p && loaded.get(p);
    if (h?.onResize) {
      h.onResize = undefined;
      this.bytes -= h.bytes;
    }
  }

  /** D-73: a purged conversation's history is never served again: its files go (D-27 freed its quota at the delete). */
  async drop(id: string): Promise<void> {
    const file = this.path(id);
    const cached = this.files.get(id);
    this.remove(id);
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

  /**
   * Drops the least recently used histories beyond the count or the bytes; one being written is kept.
   * From the oldest, and only as far as needed: at 100,000 conversations nearly every get reads a
   * history, and adding up all 1,000 held ones each time was 7 % of a get's CPU (bench/lab/profile.ts).
   */
  private evict(): void {
    const over = () => this.files.size > CACHE_SIZE || this.bytes > this.maxBytes;
    if (!over()) return;
    for (const [id, p] of this.files) {
      const h = loaded.get(p);
      if (!h || h.busy) continue;
      this.remove(id);
      if (!over()) break;
    }
  }
}

/** The histories read so far, by their promise (for the cache's count of bytes). */
const loaded = new WeakMap<Promise<HistoryFile>, HistoryFile>();
