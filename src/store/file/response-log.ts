// The file store's part of resumable responses (docs/responses.md, D-30…D-39; layout and bounds:
// D-93, response-files.ts). Memory holds the running responses only, each with a bounded window of its
// last events (a follower further behind reads the rest from the file), and per app the bytes its
// response files take (D-27's quota counts them). An ended response is read from its file, and once
// past D-36's hour from the past index for the look-up's retention (past-index.ts): nothing of it
// stays in memory, and start-up reads the running files and the hour's index, never what is older.
// This file writes; a response is read back (a trace, a follower) by response-reads.ts.
import { ResponseBytes } from './response-bytes.ts';
import fs from 'node:fs/promises';
import path from 'node:path';
import { listenOn } from '../../core/listeners.ts';
import type { UnsequencedEvent } from '../../contract/index.ts';
import { atFile } from '../../core/errors.ts';
import {
  RESPONSE_EVENTS_TTL_MS,
  RESPONSE_LOOKUP_RETENTION_MS,
  TERMINAL_EVENTS,
  type LiveResponseStart,
  type LiveResponses,
  type ResponseRef,
  type ResponseTrace,
  type UnfinishedResponse,
} from '../types.ts';
import { writeAll } from './journal-io.ts';
import { EndedIndex, MINUTE_MS, readResponseFile, ResponsePaths } from './response-files.ts';
import { ResponseReader } from './response-reads.ts';
import { PastIndex } from './past-index.ts';
import { heldIn, type Live, newLive, trim } from './running-response.ts';
import { beginFile, settleSpares, SpareFiles } from './spare-files.ts';
import { holdWhole, settleAside, writeWhole } from './unwritten.ts';

/** How often the minutes past the retention are dropped. */
const SWEEP_MS = 60_000;
/** Bytes of written events a running response keeps in memory (at least its last one). */
const WINDOW_BYTES = 64 * 1024;
/** Response files created ahead (D-35 revised, spare-files.ts): more begins at once than this create their own. */
const SPARES = 8;

export interface ResponseLogOptions {
  dir: string;
  ttlMs?: number;
  /** How long a look-up still finds a response after its end (default RESPONSE_LOOKUP_RETENTION_MS, D-93). */
  retentionMs?: number;
  now?: () => number;
  warn?: (message: string) => void;
  /** Bytes of written events a running response keeps in memory (tests lower it). */
  windowBytes?: number;
  /** Response files created ahead (D-35 revised; default SPARES, 0: each begin creates its own). */
  spares?: number;
  /** D-176: whether a conversation's response files count against its app's quota when first seen (not a deleted one's); all by default. */
  counted?: (conversationId: string) => boolean;
}

export class ResponseLog implements LiveResponses {
  private readonly paths: ResponsePaths;
  private readonly ended: EndedIndex;
  private readonly past: PastIndex;
  private readonly live = new Map<string, Live>();
  /** Per app, the bytes of its counted response files: running, and ended within the hour. */
  private readonly bytes: ResponseBytes;
  private readonly cancels = new Map<string, Set<() => void>>();
  private readonly ttl: number;
  private readonly now: () => number;
  private readonly windowBytes: number;
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private leftRunning: UnfinishedResponse[] = [];
  private readonly spares: SpareFiles;
  private readonly reader: ResponseReader;

  constructor(private readonly opts: ResponseLogOptions) {
    this.paths = new ResponsePaths(opts.dir);
    this.ttl = opts.ttlMs ?? RESPONSE_EVENTS_TTL_MS;
    this.now = opts.now ?? Date.now;
    this.past = new PastIndex(opts.dir, opts.retentionMs ?? RESPONSE_LOOKUP_RETENTION_MS, this.now);
    this.ended = new EndedIndex(this.paths, this.past, opts.warn);
    this.windowBytes = opts.windowBytes ?? WINDOW_BYTES;
    this.bytes = new ResponseBytes(opts.counted ?? (() => true));
    this.spares = new SpareFiles(path.join(opts.dir, 'running'), opts.spares ?? SPARES, opts.warn);
    this.reader = new ResponseReader(this.live, this.paths, this.past, this.ttl, this.now);
  }

