// `parley serve`: the server, with the options of `npm start` (src/config.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import type { Session } from '../context.ts';
import { UsageError } from '../io.ts';
import { SETTINGS, type Setting } from '../../src/settings.ts';

const PACKAGE_FIXTURES = path.resolve(import.meta.dirname, '../../fixtures');

/** The fixtures `parley serve` uses: --fixtures, else FIXTURES, else ./fixtures, else the package's own. */
export function fixturesDirOf(session: Session, given: string | undefined): string {
  return given ?? (session.io.env.FIXTURES || (fs.existsSync('./fixtures') ? './fixtures' : PACKAGE_FIXTURES));
}

/**
 * D-64: where conversations go when neither --data-dir nor DATA_DIR says. `./data` in a checkout of
 * Parley (as npm start) or where a `./data` already is; anywhere else, the user's data directory
 * (`$XDG_DATA_HOME/parley`, else `~/.local/share/parley`), said on stderr: a `parley serve` run from
 * any folder must not leave a `data` folder there unnoticed.
 */
export function defaultDataDir(cwd: string, env: NodeJS.ProcessEnv): { dir: string | undefined; note?: string } {
  if (fs.existsSync(path.join(cwd, 'data'))) return { dir: undefined };
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(cwd, 'package.json'), 'utf8')) as { name?: string };
    if (pkg.name === 'parley') return { dir: undefined };
  } catch {
    // No package.json here: not a checkout.
  }
  const xdg =
    env.XDG_DATA_HOME && path.isAbsolute(env.XDG_DATA_HOME) ? env.XDG_DATA_HOME : path.join(env.HOME || os.homedir(), '.local', 'share');
  const dir = path.join(xdg, 'parley');
  return { dir, note: `data directory: ${dir} (this folder is not a Parley checkout, so not ./data; choose with --data-dir or DATA_DIR)` };
}

/** A setting's line in `parley serve --help`, from the server's table; `defaultHere` when serve's own differs. */
function serveOption(s: Setting<unknown, string | null>, defaultHere = s.default): [string, string] {
  return [s.flag!, `${s.help} (env ${s.env}${defaultHere === null ? '' : `, default ${defaultHere}`})`];
}

export function serveCommand(session: Session): Command {
  return new Command('serve')
    .description('start the Parley server (the same options and environment as npm start)')
    .option(...serveOption(SETTINGS.port))
    .option(...serveOption(SETTINGS.host))
    .option(...serveOption(SETTINGS.dataDir, './data in a checkout, else ~/.local/share/parley'))
    .option(...serveOption(SETTINGS.databaseUrl))
    .option(...serveOption(SETTINGS.fixturesDir, "./fixtures, else the package's own"))
    .option(...serveOption(SETTINGS.logLevel))
    .addHelpText(
      'after',
      '\nThe model comes from the environment, as with npm start: PARLEY_MODEL (local, or ollama:<model>) and OLLAMA_HOST.\n\nExamples:\n  parley serve --port 8787 --data-dir ./data\n  PARLEY_MODEL=ollama:llama3.2 parley serve\n',
    )
    .action(
      async (opts: { port?: string; host?: string; dataDir?: string; databaseUrl?: string; fixtures?: string; logLevel?: string }) => {
        const argv: string[] = [];
        if (opts.port !== undefined) argv.push('--port', opts.port);
        if (opts.host !== undefined) argv.push('--host', opts.host);
        if (opts.dataDir !== undefined) argv.push('--data-dir', opts.dataDir);
        else if (!session.io.env.DATA_DIR) {
          const { dir, note } = defaultDataDir(process.cwd(), session.io.env);
          if (dir !== undefined) argv.push('--data-dir', dir);
          if (note) session.out.note(note);
        }
        if (opts.databaseUrl !== undefined) argv.push('--database-url', opts.databaseUrl);
        // Run from anywhere (a global `parley`), it still finds the demo fixtures it ships with.
        const fixtures = opts.fixtures ?? (session.io.env.FIXTURES || (fs.existsSync('./fixtures') ? undefined : PACKAGE_FIXTURES));
        if (fixtures !== undefined) argv.push('--fixtures', fixtures);
        if (opts.logLevel !== undefined) argv.push('--log-level', opts.logLevel);
        // Loaded on demand: the other commands need none of the server's modules.
        const { ConfigError, loadConfig } = await import('../../src/config.ts');
        try {
          // Checked here first, so that a mistake is told in parley's words (serve() would print npm start's usage).
          loadConfig(argv, session.io.env);
        } catch (err) {
          if (err instanceof ConfigError) throw new UsageError(`${err.message} (see parley serve --help)`);
          throw err;
        }
        const { serve } = await import('../../src/main.ts');
        await serve(argv);
        // serve() returns once listening; the process then lives until SIGINT/SIGTERM.
        await new Promise<never>(() => {});
      },
    );
}
