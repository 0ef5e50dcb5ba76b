// The file store's part of resumable responses (docs/responses.md, D-30…D-39): one JSON-lines file
// per response (`responses/<id>.jsonl`: its start, then its events, the terminal one last) and an
// index of every response begun (`responses/index.jsonl`), so that a response is found after its
// events expire. A live response's events are also in memory, for the streams that follow it; an
// ended one's are read from its file. Files of responses ended more than the retention ago go.
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { UnsequencedEvent } from '../../contract/index.ts';
import { syncDir, writeDurably } from './durable.ts';
import { Journal } from './journal.ts';
import { ResponseEventsExpired, DataFileError, atFile } from '../../core/errors.ts';
import { RESPONSE_EVENTS_TTL_MS, TERMINAL_EVENTS, type LiveResponseStart, type LiveResponses, type ResponseTrace } from '../types.ts';

/** How often expired event files are looked for. */
const SWEEP_MS = 60_000;

interface Live {
  start: LiveResponseStart;
  events: UnsequencedEvent[];
  /** Events handed to the file (write(2) done, or failed and logged): only these are followed. */
  written: number;
  ended: boolean;
  /** A write of its file failed: the file lacks events, and is written whole once the response ends. */
  lost: boolean;
  handle: fs.FileHandle;
  /** Writes in order; a failed write is logged once and the events stay in memory. */
  writing: Promise<void>;
  /** Followers waiting for the next event. */
  waiters: Set<() => void>;
}

/** An index line: a response begun (without its input: the conversation holds it once saved). */
interface IndexLine {
  id: string;
  a: string;
  c: string;
  at: number;
}

export interface ResponseLogOptions {
  dir: string;
  ttlMs?: number;
  now?: () => number;
  warn?: (message: string) => void;
}

export class ResponseLog implements LiveResponses {
  private readonly live = new Map<string, Live>();
  /** Every response begun: id → where it belongs. */
  private readonly index = new Map<string, LiveResponseStart>();
  /** Ended responses whose events are still kept: id → end time (ms). */
  private readonly kept = new Map<string, number>();
  /**
   * D-94: ended responses whose file could not be written whole (a full disk), held in memory until it
   * can (every sweep, and at close) or their retention ends: id → the response and its end time (ms).
   */
  private readonly unwritten = new Map<string, { live: Live; ended: number }>();
  private readonly cancels = new Map<string, Set<() => void>>();
  private readonly journal: Journal;
  private readonly ttl: number;
  private readonly now: () => number;
  private sweeper: NodeJS.Timeout | undefined;
  private leftRunning: ResponseTrace[] = [];

  constructor(private readonly opts: ResponseLogOptions) {
    this.journal = new Journal(path.join(opts.dir, 'index.jsonl'), { warn: opts.warn });
    this.ttl = opts.ttlMs ?? RESPONSE_EVENTS_TTL_MS;
    this.now = opts.now ?? Date.now;
  }

  async open(): Promise<void> {
    await fs.mkdir(this.opts.dir, { recursive: true });
    await this.journal.open((e) => {
      const l = e as IndexLine;
      if (typeof l?.id !== 'string' || typeof l.a !== 'string' || typeof l.c !== 'string')
        throw new DataFileError(this.journal.file, 'an index line lacks id, a or c');
      this.index.set(l.id, { id: l.id, app_id: l.a, conversation_id: l.c, created_at: l.at, input: { content: '', metadata: null } });
    });
    for (const name of await fs.readdir(this.opts.dir)) {
      if (!/^resp_[A-Za-z0-9_-]+\.jsonl$/.test(name)) continue;
      const file = path.join(this.opts.dir, name);
      const read = await this.readFile(file);
      if (!read) continue;
      const { start, events } = read;
      this.index.set(start.id, start);
      if (events.length > 0 && TERMINAL_EVENTS.has(events[events.length - 1]!.event)) {
        const ended = (await fs.stat(file)).mtimeMs;
        if (ended <= this.now() - this.ttl) await fs.rm(file, { force: true });
        else this.kept.set(start.id, ended);
        continue;
      }
      // D-38: live when the last process stopped. Rewritten whole (a torn last line dropped), then
      // reopened for the terminal event that start-up appends.
      await fs.writeFile(file, [start, ...events].map((l) => `${JSON.stringify(l)}\n`).join('')).catch(atFile(file));
      const handle = await fs.open(file, 'a');
      this.live.set(start.id, {
        start,
        events,
        written: events.length,
        ended: false,
        lost: false,
        handle,
        writing: Promise.resolve(),
        waiters: new Set(),
      });
      this.leftRunning.push({ start, events, ended: false });
    }
    this.sweeper = setInterval(() => void this.sweep(), SWEEP_MS);
    this.sweeper.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    for (const l of this.live.values()) {
      await l.writing;
      await l.handle.close().catch(() => {});
    }
    this.live.clear();
    // A last chance for endings held in memory (space may have returned); those still unwritten are
    // lost with the process, and start-up finds no file of them to take for a crash's (D-38).
    await this.writeUnwritten();
    await this.journal.close();
  }