  async open(): Promise<void> {
    await fs.mkdir(path.join(this.opts.dir, 'running'), { recursive: true });
    await this.ended.open();
    await this.past.open();
    await settleSpares(path.join(this.opts.dir, 'running'), this.paths);
    const running = await fs.readdir(path.join(this.opts.dir, 'running'));
    for (const name of running)
      if (name.endsWith('.unwritten')) await settleAside(this.paths, this.past, name.slice(0, -'.unwritten'.length), this.now());
    for (const name of running) if (name.endsWith('.jsonl')) await this.reopen(path.join(this.opts.dir, 'running', name));
    // The hour's index, a minute at a time: the bytes each app's files take; older minutes dropped.
    for (const minute of [...this.ended.minutes].sort((a, b) => a - b)) {
      if (this.pastRetention(minute)) await this.ended.drop(minute, () => {});
      else await this.ended.read(minute, (l) => this.bytes.add(l.a, l.c, l.b));
    }
    this.sweeper = setInterval(() => void this.sweep(), SWEEP_MS);
    this.sweeper.unref();
    await this.spares.fill();
  }

  /** A file `running/` still holds at start-up: a response live when the last process stopped, or one it ended but had not yet moved. */
  private async reopen(file: string): Promise<void> {
    const read = await readResponseFile(file);
    if (!read) return;
    const { start, events } = read;
    const ref: ResponseRef = { id: start.id, app_id: start.app_id, conversation_id: start.conversation_id, created_at: start.created_at };
    if (events.length > 0 && TERMINAL_EVENTS.has(events.at(-1)!.event)) {
      const { size } = await fs.stat(file);
      await this.ended.appendOnce({ id: ref.id, a: ref.app_id, c: ref.conversation_id, at: ref.created_at, end: read.mtimeMs, b: size });
      await this.paths.keep(ref.id);
      return;
    }
    // D-38: live when the last process stopped. Rewritten whole (a torn last line dropped), then
    // reopened for the terminal event that start-up appends.
    const text = [start, ...events].map((l) => `${JSON.stringify(l)}\n`).join('');
    await fs.writeFile(file, text).catch(atFile(file));
    const live = newLive(ref, await fs.open(file, 'a'));
    live.first = events.length;
    live.written = events.length;
    live.bytes = Buffer.byteLength(text);
    this.bytes.add(ref.app_id, ref.conversation_id, live.bytes);
    this.live.set(ref.id, live);
    this.leftRunning.push({ start, events, ended: false });
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.sweeping;
    await this.spares.close();
    for (const l of this.live.values()) {
      await l.writing;
      await l.handle?.close().catch(() => {});
      // A last chance for an ending held in memory: written, start-up lists it (space may have returned).
      if (l.unwritten) await writeWhole(this.paths, l);
    }
    this.live.clear();
    await this.ended.close();
  }

  /** D-27: bytes of the app's response files (running, and ended less than D-36's hour ago), its deleted conversations' left out. */
  bytesOf(appId: string): number {
    return this.bytes.of(appId);
  }

  /** D-176: a conversation was deleted (false) or restored (true): its kept response files leave or rejoin the count. */
  recount(conversationId: string, counted: boolean): void {
    this.bytes.recount(conversationId, counted);
  }

  /** What memory holds (tests of the bounds): running responses, events held, apps counted. */
  held(): { running: number; events: number; eventBytes: number; apps: number; minutes: number } {
    return { ...heldIn(this.live.values()), running: this.live.size, apps: this.bytes.size, minutes: this.ended.minutes.size };
  }

  /**
   * A minute is dropped a minute after its last response passed the retention, so that no end still
   * being listed lands in it (a look-up applies the retention to the millisecond: see trace).
   */
  private pastRetention(minute: number): boolean {
    return (minute + 2) * MINUTE_MS <= this.now() - this.ttl;
  }

