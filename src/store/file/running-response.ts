// A running response as the response log holds it (D-93): where it belongs, a window of its last
// written events and those not yet written, the bytes its file takes; never what it was asked.
import type fs from 'node:fs/promises';
import type { UnsequencedEvent } from '../../contract/index.ts';
import type { ResponseRef } from '../types.ts';

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
  handle: fs.FileHandle | undefined;
  /** Writes in order; a failed write is logged once and the event stays in memory. */
  writing: Promise<void>;
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
    handle,
    writing: Promise.resolve(),
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
