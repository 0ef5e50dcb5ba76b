// The wire's directives of a scenario (docs/scenarios.md, D-124), played by the SSE writer (./sse.ts) on
// the one connection whose request asked: a cut after an event (a clean close or a TCP reset), a stall,
// a malformed frame, an event written twice. The reply itself is untouched: after a cut it runs on and
// stays resumable (D-34, D-32), as after a real network failure.
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Scenario } from '../core/scenario.ts';

/** A stream's wire directives, and how long a stall may last (the app's maximum reply duration, D-34). */
export interface WireScenario {
  scenario: Scenario;
  boundMs: number;
}

/** What the writer lends the scenario: its write, and its keep-alive comments held back during a stall. */
export interface WireWriter {
  write(chunk: string): Promise<void>;
  hush(quiet: boolean): void;
}

/** A frame whose `data:` line is not JSON, in place of no event (`malformed-after`). */
export const MALFORMED_FRAME = 'event: parley.malformed\ndata: {this frame is not JSON (malformed-after)\n\n';

/**
 * Writes the `n`-th event of the connection (`frame`, its text) as the scenario shapes it. Resolves
 * true once the connection is cut: the writer then stops.
 */
export async function writeShaped(res: ServerResponse, w: WireWriter, frame: string, n: number, wire: WireScenario): Promise<boolean> {
  const s = wire.scenario;
  await w.write(frame);
  if (s.duplicate === n) await w.write(frame);
  if (s.malformedAfter === n) await w.write(MALFORMED_FRAME);
  if (s.stall?.after === n) await stall(res, w, Math.min(s.stall.ms, wire.boundMs));
  if (s.dropAfter !== n && s.resetAfter !== n) return false;
  const socket = res.socket;
  if (!socket || socket.destroyed) return true;
  if (s.dropAfter === n) {
    // A clean end (FIN) once what was written is out: the client reads the events, then the end.
    socket.end();
    await settled(once(socket, 'finish'), socket);
    socket.destroy();
  } else {
    // A reset (RST) once what was written is out, as a middlebox that gives up on the connection sends.
    if (socket.writableLength > 0) await settled(once(socket, 'drain'), socket);
    if (!socket.destroyed) socket.resetAndDestroy();
  }
  return true;
}

/** Waits for `event` or for the socket to close, whichever comes first; an error ends the wait too. */
async function settled(event: Promise<unknown>, socket: NonNullable<ServerResponse['socket']>): Promise<void> {
  await Promise.race([event, once(socket, 'close')]).catch(() => {});
}

/** Nothing written for `ms`, keep-alive comments included; ends early if the client leaves. */
async function stall(res: ServerResponse, w: WireWriter, ms: number): Promise<void> {
  w.hush(true);
  let timer: NodeJS.Timeout | undefined;
  const gone = () => clearTimeout(timer);
  try {
    await new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      res.once('close', () => {
        gone();
        resolve();
      });
    });
  } finally {
    gone();
    w.hush(false);
  }
}
