// `parley completion bash|zsh|fish` and the hidden `parley __complete WORDS…` the scripts call (D-64):
// candidates come from the command tree itself, and conversation ids from the server when it answers fast.
import { Command, type Option } from 'commander';
import { ParleyClient } from '../client.ts';
import { resolveGlobals, type Session } from '../context.ts';
import { UsageError } from '../io.ts';
import { readConfig } from '../profiles.ts';

/** D-64: how long a TAB may wait for the server's list of recent conversations. */
const IDS_TIMEOUT_MS = 2_000;

const SCRIPTS: Record<string, string> = {
  bash: `# parley completion for bash: eval "$(parley completion bash)" (e.g. in ~/.bashrc)
_parley() {
  local IFS=$'\\n'
  COMPREPLY=($(parley __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _parley parley
`,
  zsh: `#compdef parley
# parley completion for zsh: eval "$(parley completion zsh)" (e.g. in ~/.zshrc, after compinit)
_parley() {
  local -a candidates
  candidates=("\${(@f)$(parley __complete "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  compadd -- \${candidates:#}
}
compdef _parley parley
`,
  fish: `# parley completion for fish: parley completion fish > ~/.config/fish/completions/parley.fish
complete -c parley -f -a '(parley __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`,
};

export function completionCommand(): Command {
  return new Command('completion')
    .description('print the shell completion script (commands, options, profiles, recent conversation ids)')
    .argument('<shell>', 'bash, zsh or fish')
    .addHelpText(
      'after',
      `
Examples:
  eval "$(parley completion bash)"     # in ~/.bashrc
  eval "$(parley completion zsh)"      # in ~/.zshrc
  parley completion fish > ~/.config/fish/completions/parley.fish
`,
    );
}

export function completionAction(session: Session, shell: string): void {
  const script = SCRIPTS[shell];
  if (!script) throw new UsageError(`no completion for ${JSON.stringify(shell)}: use bash, zsh or fish`);
  session.out.out(script);
}

const visible = (c: Command) => !(c as unknown as { _hidden?: boolean })._hidden && c.name() !== 'help';
const takesValue = (o: Option) => o.required || o.optional;

/**
 * The candidates for the last of `words` (the words after `parley`, the last one being typed, maybe
 * empty): subcommands, options, an option's choices or profiles, or recent conversation ids.
 */
export async function complete(words: string[], program: Command, session: Session): Promise<string[]> {
  const cur = words.at(-1) ?? '';
  let cmd = program;
  let positional = 0;
  let pendingOption: Option | undefined;
  for (const w of words.slice(0, -1)) {
    if (pendingOption) {
      // What the line already says (--app, --profile, --base-url…) applies to the ids offered.
      cmd.setOptionValue(pendingOption.attributeName(), w);
      pendingOption = undefined;
      continue;
    }
    if (w.startsWith('-')) {
      const option = options(cmd).find((o) => o.long === w || o.short === w);
      if (option && takesValue(option)) pendingOption = option;
      continue;
    }
    const sub = cmd.commands.find((c) => c.name() === w || c.aliases().includes(w));
    if (sub && positional === 0) cmd = sub;
    else positional++;
  }
  const match = (list: string[]) => list.filter((c) => c.startsWith(cur));
  if (pendingOption) {
    if (pendingOption.argChoices) return match(pendingOption.argChoices);
    if (pendingOption.long === '--profile') return match(Object.keys(readConfig(session.io.env).profiles));
    return [];
  }
  if (cur.startsWith('-')) return match(options(cmd).flatMap((o) => (o.long ? [o.long] : [])));
  const subs = cmd.commands.filter(visible);
  if (subs.length > 0 && positional === 0) return match(subs.flatMap((c) => [c.name()]));
  const arg = (cmd as unknown as { registeredArguments: Array<{ name(): string }> }).registeredArguments[positional];
  if (arg?.name() === 'conversation_id') return match(await recentIds(cmd, session));
  if (cmd.name() === 'completion' && positional === 0) return match(Object.keys(SCRIPTS));
  return [];
}

function options(cmd: Command): Option[] {
  const all: Option[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) all.push(...(c.options as Option[]));
  return all.filter((o) => !o.hidden);
}

/** The 20 most recent conversations of the active app, or nothing: a TAB never fails or hangs. */
async function recentIds(cmd: Command, session: Session): Promise<string[]> {
  let client: ParleyClient | undefined;
  try {
    const g = resolveGlobals(cmd, session.io.env);
    if (!g.apiKey || !g.app) return [];
    client = new ParleyClient({ baseUrl: g.baseUrl, apiKey: g.apiKey, appId: g.app, timeoutMs: IDS_TIMEOUT_MS, validate: false });
    const page = await client.listConversations({ limit: 20 });
    return page.data.data.map((c) => c.id);
  } catch {
    return [];
  } finally {
    await client?.close();
  }
}
