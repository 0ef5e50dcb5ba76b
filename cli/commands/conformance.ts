// `parley conformance …`: delegates to the conformance suite's own command (conformance/command.ts).
import fs from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { parseSeconds, type Session } from '../context.ts';
import { UsageError } from '../io.ts';
import { activeProfile } from '../profiles.ts';

// The suite ships with the package; an installation trimmed of conformance/ answers a usage error.
const MODULE_PATH = fileURLToPath(new URL('../../conformance/command.ts', import.meta.url));

const HELP = `
Base URL and key: the suite's own --base-url and --api-key win; then parley's global ones (given
before \`conformance\`); then the target file. PARLEY_BASE_URL / PARLEY_API_KEY only fill in what the
target file leaves out (a key kept out of a committed target file, say): an exported variable never
redirects a target that names its own base_url.
Timeout: the suite's --timeout is in milliseconds (default 30000). When it is not given, parley's
global --timeout (before \`conformance\`) or PARLEY_TIMEOUT applies, in seconds as for every command.

Examples:
  parley conformance --target fixtures/target.json
  parley conformance --target vendor.json --profile reference --reporter junit --out report.xml
  parley conformance --target vendor.json --expected-failures baseline.txt --reporter html --out report.html
  parley --base-url http://127.0.0.1:9000/v1 conformance --target fixtures/target.json --only 'S4.2-*' --timeout 5000
`;

/** Whether the suite's own arguments set `flag` (`--flag value` or `--flag=value`). */
function given(args: string[], flag: string): boolean {
  return args.some((a) => a === flag || a.startsWith(`${flag}=`));
}

/** The value of `flag` in the suite's arguments (`--flag value` or `--flag=value`). */
function flagValue(args: string[], flag: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === flag) return args[i + 1];
    if (args[i]!.startsWith(`${flag}=`)) return args[i]!.slice(flag.length + 1);
  }
  return undefined;
}

/** Whether something listens at the URL's host and port (a TCP connection within 2 s). */
function reachable(url: string): Promise<boolean> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return Promise.resolve(true); // Not a URL: the suite says what is wrong with it.
  }
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname.replace(/^\[|\]$/g, ''), port, timeout: 2_000 });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

/**
 * D-64: when the target file's base_url cannot be reached but PARLEY_BASE_URL or the active profile
 * names another one, the run says which to use: those never redirect a target on their own (above).
 */
export async function baseUrlHint(args: string[], env: NodeJS.ProcessEnv, profileFlag: string | undefined): Promise<string | undefined> {
  if (given(args, '--base-url')) return undefined;
  const file = flagValue(args, '--target');
  if (!file) return undefined;
  let targetUrl: unknown;
  try {
    targetUrl = (JSON.parse(fs.readFileSync(file, 'utf8')) as { base_url?: unknown }).base_url;
  } catch {
    return undefined;
  }
  if (typeof targetUrl !== 'string' || targetUrl === '') return undefined;
  const candidates: Array<[string, string]> = [];
  if (env.PARLEY_BASE_URL) candidates.push(['PARLEY_BASE_URL', env.PARLEY_BASE_URL]);
  try {
    const profile = activeProfile(profileFlag, env);
    if (profile?.base_url) candidates.push(['your parley login profile', profile.base_url]);
  } catch {
    // A broken config file is not this run's business.
  }
  const other = candidates.find(([, url]) => url.replace(/\/+$/, '') !== targetUrl.replace(/\/+$/, ''));
  if (!other || (await reachable(targetUrl))) return undefined;
  return `conformance: the target's base_url ${targetUrl} cannot be reached, and ${other[0]} is ${other[1]}: to test that one, run parley conformance --base-url ${other[1]} … (the target file's base_url wins otherwise)`;
}

/** The keys the target file sets; none when it cannot be read (the suite then says why). */
function targetKeys(args: string[]): Set<string> {
  const file = flagValue(args, '--target');
  if (!file) return new Set();
  try {
    const json = JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
    return new Set(typeof json === 'object' && json !== null ? Object.keys(json).filter((k) => (json as Record<string, unknown>)[k]) : []);
  } catch {
    return new Set();
  }
}

