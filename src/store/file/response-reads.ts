// Reading a response back (D-32, D-36, D-93): its trace for a look-up, and a follower's events, from the
// running responses' windows in memory, their files, or the past index. The writing is response-log.ts.
import type { UnsequencedEvent } from '../../contract/index.ts';
import { ResponseEventsExpired } from '../../core/errors.ts';
import { SAFE_ID } from '../record.ts';
import type { ResponseTrace } from '../types.ts';
import type { PastIndex } from './past-index.ts';
import { type FileCursor, readEvents, readResponseFile, type ResponsePaths } from './response-files.ts';
import { eventsOf, type Live } from './running-response.ts';

export class ResponseReader {
  constructor(
    /** The running responses (and ended ones not yet listed), as response-log.ts keeps them. */
    private readonly live: ReadonlyMap<string, Live>,
    private readonly paths: ResponsePaths,
    private readonly past: PastIndex,
    /** How long an ended response's events are kept (D-36). */
    private readonly ttl: number,
    private readonly now: () => number,
  ) {}

  /**
   * A response's start and its events: a running one's from memory and its file, an ended one's from its
   * file, or past the events' hour (D-36) the start alone from the past index (D-93).
   */
  async trace(id: string): Promise<ResponseTrace | undefined> {
    if (!SAFE_ID.test(id)) return undefined;
    const l = this.live.get(id);
    if (l) {
      const upTo = l.written;
      return { start: l.ref, events: await eventsOf(this.paths, l, upTo), ended: l.ended && upTo === l.first + l.held.length };
    }
    const read = await readResponseFile(this.paths.kept(id));
    if (read) {
      const { input: _input, ...ref } = read.start;
      // Past the retention, expired now rather than when its minute is dropped: the documented time holds exactly.
      if (read.mtimeMs <= this.now() - this.ttl) return { start: ref, events: null, ended: true };
      return { start: ref, events: read.events, ended: true };
    }
    const past = await this.past.find(id);
    return past && { start: past, events: null, ended: true };
  }

  /**
   * The events after `after`, then each as it is written (D-32): from the window in memory, from the
   * file when this follower is behind it, and once the response is no longer live from its trace.
   */
  async *follow(id: string, after: number, signal?: AbortSignal): AsyncGenerator<UnsequencedEvent> {
    let n = after + 1;
    /** Where this follower is in the file, when it falls behind the window. */
    const cursor: FileCursor = { offset: 0, next: -1 };
    for (;;) {
      const l = this.live.get(id);
      if (!l) {
        const t = await this.trace(id);
        if (!t) return;
        if (!t.events) throw new ResponseEventsExpired(id);
        for (; n < t.events.length; n++) yield t.events[n]!;
        return;
      }
      if (n < l.first) {
        // Behind the window: from the file, where this follower's cursor is.
        if (cursor.next > n) Object.assign(cursor, { offset: 0, next: -1 });
        const files = [this.paths.running(id), this.paths.kept(id)];
        const got = await readEvents(files, cursor, l.first);
        if (cursor.next <= n) throw new Error(`the file of ${id} ends before event ${n}`);
        for (const e of got.slice(got.length - (cursor.next - n))) {
          yield e;
          n++;
          if (signal?.aborted) return;
        }
        continue;
      }
      while (n >= l.first && n < l.written) {
        yield l.held[n - l.first]!.event;
        n++;
        if (signal?.aborted) return;
      }
      if (n < l.first) continue;
      if (l.ended && n >= l.first + l.held.length) return;
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
}