  /** The start line and events of a response file; a torn last line (a crash) is dropped. */
  private async readFile(file: string): Promise<{ start: LiveResponseStart; events: UnsequencedEvent[] } | undefined> {
    let text: string;
    try {
      text = await fs.readFile(file, 'utf8');
    } catch {
      return undefined;
    }
    const lines = text.split('\n').filter((l) => l.length > 0);
    const parsed: unknown[] = [];
    for (const [i, l] of lines.entries()) {
      try {
        parsed.push(JSON.parse(l));
      } catch {
        if (i === lines.length - 1 && !text.endsWith('\n')) break;
        throw new DataFileError(file, `line ${i + 1} is not JSON`);
      }
    }
    const start = parsed[0] as LiveResponseStart | undefined;
    if (!start || typeof start.id !== 'string') return undefined;
    return { start, events: parsed.slice(1) as UnsequencedEvent[] };
  }

  private fileOf(id: string): string {
    return path.join(this.opts.dir, `${id}.jsonl`);
  }

  async begin(start: LiveResponseStart): Promise<{ running?: string }> {
    // Checked and taken in one synchronous step: two messages at once cannot both begin.
    for (const l of this.live.values()) if (!l.ended && l.start.conversation_id === start.conversation_id) return { running: l.start.id };
    const live: Live = {
      start,
      events: [],
      written: 0,
      ended: false,
      lost: false,
      handle: undefined as unknown as fs.FileHandle,
      writing: Promise.resolve(),
      waiters: new Set(),
    };
    this.live.set(start.id, live);
    this.index.set(start.id, start);
    const file = this.fileOf(start.id);
    try {
      const handle = await fs.open(file, fsSync.constants.O_WRONLY | fsSync.constants.O_CREAT | fsSync.constants.O_APPEND);
      live.handle = handle;
      await handle.write(`${JSON.stringify(start)}\n`).catch(atFile(file));
      // Durable before the first byte goes out: a crash from here on leaves a response start-up finds.
      await handle.datasync();
      await syncDir(this.opts.dir);
      await this.journal.append({ id: start.id, a: start.app_id, c: start.conversation_id, at: start.created_at } satisfies IndexLine);
    } catch (err) {
      this.live.delete(start.id);
      this.index.delete(start.id);
      await live.handle?.close().catch(() => {});
      throw err;
    }
    return {};
  }

  async append(id: string, event: UnsequencedEvent): Promise<void> {
    const l = this.live.get(id);
    if (!l || l.ended) throw new Error(`${id} is not a live response`);
    l.events.push(event);
    const terminal = TERMINAL_EVENTS.has(event.event);
    if (terminal) l.ended = true;
    // Events are written without an fsync each (a kill -9 loses nothing written, a power cut what the
    // response's save has). Followers get an event once it is written, so that no client sees one that
    // start-up's `interrupted` save (D-38) would not find.
    const wrote = () => {
      l.written++;
      for (const wake of l.waiters) wake();
      l.waiters.clear();
    };
    const written = l.writing
      .then(() => l.handle.write(`${JSON.stringify(event)}\n`))
      .then(
        () => {},
        (err: Error) => this.lose(l, err),
      );
    if (!terminal) {
      l.writing = written.then(wrote);
      return;
    }
    l.writing = written;
    await written;
    await l.handle.datasync().catch((err: Error) => this.lose(l, err));
    await l.handle.close().catch(() => {});
    // D-94: the file shows how the response ended before any client is told, or it is not there.
    const whole = !l.lost || (await this.writeWhole(l));
    wrote();
    this.live.delete(id);
    this.cancels.delete(id);
    if (whole) this.kept.set(id, this.now());
    else this.unwritten.set(id, { live: l, ended: this.now() });
  }

