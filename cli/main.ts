// The `parley` command line: builds the command tree, runs it, and turns every outcome into an exit code.
import { Command, CommanderError } from 'commander';
import { adminCommand } from './commands/admin.ts';
import { apiCommand } from './commands/api.ts';
import { configCommand, metricsCommand } from './commands/app.ts';
import { chatCommand } from './commands/chat.ts';
import { complete, completionAction, completionCommand } from './commands/completion.ts';
import { auditCommand } from './commands/audit.ts';
import { benchCommand } from './commands/bench.ts';
import { conformanceCommand } from './commands/conformance.ts';
import { conversationsCommand } from './commands/conversations.ts';
import { dataCommand } from './commands/data.ts';
import { dbCommand } from './commands/db.ts';
import { appsCommand } from './commands/apps.ts';
import { keysCommand } from './commands/keys.ts';
import { membersCommand } from './commands/members.ts';
import { completeCommand, sendCommand } from './commands/messages.ts';
import { responsesCommand } from './commands/responses.ts';
import { loginCommand, logoutCommand } from './commands/login.ts';
import { serveCommand } from './commands/serve.ts';
import { tapesCommand } from './commands/tapes.ts';
import { usageCommand } from './commands/usage.ts';
import { webhooksCommand } from './commands/webhooks.ts';
import { addGlobalOptions, Session } from './context.ts';
import { EXIT, Output, processIo, reportError, type CliIo } from './io.ts';
import { VERSION } from './version.ts';

const OVERVIEW = `
Configuration (flags win over the environment):
  PARLEY_BASE_URL  base URL, ending in /v1 (default http://127.0.0.1:8787/v1)
  PARLEY_API_KEY   secret key (sk_live_…); never printed, not even with --verbose
  PARLEY_APP_ID    app id
  PARLEY_TIMEOUT   seconds (default 60)
  PARLEY_PROFILE   profile saved by parley login (default "default"); flags and the variables above win
  PARLEY_ADMIN_TOKEN  personal access token for the admin commands (keys, audit, usage, apps, members, webhooks); else parley admin login's

Exit codes: 0 success, 1 API error (or a failed response), 2 usage error, 3 network error or timeout.

Examples:
  parley serve &
  parley login
  parley api GET /apps/{app}/conversations -f limit=5
  parley conversations create --title "Support" --json | jq -r .id
  parley send conv_abc123 "Hello" --stream
  parley chat
`;

/** Settings every command needs, applied after the tree is built (commander copies them only at creation). */
function configure(cmd: Command, parent: Command | null, out: Output, withGlobals: boolean): void {
  cmd
    .exitOverride()
    .configureOutput({
      writeOut: (s) => out.out(s),
      writeErr: (s) => out.stderr.write(out.redact(s)),
      outputError: (s, write) => write(s),
      // Help is wrapped to the terminal it goes to (commander would look at process.stdout).
      getOutHelpWidth: () => (out.stdout.isTTY && out.stdout.columns) || 80,
      getErrHelpWidth: () => (out.stderr.isTTY && out.stderr.columns) || 80,
    })
    .configureHelp({ showGlobalOptions: false, sortSubcommands: false })
    .showHelpAfterError('(add --help for usage)')
    .enablePositionalOptions();
  if (parent && cmd.parent !== parent) (cmd as { parent: Command | null }).parent = parent;
  if (withGlobals) addGlobalOptions(cmd);
  for (const sub of cmd.commands) configure(sub, cmd, out, withGlobals);
}

export function buildProgram(out: Output, session: Session): Command {
  const program = new Command('parley')
    .description('The Parley command line: every operation of the conversational agent service, live streams, and an interactive chat.')
    .enablePositionalOptions()
    .version(VERSION, '-V, --version')
    .addHelpText('after', OVERVIEW);
  const clientCommands = [
    conversationsCommand(session),
    sendCommand(session),
    chatCommand(session),
    completeCommand(session),
    responsesCommand(session),
    configCommand(session),
    metricsCommand(session),
    apiCommand(session),
    loginCommand(session),
    logoutCommand(session),
    // D-79: the control plane, through the admin surface (one file per group).
    adminCommand(session),
    keysCommand(session),
    auditCommand(session),
    usageCommand(session),
    appsCommand(session),
    membersCommand(session),
    webhooksCommand(session),
  ];
  for (const c of clientCommands) program.addCommand(c);
  program.addCommand(serveCommand(session));
  program.addCommand(completionCommand().action((shell: string) => completionAction(session, shell)));
  program.addCommand(dbCommand(session));
  program.addCommand(dataCommand(session));
  program.addCommand(benchCommand(session));
  program.addCommand(tapesCommand(session));
  const conformance = conformanceCommand((real, parent) => configure(real, parent, out, false), session);
  program.addCommand(conformance);

  configure(program, null, out, false);
  addGlobalOptions(program);
  for (const c of clientCommands) configure(c, program, out, true);
  // The suite's options are its own: its placeholder passes every argument through untouched.
  conformance.passThroughOptions();
  return program;
}

/** Runs the command line and resolves to the exit code; never throws. Its I/O is `io`: the process unless told otherwise. */
export async function main(argv: string[], io: CliIo = processIo()): Promise<number> {
  const out = new Output(io.stdout, io.stderr);
  const session = new Session(out, io);
  const program = buildProgram(out, session);
  // A secret given on the command line is known before anything could echo it.
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--api-key') out.addSecret(argv[i + 1]);
    else if (a.startsWith('--api-key=')) out.addSecret(a.slice('--api-key='.length));
  }
  out.addSecret(io.env.PARLEY_API_KEY);
  out.addSecret(io.env.PARLEY_ADMIN_TOKEN);
  let code: number;
  // D-64: what a shell's TAB asks; never an error, never a prompt.
  if (argv[0] === '__complete') {
    for (const c of await complete(argv.slice(1), program, session)) out.line(c);
    await session.close();
    return EXIT.ok;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    code = session.exitCode ?? EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) code = err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    else code = out.closed ? out.closedExitCode : reportError(out, err, session.json);
  } finally {
    await session.close();
  }
  // The reader left (`| head`): whatever was under way was aborted for that, not because it failed.
  return out.closed ? out.closedExitCode : code;
}

if (process.argv[1] && /cli[\\/]main\.ts$/.test(process.argv[1])) {
  process.exitCode = await main(process.argv.slice(2));
}
