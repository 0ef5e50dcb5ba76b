// `conformance` as a commander command: used by `parley conformance` and by conformance/main.ts.
// Exit codes: 0 nothing failed, 1 a case failed or errored (beyond the baseline), a baseline entry is
// stale, or (--fail-on-skip) a case was skipped; 2 usage error, or a target that the preflight refuses.
import fs from 'node:fs/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import { clientCommand } from './client/command.ts';
import { badgeSvg, besideReport, summaryJson } from './badge.ts';
import { baselineText, loadBaseline, type Baseline } from './baseline.ts';
import { parseRate } from './pace.ts';
import { DEFAULT_WINDOW_WAIT_MS } from './context.ts';
import { sectionTitle, selectCases } from './registry.ts';
import { REPORTERS, prettyHeader, prettyLine, render, renderPretty, summaryLine, type ReporterName } from './reporters.ts';
import {
  exitCode,
  newRunId,
  PreflightError,
  PROFILES,
  resolveProfile,
  runConformance,
  UnreachableError,
  type CaseResult,
  type ProfileName,
} from './run.ts';
import { loadTarget, targetValue, UsageError, type Target } from './target.ts';
import { INTERFACE_VERSION, SUITE_NAME, SUITE_VERSION } from './version.ts';

export { clientAction } from './client/command.ts';

interface Opts {
  target?: string;
  baseUrl?: string;
  apiKey?: string;
  profile: ProfileName;
  only?: string[];
  skip?: string[];
  reporter: ReporterName;
  out?: string;
  timeout: number;
  settleTimeout: number;
  windowWait: number;
  bail?: boolean;
  repeat: number;
  retryFailed: number;
  list?: boolean;
  failOnSkip?: boolean;
  expectedFailures?: string;
  writeBaseline?: string;
  rateLimit?: number;
  receiverUrl?: string;
}

/** D-109, extended: an http URL with a port, where the receiver listens and the implementation delivers. */
export function receiverUrl(v: string): string {
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new InvalidArgumentError('--receiver-url must be a URL, e.g. http://10.0.0.5:9900/hooks.');
  }
  if (url.protocol !== 'http:')
    throw new InvalidArgumentError(
      "--receiver-url must be http: the suite's receiver speaks plain HTTP (a tunnel that ends TLS can forward to it).",
    );
  if (!url.port) throw new InvalidArgumentError('--receiver-url must name its port: the receiver listens there.');
  if (url.search || url.hash || url.username) throw new InvalidArgumentError('--receiver-url takes no query, fragment or credentials.');
  return url.href.replace(/\/+$/, '');
}

function rate(v: string): number {
  const r = parseRate(v);
  if (typeof r === 'string') throw new InvalidArgumentError(r);
  return r;
}