  /** A write of `l`'s file failed (told once): its events stay in memory, and the file is written whole at its end. */
  private lose(l: Live, err: Error): void {
    if (!l.lost) this.opts.warn?.(`response events of ${l.start.id} not written (${err.message}); the file is written whole at its end`);
    l.lost = true;
  }

  /**
   * D-94: writes an ended response's file whole (temp file, rename), or, if it cannot (a full disk),
   * removes it: a file without its terminal event is what a crash leaves, and start-up would save the
   * response `interrupted` (D-38) into the conversation its client was told it was not saved in.
   * Resolves whether the file was written.
   */
  private async writeWhole(l: Live): Promise<boolean> {
    const file = this.fileOf(l.start.id);
    try {
      await writeDurably(file, [l.start, ...l.events].map((e) => `${JSON.stringify(e)}\n`).join(''));
      return true;
    } catch (err) {
      await fs.rm(file, { force: true }).catch((e: Error) => this.opts.warn?.(`${file}: cannot be removed (${e.message})`));
      this.opts.warn?.(`${file}: cannot be written (${(err as Error).message}); the response's ending is kept in memory until it can`);
      return false;
    }
  }

  /** Writes the endings held in memory, keeping those written as any ended response; drops those past the retention. */
  private async writeUnwritten(): Promise<void> {
    const cutoff = this.now() - this.ttl;
    for (const [id, u] of this.unwritten) {
      if (u.ended > cutoff && !(await this.writeWhole(u.live))) continue;
      this.unwritten.delete(id);
      if (u.ended > cutoff) this.kept.set(id, u.ended);
    }
  }

  async trace(id: string): Promise<ResponseTrace | undefined> {
    const l = this.live.get(id) ?? this.unwritten.get(id)?.live;
    if (l) return { start: l.start, events: l.events.slice(0, l.written), ended: l.ended && l.written === l.events.length };
    const start = this.index.get(id);
    if (!start) return undefined;
    const ended = this.kept.get(id);
    // Past the retention, expired now rather than at the next sweep: the documented time holds exactly.
    if (ended !== undefined && ended <= this.now() - this.ttl) {
      this.kept.delete(id);
      await fs.rm(this.fileOf(id), { force: true }).catch(() => {});
    }
    if (!this.kept.has(id)) return { start, events: null, ended: true };
    const read = await this.readFile(this.fileOf(id));
    return read ? { start: read.start, events: read.events, ended: true } : { start, events: null, ended: true };
  }

  async *follow(id: string, after: number, signal?: AbortSignal): AsyncGenerator<UnsequencedEvent> {
    let n = after + 1;
    for (;;) {
      const l = this.live.get(id) ?? this.unwritten.get(id)?.live;
      if (!l) {
        const t = await this.trace(id);
        if (!t) return;
        if (!t.events) throw new ResponseEventsExpired(id);
        for (; n < t.events.length; n++) yield t.events[n]!;
        return;
      }
      while (n < l.written) {
        yield l.events[n++]!;
        if (signal?.aborted) return;
      }
      if (l.ended && n >= l.events.length) return;
      if (signal?.aborted) return;
      await new Promise<void>((resolve) => {
        const done = () => {
          signal?.removeEventListener('abort', done);
          l.waiters.delete(done);
          resolve();
        };
        l.waiters.add(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    }
  }

  runningIn(conversationId: string): string | undefined {
    for (const l of this.live.values()) if (!l.ended && l.start.conversation_id === conversationId) return l.start.id;
    return undefined;
  }

  async requestCancel(id: string): Promise<void> {
    for (const listener of this.cancels.get(id) ?? []) listener();
  }

  onCancelRequest(id: string, listener: () => void): () => void {
    const set = this.cancels.get(id) ?? new Set();
    set.add(listener);
    this.cancels.set(id, set);
    return () => set.delete(listener);
  }

  async unfinished(): Promise<ResponseTrace[]> {
    const out = this.leftRunning;
    this.leftRunning = [];
    return out;
  }

  /** D-36: drops the events of responses ended more than the retention ago (their index line stays). */
  async sweep(): Promise<void> {
    await this.writeUnwritten();
    const cutoff = this.now() - this.ttl;
    for (const [id, ended] of this.kept) {
      if (ended > cutoff) continue;
      this.kept.delete(id);
      await fs.rm(this.fileOf(id), { force: true }).catch(() => {});
    }
  }
}
