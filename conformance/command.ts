// `conformance` as a commander command: used by `parley conformance` and by conformance/main.ts.
// Exit codes: 0 no case failed, 1 a case failed, 2 usage error or unreachable target.
import fs from 'node:fs/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import { sectionTitle, selectCases } from './registry.ts';
import { REPORTERS, prettyHeader, prettyLine, render, renderPretty, summaryLine, type ReporterName } from './reporters.ts';
import { newRunId, runConformance, UnreachableError, type CaseResult, type Profile } from './run.ts';
import { loadTarget, targetValue, UsageError, type Target } from './target.ts';

interface Opts {
  target?: string;
  baseUrl?: string;
  apiKey?: string;
  profile: Profile;
  only?: string[];
  skip?: string[];
  reporter: ReporterName;
  out?: string;
  timeout: number;
  settleTimeout: number;
  bail?: boolean;
  repeat: number;
  list?: boolean;
}

function positiveInt(name: string) {
  return (v: string) => {
    if (!/^\d+$/.test(v) || Number(v) < 1) throw new InvalidArgumentError(`${name} must be a positive integer.`);
    return Number(v);
  };
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

const processIo: Io = {
  out: (l) => process.stdout.write(l + '\n'),
  err: (l) => process.stderr.write(l + '\n'),
};

export function conformanceCommand(io: Io = processIo): Command {
  const cmd = new Command('conformance')
    .description('Run the conformance suite against an implementation of the interface (see docs/conformance.md)')
    .option('--target <file>', 'target file (base_url, api_key, app_id, apps…): see docs/conformance.md')
    .option('--base-url <url>', "override the target's base_url (must end in /v1)")
    .option('--api-key <key>', "override the target's api_key")
    .addOption(new Option('--profile <profile>', 'spec: only what the interface states; reference: also the D-n decisions').choices(['spec', 'reference']).default('spec'))
    .option('--only <glob>', 'run only cases whose id matches (repeatable, comma-separated; * and ?)', collect)
    .option('--skip <glob>', 'skip cases whose id matches (repeatable, comma-separated)', collect)
    .addOption(new Option('--reporter <name>', 'report format').choices([...REPORTERS]).default('pretty'))
    .option('--out <file>', 'write the report to a file (stdout still shows progress and the summary)')
    .option('--timeout <ms>', 'per request, in milliseconds: time to the headers and the longest silence in a body', positiveInt('--timeout'), 30_000)
    .option('--settle-timeout <ms>', 'how long to read again what may settle after an answer (aggregated metrics, the generated title), in milliseconds', positiveInt('--settle-timeout'), 30_000)
    .option('--bail', 'stop at the first failure')
    .option('--repeat <n>', 'run the selection n times; a case passes only if it passes every time', positiveInt('--repeat'), 1)
    .option('--list', 'list the selected cases and exit')
    .showHelpAfterError()
    .exitOverride((err) => {
      // Help and version exit 0; any other commander error is a usage error (2).
      process.exit(err.exitCode === 0 ? 0 : 2);
    })
    .action(async (o: Opts) => {
      process.exitCode = await conformanceAction(o, io);
    });
  return cmd;
}

/** Runs the command's action and returns the exit code. */
export async function conformanceAction(o: Opts, io: Io = processIo): Promise<number> {
  let target: Target | undefined;
  try {
    if (o.target) target = await loadTarget(o.target, { baseUrl: o.baseUrl, apiKey: o.apiKey });
    else if (!o.list) throw new UsageError('--target FILE is required (see docs/conformance.md for its format)');
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`conformance: ${err.message}`);
      return 2;
    }
    throw err;
  }

  if (o.list) {
    const cases = selectCases({ profile: o.profile, only: o.only, skip: o.skip });
    let section = '';
    for (const c of cases) {
      if (c.section !== section) io.out(sectionTitle((section = c.section)));
      const missing = target ? (c.needs ?? []).filter((k) => !targetValue(target, k)) : [];
      const needs = c.needs?.length ? `  [needs ${c.needs.join(', ')}${missing.length ? ': missing, would be skipped' : ''}]` : '';
      io.out(`  ${c.id}  ${c.level}  ${c.description}${needs}`);
    }
    io.out(`conformance: ${cases.length} cases (profile ${o.profile})`);
    return 0;
  }

  const progress = o.reporter === 'pretty' || o.out !== undefined;
  let section = '';
  const onResult = (r: CaseResult) => {
    if (r.section !== section) io.out(sectionTitle((section = r.section)));
    io.out(prettyLine(r));
  };
  const runId = newRunId();
  if (progress) io.out(prettyHeader({ runId, profile: o.profile, baseUrl: target!.baseUrl, appId: target!.appId }));
  try {
    const run = await runConformance({
      target: target!,
      runId,
      profile: o.profile,
      only: o.only,
      skip: o.skip,
      timeoutMs: o.timeout,
      settleTimeoutMs: o.settleTimeout,
      bail: o.bail,
      repeat: o.repeat,
      onResult: progress ? onResult : undefined,
    });
    if (o.out) await fs.writeFile(o.out, render(run, o.reporter) + '\n');
    if (progress) io.out(renderPretty(run, { progressShown: true }));
    else io.out(render(run, o.reporter));
    io.out(summaryLine(run.summary));
    return run.summary.failed > 0 ? 1 : 0;
  } catch (err) {
    if (err instanceof UnreachableError || err instanceof UsageError) {
      io.err(`conformance: ${err.message}`);
      io.out(summaryLine({ passed: 0, failed: 0, skipped: 0 }));
      return 2;
    }
    throw err;
  }
}
