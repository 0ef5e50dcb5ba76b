// The model's directives of a scenario (docs/scenarios.md, D-124): the time to the first model event,
// text deltas re-cut and paced (reproducibly, from a seed), and a scripted fault. They act where a
// reply's events are produced (./response-runner.ts), so that every reader of the one event stream (the
// SSE answer, the JSON body, a resume, the webhooks) sees the same reply.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pacing, Scenario } from '../../core/scenario.ts';
import { StopReason, STOPS } from './stops.ts';

/** mulberry32: a small seeded generator, so that a scenario's jitter is the same on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A run's scenario as its runner plays it; every wait ends with the run's signal (its maximum duration, D-34). */
export class ScenarioPlay {
  private readonly pacing: Pacing | undefined;
  private readonly random: () => number;
  /** Events handed out so far, `response.created` the first. */
  private handed = 0;
  /** Text short of a whole `chunk`, held for the next delta (or `rest`). */
  private held = '';

  constructor(private readonly s: Scenario) {
    this.pacing = s.pacing;
    this.random = seeded(s.pacing?.seed ?? 0);
  }

  /** `ttft`: the wait between `response.created` and the first model event. */
  async firstToken(signal: AbortSignal): Promise<void> {
    if (this.s.ttftMs) await sleep(this.s.ttftMs, undefined, { signal });
  }

  /**
   * Text deltas re-cut to `chunk` characters (whole code points), each piece after its paced wait; what
   * falls short of a chunk is held for the next delta, and given by `rest` when the text ends.
   */
  async *paced(delta: string, signal: AbortSignal): AsyncGenerator<string> {
    const p = this.pacing;
    if (!p) {
      yield delta;
      return;
    }
    const pieces = cut(this.held + delta, p.chunk);
    this.held = p.chunk && pieces.length > 0 && Array.from(pieces.at(-1)!).length < p.chunk ? pieces.pop()! : '';
    for (const piece of pieces) {
      if (p.tps) await sleep(this.nextWaitMs(p.tps, p.jitterMs), undefined, { signal });
      yield piece;
    }
  }

  /** The text held short of a chunk, given once: the model's turn ended, or something else follows. */
  rest(): string {
    const held = this.held;
    this.held = '';
    return held;
  }

  /** The wait before the next delta: 1000 / tps ms, ± up to `jitterMs`, drawn from the seed. */
  nextWaitMs(tps: number, jitterMs: number): number {
    const jitter = jitterMs ? (this.random() * 2 - 1) * jitterMs : 0;
    return Math.max(0, Math.round(1000 / tps + jitter));
  }

  /** Counts an event handed out; throws the scripted fault once `fail-after`'s event is out. */
  handedOut(): void {
    this.handed++;
    if (this.s.failAfter !== undefined && this.handed >= this.s.failAfter) throw new StopReason(STOPS.scripted);
  }
}

/** `text` in pieces of `size` code points (a surrogate pair is never split); no size: whole. */
function cut(text: string, size: number | undefined): string[] {
  if (!size) return [text];
  const points = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(''));
  return out;
}