  async begin(start: LiveResponseStart, first: UnsequencedEvent): Promise<{ running?: string }> {
    // Checked and taken in one synchronous step: two messages at once cannot both begin.
    for (const l of this.live.values()) if (!l.ended && l.ref.conversation_id === start.conversation_id) return { running: l.ref.id };
    const ref: ResponseRef = { id: start.id, app_id: start.app_id, conversation_id: start.conversation_id, created_at: start.created_at };
    const live = newLive(ref, undefined);
    this.live.set(start.id, live);
    // D-35 revised: the first event in the start line's write, so durable with it by the one `fdatasync`.
    const event = `${JSON.stringify(first)}\n`;
    const lines = `${JSON.stringify(start)}\n${event}`;
    // The file is named after the response before any event is written to it, so before its end.
    const begun = await beginFile(this.spares, this.paths.running(start.id), lines, this.opts.warn).catch((err: unknown) => {
      this.live.delete(start.id);
      throw err;
    });
    [live.handle, live.writing] = [begun.handle, begun.named];
    live.bytes = Buffer.byteLength(lines);
    this.bytes.add(ref.app_id, ref.conversation_id, live.bytes);
    live.held.push({ event: first, bytes: Buffer.byteLength(event) });
    live.heldBytes = Buffer.byteLength(event);
    live.written = 1;
    return {};
  }

  async append(id: string, event: UnsequencedEvent): Promise<void> {
    const l = this.live.get(id);
    if (!l || l.ended) throw new Error(`${id} is not a live response`);
    const line = `${JSON.stringify(event)}\n`;
    const bytes = Buffer.byteLength(line);
    l.held.push({ event, bytes });
    l.pendingBytes += bytes;
    const terminal = TERMINAL_EVENTS.has(event.event);
    if (terminal) l.ended = true;
    // Events are written without an fsync each (a kill -9 loses nothing written, a power cut what the
    // response's save has), those that come while a write is under way together in the next one. An
    // event is followed, and its append resolved (the producer's answer takes it then, KeptEvents), once
    // it is written, so that no client sees one that start-up's `interrupted` save (D-38) would not find.
    l.queue.push(line);
    if (l.queue.length === 1) l.writing = l.writing.then(() => this.writeQueued(l, id));
    await l.writing;
    if (terminal) await this.end(l, () => this.publish(l, 1));
  }

  /** One write of the lines queued since the last; its events are then followed (a terminal one once durable, by `end`). */
  private async writeQueued(l: Live, id: string): Promise<void> {
    const lines = l.queue.splice(0);
    const buf = Buffer.from(lines.join(''));
    const bytes = buf.length;
    let ok = true;
    try {
      await writeAll(l.handle!, buf);
    } catch (err) {
      if (!l.damaged)
        this.opts.warn?.(`response events of ${id} not written (${(err as Error).message}); its file is written whole at its end`);
      ok = false;
    }
    l.pendingBytes -= bytes;
    l.heldBytes += bytes;
    if (ok) {
      l.bytes += bytes;
      this.bytes.add(l.ref.app_id, l.ref.conversation_id, bytes);
    } else l.damaged = true;
    this.publish(l, l.ended && l.queue.length === 0 ? lines.length - 1 : lines.length);
  }

  private publish(l: Live, events: number): void {
    if (events <= 0) return;
    l.written += events;
    trim(l, this.windowBytes);
    for (const wake of l.waiters) wake();
    l.waiters.clear();
  }

