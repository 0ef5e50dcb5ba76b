// `parley conformance client --cmd "<command>"` (docs/client-kit.md): the client kit as a commander
// command. Exit codes: 0 no MUST case failed (with --strict: no case), 1 otherwise, 2 usage error.
import fs from 'node:fs/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { Io } from '../command.ts';
import { globMatcher } from '../registry.ts';
import { prettyHeader, prettyLine, REPORTERS, render, renderPretty, summaryLine, type ReporterName } from '../reporters.ts';
import { newRunId } from '../run.ts';
import { CLIENT_CASES, KIT_NAME, kitExitCode, runClientKit } from './kit.ts';

export interface ClientOpts {
  cmd?: string;
  only?: string[];
  reporter: ReporterName;
  out?: string;
  strict?: boolean;
  list?: boolean;
  timeout: number;
  widget?: boolean;
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

function positive(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('--timeout must be a whole number of milliseconds.');
  return n;
}

export function clientCommand(io: Io): Command {
  return new Command('client')
    .description("judge a client of the interface: run its command once per case against the kit's own Parley (docs/client-kit.md)")
    .option('--cmd <command>', 'the client to judge, run by the shell once per case with the PARLEY_* variables of docs/client-kit.md')
    .option('--only <glob>', 'run only cases whose id matches (repeatable, comma-separated; * and ?)', collect)
    .addOption(new Option('--reporter <name>', 'report format').choices([...REPORTERS]).default('pretty'))
    .option('--out <file>', 'write the report to a file (stdout still shows progress and the summary)')
    .option('--strict', 'fail the run on a SHOULD case too (a resilience the client lacks)')
    .option('--list', 'list the cases and exit')
    .option(
      '--widget',
      "the client is a widget: it gets PARLEY_PUBLISHABLE_KEY and PARLEY_WIDGET_ORIGIN, and is judged by its publishable key's requests (D-134)",
    )
    .option('--timeout <ms>', 'how long one run of the client may take', positive, 60_000)
    .addHelpText(
      'after',
      '\nExamples:\n  parley conformance client --cmd "node my-client.js"\n  parley conformance client --cmd "python3 client.py" --only "K-stream*" --reporter junit --out client.xml\n',
    )
    .action(async (o: ClientOpts) => {
      process.exitCode = await clientAction(o, io);
    });
}

export async function clientAction(o: ClientOpts, io: Io): Promise<number> {
  const match = globMatcher(o.only);
  const cases = CLIENT_CASES.filter((c) => !match || match(c.id));
  if (o.list) {
    for (const c of cases) io.out(`${c.id}  ${c.task}  ${c.description}${c.should ? ' (+ SHOULD)' : ''}`);
    return 0;
  }
  if (!o.cmd) {
    io.err('conformance client: --cmd "<command>" is required: the client to judge (docs/client-kit.md)');
    return 2;
  }
  if (cases.length === 0) {
    io.err(`conformance client: --only ${o.only?.join(',')} matches no case (see --list)`);
    return 2;
  }
  const runId = newRunId();
  const progress = o.reporter === 'pretty' || o.out !== undefined;
  if (progress)
    io.out(
      prettyHeader({
        subject: 'client',
        suite: { name: KIT_NAME, version: '' },
        interfaceVersion: '1.0.0',
        profile: 'client-1.0.0',
        runId,
        baseUrl: o.cmd,
        appId: 'app_demo',
      }),
    );
  const run = await runClientKit({
    cmd: o.cmd,
    cases,
    timeoutMs: o.timeout,
    widget: o.widget === true,
    runId,
    onResult: progress ? (r) => io.out(prettyLine(r)) : undefined,
  });
  if (o.out) await fs.writeFile(o.out, `${render(run, o.reporter)}\n`);
  io.out(progress ? renderPretty(run, { progressShown: true }) : render(run, o.reporter));
  io.out(summaryLine(run.summary, undefined, 'client kit'));
  return kitExitCode(run, o.strict === true);
}