/**
 * The suite's arguments, with parley's global options added where the suite's own are absent
 * (target.md: a command-line --base-url overrides the target's base_url), and PARLEY_* variables
 * only where the target file leaves the value out: a variable exported for everyday use must not
 * send a run meant for another implementation's target elsewhere, or with another key. A note on
 * stderr says where a value came from.
 */
export function suiteArguments(
  args: string[],
  globals: { baseUrl?: string; apiKey?: string; timeout?: string },
  env: NodeJS.ProcessEnv,
  note: (s: string) => void,
): string[] {
  const extra: string[] = [];
  const sources: string[] = [];
  const inTarget = targetKeys(args);
  const pass = (
    flag: string,
    global: string | undefined,
    variable: string,
    value: (v: string) => string = (v) => v,
    targetKey?: string,
  ) => {
    const fromEnv = targetKey !== undefined && inTarget.has(targetKey) ? undefined : env[variable] || undefined;
    const v = global ?? fromEnv;
    if (v === undefined || given(args, flag)) return;
    extra.push(flag, value(v));
    sources.push(`${flag} from ${global !== undefined ? `parley ${flag}` : variable}`);
  };
  pass('--base-url', globals.baseUrl, 'PARLEY_BASE_URL', undefined, 'base_url');
  pass('--api-key', globals.apiKey, 'PARLEY_API_KEY', undefined, 'api_key');
  pass('--timeout', globals.timeout, 'PARLEY_TIMEOUT', (s) => String(Math.max(1, Math.round(parseSeconds(s) * 1000))));
  if (sources.length > 0 && !given(args, '--help') && !given(args, '-h'))
    note(`conformance: ${sources.join(', ')} (the suite's own options win)`);
  return [...extra, ...args];
}

export function conformanceCommand(configure: (cmd: Command, parent: Command) => void, session: Session): Command {
  const out = session.out;
  const placeholder = new Command('conformance')
    .description('run the conformance suite against an implementation (see parley conformance --help)')
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .addHelpText('after', '\nExample:\n  parley conformance --help\n');
  placeholder.action(async (_args: string[], _opts: unknown, cmd: Command) => {
    type Io = { out(line: string): void; err(line: string): void };
    let mod: {
      conformanceCommand?: (io?: Io) => Command;
      conformanceAction?: (opts: Record<string, unknown>, io?: Io) => Promise<number>;
      clientAction?: (opts: Record<string, unknown>, io: Io) => Promise<number>;
    };
    try {
      mod = (await import('../../conformance/command.ts')) as unknown as typeof mod;
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes(`'${MODULE_PATH}'`)) {
        throw new UsageError('conformance suite not available: conformance/command.ts is missing from this installation');
      }
      throw err;
    }
    const { conformanceCommand: suiteCommand, conformanceAction } = mod;
    if (typeof suiteCommand !== 'function' || typeof conformanceAction !== 'function')
      throw new UsageError(
        'conformance suite not available: conformance/command.ts must export conformanceCommand() and conformanceAction()',
      );
    // Its lines go through parley's Output: redacted like everything parley prints, and silent once the reader left.
    const io: Io = { out: (l) => out.line(l), err: (l) => out.note(l) };
    const real = suiteCommand(io).addHelpText('after', HELP);
    // Its verdict becomes parley's exit code (its own action would set process.exitCode, a global).
    real.action(async (opts: Record<string, unknown>) => {
      session.exitCode = await conformanceAction(opts, io);
    });
    // The client kit (`parley conformance client`) likewise.
    const { clientAction } = mod;
    real.commands
      .find((c) => c.name() === 'client')
      ?.action(async (opts: Record<string, unknown>) => {
        session.exitCode = await clientAction!(opts, io);
      });
    // The suite's command stands in for this placeholder: same parent (for global options), same settings.
    const parent = cmd.parent!;
    configure(real, parent);
    const args = suiteArguments(cmd.args, parent.opts(), session.io.env, (s) => out.note(s));
    const hint =
      given(args, '--help') || given(args, '-h')
        ? undefined
        : await baseUrlHint(args, session.io.env, parent.opts().profile as string | undefined);
    if (hint) out.note(hint);
    await real.parseAsync(args, { from: 'user' });
  });
  return placeholder;
}
