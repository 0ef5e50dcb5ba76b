// `parley bench --target FILE` (D-160): times any implementation of the interface beside a floor measured in
// the same run (conformance/bench/). The target file is the conformance suite's (docs/target.md).
import fs from 'node:fs/promises';
import { Command, InvalidArgumentError } from 'commander';
import type { Session } from '../context.ts';
import { UsageError } from '../io.ts';

function positive(name: string, max: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new InvalidArgumentError(`${name} must be a whole number from 1 to ${max}.`);
    return n;
  };
}

interface Opts {
  target: string;
  baseUrl?: string;
  apiKey?: string;
  rounds: number;
  samples: number;
  requests: number;
  maxSeconds: number;
  only?: string[];
  json?: boolean;
  html?: string;
  remote?: boolean;
}

const HELP = `
Each figure is measured on the target and on a floor (a raw node:http server answering the same
requests with the bytes the target answered), in alternating rounds on this machine, and reported as
target ÷ floor with its spread. Times: first event and first text of a streamed send, a cancel to the
stream's terminal event, a resume to its first replayed event, a create to its webhook delivery (with
the target's admin and webhooks); throughputs of get, list, create and send, 1 and 16 at a time.
The run is bounded (--max-seconds, --requests) and deletes what it made. A target that is not on
this machine is refused unless --remote is given.

Examples:
  parley bench --target fixtures/target.json
  parley bench --target vendor.json --rounds 5 --json > bench.json
  parley bench --target fixtures/target.json --only stream,cancel --html bench.html
`;

/** A base URL on this machine: a bench sends thousands of requests, never by mistake to a server elsewhere. */
export function isLoopbackBase(url: string): boolean {
  const h = new URL(url).hostname.replace(/^\[|\]$/g, '');
  return h === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '::1';
}

export function benchCommand(session: Session): Command {
  return new Command('bench')
    .description('time an implementation against a floor measured in the same run (docs/benchmarks.md)')
    .requiredOption('--target <file>', "the conformance suite's target file (docs/target.md)")
    .option('--base-url <url>', "replaces the target's base_url")
    .option('--api-key <key>', "replaces the target's api_key")
    .option('--rounds <n>', 'rounds, alternating target and floor', positive('--rounds', 20), 3)
    .option('--samples <n>', 'timed requests per round for each latency', positive('--samples', 50), 5)
    .option('--requests <n>', 'requests per round for each read throughput (writes: a fifth of it)', positive('--requests', 10_000), 200)
    .option('--max-seconds <n>', 'time budget: figures not reached in it are reported skipped', positive('--max-seconds', 3600), 180)
    .option('--only <ids>', 'probes to run, comma-separated (stream, resume, cancel, webhook, get_c1, get_c16, list_c1, …)', (v) =>
      v.split(',').map((s) => s.trim()),
    )
    .option('--json', 'print the report as JSON')
    .option('--html <file>', 'also write the report as an HTML page')
    .option('--remote', 'allow a target that is not on this machine')
    .addHelpText('after', HELP)
    .action(async (opts: Opts) => {
      const { loadTarget, UsageError: TargetUsage } = await import('../../conformance/target.ts');
      const { runBench, PROBE_IDS } = await import('../../conformance/bench/run.ts');
      const { htmlReport, prettyReport } = await import('../../conformance/bench/report.ts');
      const unknown = opts.only?.filter((id) => !PROBE_IDS.includes(id));
      if (unknown?.length) throw new UsageError(`--only: unknown probe ${unknown.join(', ')} (known: ${PROBE_IDS.join(', ')})`);
      session.out.addSecret(opts.apiKey);
      let target: Awaited<ReturnType<typeof loadTarget>>;
      try {
        target = await loadTarget(opts.target, {
          baseUrl: opts.baseUrl,
          apiKey: opts.apiKey,
          fallbackApiKey: session.io.env.PARLEY_API_KEY,
        });
      } catch (err) {
        if (err instanceof TargetUsage) throw new UsageError(err.message);
        throw err;
      }
      session.out.addSecret(target.apiKey);
      if (!opts.remote && !isLoopbackBase(target.baseUrl))
        throw new UsageError(
          `${target.baseUrl} is not on this machine: a bench sends thousands of requests; pass --remote to bench it anyway`,
        );
      const report = await runBench({
        target,
        rounds: opts.rounds,
        samples: opts.samples,
        requests: { read: opts.requests, write: Math.max(4, Math.round(opts.requests / 5)) },
        maxSeconds: opts.maxSeconds,
        only: opts.only,
        onProgress: (line) => session.out.note(line),
      });
      if (opts.html) await fs.writeFile(opts.html, htmlReport(report));
      session.out.line(opts.json ? JSON.stringify(report, null, 2) : prettyReport(report));
      session.exitCode = report.figures.some((f) => f.error) || report.leftovers.length ? 1 : 0;
    });
}
