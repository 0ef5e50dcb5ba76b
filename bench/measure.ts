// The measuring instruments: autocannon for throughput under load, and sequential probes (one request
// at a time, timed with the high-resolution clock) for idle latency and for streams.
import http from 'node:http';
import autocannon from 'autocannon';

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
}

export interface LoadSpec {
  port: number;
  method: 'GET' | 'POST' | 'PATCH';
  /** Called for every request: lets a run spread over many conversations. */
  path: () => string;
  body?: string;
  headers?: Record<string, string>;
  connections: number;
  seconds: number;
  /** A number of requests instead of a duration (for creates, which grow the store). */
  amount?: number;
}

/** Throughput and latency under `connections` concurrent keep-alive connections. Any non-2xx fails the run. */
export async function load(spec: LoadSpec): Promise<LoadResult> {
  const headers: Record<string, string> = { ...spec.headers };
  if (spec.body !== undefined) headers['content-type'] = 'application/json';
  const result = await autocannon({
    url: `http://127.0.0.1:${spec.port}`,
    connections: spec.connections,
    // By count, autocannon notices the end only at its next sample tick: sample every 10 ms then.
    ...(spec.amount ? { amount: spec.amount, sampleInt: 10 } : { duration: spec.seconds }),
    requests: [
      {
        method: spec.method,
        headers,
        body: spec.body,
        setupRequest: (req) => ({ ...req, path: spec.path() }),
      },
    ],
  });
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0)
    throw new Error(`${spec.method} ${spec.path()}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  // Completed requests over the measured time: autocannon's per-second average is coarse for short runs.
  return {
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

export interface Timing {
  /** Milliseconds from sending the request to the first line matching `first` (or the first chunk). */
  firstMs: number;
  totalMs: number;
  /** Lines matching `unit` (events, tokens), and the time from the first to the last of them. */
  units: number;
  unitSpanMs: number;
}

export interface TimedOptions {
  body?: string;
  headers?: Record<string, string>;
  /** The line whose arrival is "the first event" (default: the first chunk of the body). */
  first?: (line: string) => boolean;
  /** The lines counted for the rate (default: chunks). */
  unit?: (line: string) => boolean;
}

/** One request, timed: when the first interesting line arrives, and how fast the counted lines come. */
export function timed(port: number, method: string, path: string, opts: TimedOptions = {}): Promise<Timing> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const ms = () => Number(process.hrtime.bigint() - t0) / 1e6;
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(opts.body));
    }
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new Error(`${method} ${path}: status ${res.statusCode}`));
      }
      res.setEncoding('utf8');
      let firstMs = -1;
      let firstUnitMs = -1;
      let lastUnitMs = -1;
      let units = 0;
      let rest = '';
      res.on('data', (chunk: string) => {
        const now = ms();
        if (!opts.first && firstMs < 0) firstMs = now;
        if (!opts.unit) {
          if (firstUnitMs < 0) firstUnitMs = now;
          lastUnitMs = now;
          units++;
        }
        if (!opts.first && !opts.unit) return;
        // Lines may arrive split across chunks.
        const lines = (rest + chunk).split('\n');
        rest = lines.pop()!;
        for (const line of lines) {
          if (opts.first && firstMs < 0 && opts.first(line)) firstMs = now;
          if (opts.unit?.(line)) {
            if (firstUnitMs < 0) firstUnitMs = now;
            lastUnitMs = now;
            units++;
          }
        }
      });
      res.on('end', () => resolve({ firstMs, totalMs: ms(), units, unitSpanMs: lastUnitMs - firstUnitMs }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Units per second between the first and the last unit (the rate while it streams). */
export function rate(t: Timing): number {
  return t.units > 1 && t.unitSpanMs > 0 ? ((t.units - 1) * 1000) / t.unitSpanMs : NaN;
}

/** Runs `fn` `n` times, one after another, after `warmup` unmeasured runs. */
export async function repeat<T>(n: number, warmup: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  for (let i = 0; i < warmup; i++) await fn(i);
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(await fn(warmup + i));
  return out;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * Each spec measured in turn, `rounds` times, keeping each one's median round (after a warm-up of
 * each): a disturbance of the machine then lands on every target alike instead of on whichever
 * happened to run during it, and one lucky or unlucky round does not decide a ratio.
 */
export async function interleaved<K extends string>(
  specs: Partial<Record<K, LoadSpec>>,
  rounds: number,
  warmupSeconds: number,
): Promise<Partial<Record<K, LoadResult>>> {
  const targets = (Object.keys(specs) as K[]).filter((t) => specs[t]);
  for (const t of targets) {
    const spec = specs[t]!;
    await load({ ...spec, seconds: warmupSeconds, amount: spec.amount ? Math.ceil(spec.amount / 4) : undefined });
  }
  const results: Partial<Record<K, LoadResult[]>> = {};
  for (let round = 0; round < rounds; round++) {
    for (const t of targets) (results[t] ??= []).push(await load(specs[t]!));
  }
  const median: Partial<Record<K, LoadResult>> = {};
  for (const t of targets) {
    const sorted = results[t]!.sort((x, y) => x.rps - y.rps);
    median[t] = sorted[(sorted.length - 1) >> 1]!;
  }
  return median;
}

/** Runs `op` in `workers` closed loops for `seconds`; the operations done a second (the probes' load). */
export async function closedLoopRate(workers: number, seconds: number, op: () => Promise<unknown>): Promise<number> {
  let done = 0;
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < until) {
        await op();
        done++;
      }
    }),
  );
  return done / ((performance.now() - t0) / 1000);
}