  /**
   * An ended response: its file durable (D-94: written whole if it lost an event, or set aside) before
   * its terminal event is followed, then listed in the hour's index and moved to `events/`.
   */
  private async end(l: Live, publish: () => void): Promise<void> {
    l.endedAt = this.now();
    if (l.handle) {
      await l.handle.datasync().catch(() => (l.damaged = true));
      const st = await l.handle.stat().catch(() => undefined);
      await l.handle.close().catch(() => {});
      l.handle = undefined;
      if (st) {
        l.endedAt = st.mtimeMs;
        this.bytes.add(l.ref.app_id, l.ref.conversation_id, st.size - l.bytes);
        l.bytes = st.size;
      }
    }
    if (l.damaged) {
      try {
        await holdWhole(this.paths, l);
        this.resize(l, await writeWhole(this.paths, l, this.opts.warn));
      } catch (err) {
        this.opts.warn?.(`response ${l.ref.id} could not be written whole: ${(err as Error).message}`);
      }
    }
    publish();
    this.cancels.delete(l.ref.id);
    if (l.unwritten) l.stranded = true;
    else await this.list(l);
  }

  /** D-27: the bytes of a response's file once written whole (none while it is set aside). */
  private resize(l: Live, size: number | undefined): void {
    this.bytes.add(l.ref.app_id, l.ref.conversation_id, (size ?? 0) - l.bytes);
    l.bytes = size ?? 0;
  }

  private async list(l: Live): Promise<void> {
    const { id, app_id: a, conversation_id: c, created_at: at } = l.ref;
    try {
      await this.ended.append({ id, a, c, at, end: l.endedAt, b: l.bytes });
      await this.paths.keep(id);
      this.live.delete(id);
      l.stranded = false;
    } catch (err) {
      // Left in memory as ended, its file in running/, until the sweep (or the next start-up) lists it.
      l.stranded = true;
      this.opts.warn?.(`response ${id} could not be listed as ended: ${(err as Error).message}`);
    }
  }

  /** A response's start and events, from memory, its file or the past index (response-reads.ts). */
  trace(id: string): Promise<ResponseTrace | undefined> {
    return this.reader.trace(id);
  }

  /** The events after `after`, then each as it is written, until its end (response-reads.ts). */
  follow(id: string, after: number, signal?: AbortSignal): AsyncGenerator<UnsequencedEvent> {
    return this.reader.follow(id, after, signal);
  }

  runningIn(conversationId: string): string | undefined {
    for (const l of this.live.values()) if (!l.ended && l.ref.conversation_id === conversationId) return l.ref.id;
    return undefined;
  }

  async requestCancel(id: string): Promise<void> {
    for (const listener of this.cancels.get(id) ?? []) listener();
  }

  onCancelRequest(id: string, listener: () => void): () => void {
    return listenOn(this.cancels, id, listener);
  }

  async unfinished(): Promise<UnfinishedResponse[]> {
    const out = this.leftRunning;
    this.leftRunning = [];
    return out;
  }

  /** A stranded response: its file written whole first if it is held in memory, dropped once past the retention. */
  private async relist(l: Live): Promise<void> {
    if (l.unwritten && l.endedAt <= this.now() - this.ttl) {
      this.live.delete(l.ref.id);
      await settleAside(this.paths, this.past, l.ref.id, l.endedAt);
      return;
    }
    if (l.unwritten) this.resize(l, await writeWhole(this.paths, l, this.opts.warn));
    if (!l.unwritten) await this.list(l);
  }

  /**
   * D-36: drops the minutes ended more than the retention ago (their responses' lines go to the past
   * index, their files are removed), and the past index's days past the look-up's retention (D-93);
   * lists the ended responses a failed write left in memory.
   */
  sweep(): Promise<void> {
    this.sweeping ??= (async () => {
      try {
        for (const l of [...this.live.values()]) if (l.stranded) await this.relist(l);
        await this.ended.closeBefore(Math.floor(this.now() / MINUTE_MS) - 1);
        for (const minute of [...this.ended.minutes].sort((a, b) => a - b)) {
          if (!this.pastRetention(minute)) break;
          await this.ended.drop(minute, (l) => this.bytes.add(l.a, l.c, -l.b));
        }
        await this.past.sweep();
      } catch (err) {
        this.opts.warn?.(`the sweep of expired response events failed: ${(err as Error).message}`);
      } finally {
        this.sweeping = undefined;
      }
    })();
    return this.sweeping;
  }
}
