// V8 heap tuning for a Parley server process (npm start, `parley serve`, the benchmark's server).
import v8 from 'node:v8';

/**
 * With a large heap limit V8 lets the old space grow to several times its live size between major
 * GCs, a resident peak that is nearly all garbage; a growing factor of 2 lowers it at the same
 * throughput (figures: docs/benchmarks.md). V8 reads the factor each time it sets the next GC's limit, so
 * setting it at start-up works. An explicit --heap-growing-percent on Node's command line wins.
 * Returns whether it set the factor.
 */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent\b/.test(a))) return false;
  v8.setFlagsFromString('--heap-growing-percent=100');
  return true;
}
