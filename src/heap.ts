// V8 heap tuning for a Parley server process (npm start, `parley serve`, the benchmark's server).
import v8 from 'node:v8';

/**
 * With a large heap limit V8 lets the old space grow to ~4× its live size between major GCs; with
 * 100,000 conversations (~58 MB live) that made a 260–340 MB resident peak, nearly all garbage.
 * A growing factor of 2 measured ~230 MB at the same throughput (50 %: ~200 MB but 5–10 % fewer
 * requests/s); docs/benchmarks.md. V8 reads the factor each time it sets the next GC's limit, so
 * setting it at start-up works. An explicit --heap-growing-percent on Node's command line wins.
 * Returns whether it set the factor.
 */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent\b/.test(a))) return false;
  v8.setFlagsFromString('--heap-growing-percent=100');
  return true;
}