function positiveInt(name: string, min = 1) {
  return (v: string) => {
    if (!/^\d+$/.test(v) || Number(v) < min)
      throw new InvalidArgumentError(`${name} must be a ${min === 0 ? 'whole number (0 or more)' : 'positive integer'}.`);
    return Number(v);
  };
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

const processIo: Io = {
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
};

export function conformanceCommand(io: Io = processIo): Command {
  const cmd = new Command('conformance')
    .description('Run the conformance suite against an implementation of the interface (see docs/conformance.md)')
    .option('--target <file>', 'target file (base_url, api_key, app_id, apps…): see docs/conformance.md')
    .option('--base-url <url>', "override the target's base_url (must end in /v1)")
    .option('--api-key <key>', "override the target's api_key")
    .addOption(
      new Option(
        '--profile <profile>',
        `spec: only what the interface states; reference: also the D-n decisions (spec and reference stand for spec-${INTERFACE_VERSION} and reference-${INTERFACE_VERSION})`,
      )
        .choices([...PROFILES])
        .default('spec'),
    )
    .option('--only <glob>', 'run only cases whose id matches (repeatable, comma-separated; * and ?)', collect)
    .option('--skip <glob>', 'skip cases whose id matches (repeatable, comma-separated)', collect)
    .addOption(new Option('--reporter <name>', 'report format').choices([...REPORTERS]).default('pretty'))
    .option(
      '--out <file>',
      'write the report to a file (stdout still shows progress and the summary), and beside it FILE.summary.json and FILE.badge.svg (the extension replaced)',
    )
    .option(
      '--timeout <ms>',
      'per request, in milliseconds: time to the headers and the longest silence in a body',
      positiveInt('--timeout'),
      30_000,
    )
    .option(
      '--settle-timeout <ms>',
      'how long to read again what may settle after an answer (aggregated metrics, the generated title), in milliseconds',
      positiveInt('--settle-timeout'),
      30_000,
    )
    .option(
      '--window-wait <ms>',
      "how long a case's set-up waits out a rate-limit window an earlier run left full, in milliseconds; past it the case is errored, not failed (D-176)",
      positiveInt('--window-wait'),
      DEFAULT_WINDOW_WAIT_MS,
    )
    .option('--bail', 'stop at the first failure')
    .option(
      '--repeat <n>',
      'run the selection n times; a case passes only if it passes every time, and is flaky if it passes only some',
      positiveInt('--repeat'),
      1,
    )
    .option(
      '--retry-failed <n>',
      'run a case that failed again, alone, up to n times before reporting it; one that then passes is flaky (rate-limit cases are never retried)',
      positiveInt('--retry-failed', 0),
      0,
    )
    .option('--list', 'list the selected cases and exit')
    .option('--fail-on-skip', 'exit 1 when a case was skipped (a missing target key, an agent that never called a tool)')
    .option(
      '--expected-failures <file>',
      'cases expected to fail, one a line: <case id> <reason> (or <case id> [flaky] <reason>); a listed case that does what its line says does not fail the run, an entry that no longer holds does (stale)',
    )
    .option('--write-baseline <file>', 'write the cases that failed, errored or were flaky to FILE, in the --expected-failures format')
    .option('--rate-limit <rate>', 'at most this many requests, e.g. 5/s or 300/min (cases and cleanup together)', rate)
    .option(
      '--receiver-url <url>',
      "where the implementation can reach the webhook cases' receiver (http, with a port, which the receiver listens on); default: 127.0.0.1, for a target on loopback",
      receiverUrl,
    )
    .addHelpText(
      'after',
      `\n${SUITE_NAME} ${SUITE_VERSION}, judging interface ${INTERFACE_VERSION}. Exit codes: 0 passed, 1 failed, 2 usage error or target refused by the preflight.`,
    )
    .showHelpAfterError()
    .exitOverride((err) => {
      // Help and version exit 0; any other commander error is a usage error (2).
      process.exit(err.exitCode === 0 ? 0 : 2);
    })
    .action(async (o: Opts) => {
      process.exitCode = await conformanceAction(o, io);
    });
  // The client kit (docs/client-kit.md): judges a client instead of an implementation.
  // Its options are its own (several share a name with the suite's): the suite's are read before `client` only.
  cmd.enablePositionalOptions().addCommand(clientCommand(io));
  return cmd;
}

/**
 * D-108: a target that does not answer at its own base_url, run without --base-url: the server may listen
 * elsewhere (another port), and --base-url is how to say so; PARLEY_BASE_URL, when it names another
 * URL, is the likely one (it never redirects a target that names its own base_url).
 */
function baseUrlHint(o: Opts, target: Target): string {
  if (o.baseUrl) return '';
  const env = process.env.PARLEY_BASE_URL?.replace(/\/+$/, '');
  if (env && env !== target.baseUrl)
    return `; PARLEY_BASE_URL is ${env}: to test that one, run again with --base-url ${env} (the target file's base_url wins otherwise)`;
  return "; if the server listens elsewhere, run again with --base-url <its base URL, ending in /v1>, which overrides the target file's base_url";
}

/** Runs the command's action and returns the exit code. */
export async function conformanceAction(o: Opts, io: Io = processIo): Promise<number> {
  let target: Target | undefined;
  let baseline: Baseline | undefined;
  try {
    // PARLEY_API_KEY fills in only what the file leaves out: it never replaces a target's own key.
    if (o.target)
      target = await loadTarget(o.target, {
        baseUrl: o.baseUrl,
        apiKey: o.apiKey,
        fallbackApiKey: process.env.PARLEY_API_KEY || undefined,
      });
    else if (!o.list) throw new UsageError('--target FILE is required (see docs/conformance.md for its format)');
    if (o.expectedFailures) baseline = await loadBaseline(o.expectedFailures);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`conformance: ${err.message}`);
      return 2;
    }
    throw err;
  }

  if (o.list) {
    const cases = selectCases({ profile: resolveProfile(o.profile), only: o.only, skip: o.skip });
    let section = '';
    for (const c of cases) {
      if (c.section !== section) io.out(sectionTitle((section = c.section)));
      const missing = target ? (c.needs ?? []).filter((k) => !targetValue(target, k)) : [];
      const needs = c.needs?.length ? `  [needs ${c.needs.join(', ')}${missing.length ? ': missing, would be skipped' : ''}]` : '';
      const claim = c.capability && target ? target.claims[c.capability] : undefined;
      const capability = c.capability
        ? `  [capability ${c.capability}${claim && !claim.claimed && claim.how === 'declared' ? ': not declared, would be skipped' : ''}]`
        : '';
      io.out(`  ${c.id}  ${c.level}  ${c.description}${capability}${needs}`);
    }
    io.out(`conformance: ${cases.length} cases (profile ${resolveProfile(o.profile)}-${INTERFACE_VERSION})`);
    return 0;
  }

  const progress = o.reporter === 'pretty' || o.out !== undefined;
  let section = '';
  const onResult = (r: CaseResult) => {
    if (r.section !== section) io.out(sectionTitle((section = r.section)));
    io.out(prettyLine(r));
  };
  const runId = newRunId();
  const profile = `${resolveProfile(o.profile)}-${INTERFACE_VERSION}`;
  if (progress)
    io.out(
      prettyHeader({
        runId,
        profile,
        baseUrl: target!.baseUrl,
        appId: target!.appId,
        suite: { name: SUITE_NAME, version: SUITE_VERSION },
        interfaceVersion: INTERFACE_VERSION,
      }),
    );
  try {
    const run = await runConformance({
      target: target!,
      runId,
      profile: o.profile,
      only: o.only,
      skip: o.skip,
      timeoutMs: o.timeout,
      settleTimeoutMs: o.settleTimeout,
      windowWaitMs: o.windowWait,
      onWait: progress ? (id, ms, why) => io.out(`  … ${id}: waiting ${(ms / 1000).toFixed(ms % 1000 ? 1 : 0)} s for ${why}`) : undefined,
      bail: o.bail,
      repeat: o.repeat,
      retryFailed: o.retryFailed,
      onResult: progress ? onResult : undefined,
      onWarning: (w) => io.err(`conformance: warning: ${w}`),
      ratePerSecond: o.rateLimit,
      ...(o.receiverUrl ? { receiverUrl: o.receiverUrl } : {}),
      ...(baseline ? { expectedFailures: { baseline, file: o.expectedFailures! } } : {}),
    });
    if (o.out) {
      // D-105, extended: what a team shows of the run, beside the report.
      const beside = besideReport(o.out);
      await fs.writeFile(o.out, `${render(run, o.reporter)}\n`);
      await fs.writeFile(beside.summary, summaryJson(run));
      await fs.writeFile(beside.badge, badgeSvg(run));
    }
    if (o.writeBaseline) {
      await fs.writeFile(o.writeBaseline, baselineText(run));
      const flaky = run.summary.flaky ? ` and ${run.summary.flaky} flaky cases` : '';
      io.err(`conformance: wrote ${run.summary.failed + run.summary.errored} expected failures${flaky} to ${o.writeBaseline}`);
    }
    if (progress) io.out(renderPretty(run, { progressShown: true }));
    else io.out(render(run, o.reporter));
    io.out(summaryLine(run.summary, run.baseline));
    return exitCode(run, { failOnSkip: o.failOnSkip });
  } catch (err) {
    if (err instanceof UnreachableError || err instanceof PreflightError || err instanceof UsageError) {
      io.err(
        `conformance: ${err.message}${err instanceof UnreachableError && err.message.startsWith('target ') ? baseUrlHint(o, target!) : ''}`,
      );
      io.out(summaryLine({ passed: 0, failed: 0, flaky: 0, skipped: 0, errored: 0 }));
      return 2;
    }
    throw err;
  }
}
