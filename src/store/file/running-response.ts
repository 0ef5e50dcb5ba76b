// A running response as the response log holds it (D-93): where it belongs, a window of its last
// written events and those not yet written, the bytes its file takes; never what it was asked.
import type fs from 'node:fs/promises';
import type { UnsequencedEvent } from '../../contract/index.ts';
import type { ResponseRef } from '../types.ts';
import { type FileCursor, readEvents, type ResponsePaths } from './response-files.ts';

interface Held {
  event: UnsequencedEvent;
  bytes: number;
}

export interface Live {
  ref: ResponseRef;
  /** Events `first`… in order: the last ones written (WINDOW_BYTES of them) and those not yet written. */
  held: Held[];
  first: number;
  /** Events handed to the file (write(2) done, or failed and logged): only these are followed. */
  written: number;
  /** Bytes of the written events held, and of those not yet written. */
  heldBytes: number;
  pendingBytes: number;
  /** Bytes of its file so far (D-27's quota). */
  bytes: number;
  ended: boolean;
  /** When it ended (its file's time), once it has. */
  endedAt: number;
  /** Ended, but its listing in the hour's index failed: the sweep tries again. */
  stranded: boolean;
  /** A write failed: the file misses an event, so memory keeps every event from the first held on. */
  damaged: boolean;
  /**
   * D-94: ended with a damaged file, which could not be written whole: its file is set aside and memory
   * holds the whole response (start line and every event) until it can be (every sweep, and at close).
   */
  unwritten: boolean;
  /** The start line of a damaged response once it has ended, for writing its file whole. */
  startLine: string | undefined;
  handle: fs.FileHandle | undefined;
  /** Writes in order; a failed write is logged once and the event stays in memory. */
  writing: Promise<void>;
  /** Lines of events not yet handed to a write (they go in the next one, together). */
  queue: string[];
  /** Followers waiting for the next event. */
  waiters: Set<() => void>;
}

export function newLive(ref: ResponseRef, handle: fs.FileHandle | undefined): Live {
  return {
    ref,
    held: [],
    first: 0,
    written: 0,
    heldBytes: 0,
    pendingBytes: 0,
    bytes: 0,
    ended: false,
    endedAt: 0,
    stranded: false,
    damaged: false,
    unwritten: false,
    startLine: undefined,
    handle,
    writing: Promise.resolve(),
    queue: [],
    waiters: new Set(),
  };
}

/** Drops the oldest written events past the window; a follower behind it reads them from the file. */
export function trim(l: Live, windowBytes: number): void {
  while (!l.damaged && l.heldBytes > windowBytes && l.first < l.written - 1) {
    l.heldBytes -= l.held.shift()!.bytes;
    l.first++;
  }
}

/** Events [0, upTo) of a running response: those before its window from its file, then the window. */
export async function eventsOf(paths: ResponsePaths, l: Live, upTo: number): Promise<UnsequencedEvent[]> {
  const out: UnsequencedEvent[] = [];
  const cursor: FileCursor = { offset: 0, next: -1 };
  // The window may move on while the file is read: read on until the file meets it.
  while (out.length < Math.min(l.first, upTo)) {
    const got = await readEvents([paths.running(l.ref.id), paths.kept(l.ref.id)], cursor, Math.min(l.first, upTo));
    if (got.length === 0) throw new Error(`the file of ${l.ref.id} ends before event ${cursor.next}`);
    out.push(...got);
  }
  for (let n = out.length; n < upTo; n++) out.push(l.held[n - l.first]!.event);
  return out;
}

/** What the running responses hold in memory: events, and their bytes (written or not). */
export function heldIn(lives: Iterable<Live>): { events: number; eventBytes: number } {
  let events = 0;
  let eventBytes = 0;
  for (const l of lives) {
    events += l.held.length;
    eventBytes += l.heldBytes + l.pendingBytes;
  }
  return { events, eventBytes };
}
