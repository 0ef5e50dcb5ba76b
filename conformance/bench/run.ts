// `parley bench --target`: each probe run on the target and on its floor in alternating rounds, each
// figure reported as target ÷ floor with its spread over the rounds (lower is better for times,
// higher for throughputs), within a time budget; what the run made is deleted at its end.
import type { Target } from '../target.ts';
import { startFloor } from './floor.ts';
import { FigureError, PROBES, type Probe, type ProbeEnv } from './probes.ts';
import { cleanUp, prepare, type Made } from './setup.ts';
import { Subject } from './wire.ts';

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export interface FigureResult {
  id: string;
  title: string;
  unit: 'ms' | 'req/s';
  target?: Spread;
  floor?: Spread;
  /** target ÷ floor, per round. */
  ratio?: Spread;
  /** Why it was not measured, or what went wrong measuring it. */
  skipped?: string;
  error?: string;
}

export interface BenchReport {
  object: 'bench';
  base_url: string;
  rounds: number;
  started_at: string;
  seconds: number;
  figures: FigureResult[];
  /** What the clean-up could not delete. */
  leftovers: string[];
}

export interface BenchOptions {
  target: Target;
  rounds: number;
  samples: number;
  requests: { read: number; write: number };
  maxSeconds: number;
  /** Probe ids to run (all when absent). */
  only?: string[];
  onProgress?: (line: string) => void;
}

function spread(xs: number[]): Spread | undefined {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return { median: s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2, min: s[0]!, max: s.at(-1)! };
}

export const PROBE_IDS = PROBES.map((p) => p.id);

export async function runBench(opts: BenchOptions): Promise<BenchReport> {
  const started = Date.now();
  const deadline = started + opts.maxSeconds * 1000;
  const probes = PROBES.filter((p) => !opts.only || opts.only.includes(p.id));
  const target = new Subject('target', opts.target.baseUrl, opts.target.apiKey);
  const made: Made = { conversations: [] };
  const values = new Map<string, { target: number[]; floor: number[] }>();
  const results = new Map<string, FigureResult>();
  for (const p of probes) for (const f of p.figures) results.set(f.id, { ...f });
  let floor: Awaited<ReturnType<typeof startFloor>> | undefined;
  let floorSubject: Subject | undefined;
  let leftovers: string[] = [];
  try {
    const { env, captured } = await prepare(opts.target, target, made, {
      appId: opts.target.appId,
      lastResponse: new Map(),
      made: async (s, ids) => {
        if (s.name === 'target') for (const id of ids) made.conversations.push([opts.target.appId, id]);
      },
      samples: opts.samples,
      requests: opts.requests,
    });
    floor = await startFloor(captured);
    floor.holdApp = env.slow?.appId;
    floor.webhookUrl = made.receiver?.urlFor('floor');
    floorSubject = new Subject('floor', floor.baseUrl, 'floor');
    const live = new Set<Probe>(probes);
    for (const p of probes) {
      const why = p.skip?.(env);
      if (why) skip(p, why);
    }
    for (let round = 0; round < opts.rounds; round++) {
      const order = round % 2 === 0 ? [target, floorSubject] : [floorSubject, target];
      for (const p of [...live]) {
        if (Date.now() > deadline) {
          skip(p, `the time budget (--max-seconds ${opts.maxSeconds}) was spent after ${round} round(s)`);
          continue;
        }
        try {
          for (const s of order) await measure(p, s, env);
          opts.onProgress?.(`round ${round + 1}/${opts.rounds}: ${p.id}`);
        } catch (err) {
          if (!(err instanceof FigureError)) throw err;
          for (const f of p.figures) results.get(f.id)!.error = err.message;
          live.delete(p);
        }
      }
    }
    function skip(p: Probe, why: string) {
      live.delete(p);
      for (const f of p.figures) results.get(f.id)!.skipped ??= why;
    }
  } finally {
    leftovers = await cleanUp(opts.target, target, made).catch((err: Error) => [`clean-up: ${err.message}`]);
    await Promise.all([target.close(), floorSubject?.close(), floor?.close()]);
  }
  // A figure without every round's pair reports what it has; its ratio pairs the rounds that have both.
  for (const [id, r] of results) {
    const v = values.get(id);
    if (!v || r.error) continue;
    r.target = spread(v.target);
    r.floor = spread(v.floor);
    const paired = Math.min(v.target.length, v.floor.length);
    // A floor too quick for the clock (0 ms) gives no ratio rather than an infinite one.
    const pairs = v.target.slice(0, paired).flatMap((t, i) => (v.floor[i]! > 0 ? [t / v.floor[i]!] : []));
    r.ratio = spread(pairs);
  }
  return {
    object: 'bench',
    base_url: opts.target.baseUrl,
    rounds: opts.rounds,
    started_at: new Date(started).toISOString(),
    seconds: Math.round((Date.now() - started) / 100) / 10,
    figures: [...results.values()],
    leftovers,
  };

  async function measure(p: Probe, s: Subject, env: ProbeEnv) {
    const got = await p.run(s, env);
    for (const [id, v] of Object.entries(got)) {
      const slot = values.get(id) ?? { target: [], floor: [] };
      values.set(id, slot);
      slot[s.name].push(v);
    }
  }
}
