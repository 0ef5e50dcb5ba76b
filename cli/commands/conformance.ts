// `parley conformance …`: delegates to the conformance suite's own command (conformance/command.ts).
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { UsageError } from '../io.ts';

const MODULE = '../../conformance/command.ts';
const MODULE_PATH = fileURLToPath(new URL(MODULE, import.meta.url));

export function conformanceCommand(configure: (cmd: Command, parent: Command) => void): Command {
  const placeholder = new Command('conformance')
    .description('run the conformance suite against an implementation (see parley conformance --help)')
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .argument('[args...]')
    .addHelpText('after', '\nExample:\n  parley conformance --help\n');
  placeholder.action(async (_args: string[], _opts: unknown, cmd: Command) => {
    let mod: { conformanceCommand?: () => Command };
    try {
      mod = (await import(MODULE)) as typeof mod;
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes(`'${MODULE_PATH}'`)) {
        throw new UsageError('conformance suite not available: conformance/command.ts is missing from this installation');
      }
      throw err;
    }
    if (typeof mod.conformanceCommand !== 'function') throw new UsageError('conformance suite not available: conformance/command.ts exports no conformanceCommand()');
    const real = mod.conformanceCommand();
    // The suite's command stands in for this placeholder: same parent (for global options), same settings.
    configure(real, cmd.parent!);
    await real.parseAsync(cmd.args, { from: 'user' });
  });
  return placeholder;
}
