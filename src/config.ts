// Configuration from flags, then environment, then defaults, as the table of src/settings.ts says;
// `--help` and the README's configuration table (`npm run docs`) are written from that table here.
import { parseArgs } from 'node:util';
import { type Config, ConfigError, type Env, SETTINGS, type Setting } from './settings.ts';

export { type Config, ConfigError, normalizeOllamaHost, parsePublicUrl } from './settings.ts';

/** Asked for with --help: not an error, but nothing to start either. */
export class HelpRequested extends Error {}

type AnySetting = Setting<unknown, string | null>;
const ROWS = Object.entries(SETTINGS) as Array<[keyof Config, AnySetting]>;

/** The flag's name without its dashes and argument (`--port <n>` → `port`). */
const flagName = (s: AnySetting) => s.flag?.slice(2).split(' ')[0];
/** A switch is a flag without an argument. */
const isSwitch = (s: AnySetting) => s.flag !== undefined && !s.flag.includes(' ');

/** What every setting is when nothing is given. */
export const DEFAULTS: Config = loadConfig([], {});

export function loadConfig(argv: string[], env: Env): Config {
  let values: Record<string, string | boolean | undefined>;
  try {
    const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' } };
    for (const [, s] of ROWS) if (s.flag) options[flagName(s)!] = { type: isSwitch(s) ? 'boolean' : 'string' };
    ({ values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  if (values.help) throw new HelpRequested(USAGE);
  const config: Record<string, unknown> = {};
  for (const [key, s] of ROWS) {
    const given = s.flag ? values[flagName(s)!] : undefined;
    if (given === true) {
      config[key] = s.switched;
      continue;
    }
    // An empty variable counts as unset (e.g. `PORT= npm start`); an empty flag value is a value.
    const fromEnv = s.env && env[s.env] !== '' ? env[s.env] : undefined;
    const text = (given as string | undefined) ?? fromEnv ?? s.default;
    config[key] = text === null ? null : s.parse(text, s.name ?? s.env ?? flagName(s)!, env);
  }
  // D-140: a replay makes no model call, so there would be nothing to record.
  if (config.recordTapes && config.replayTapes) throw new ConfigError('--record-tapes and --replay-tapes cannot be used together');
  return config as Config;
}

/** How the docs show a setting's default. */
const shownDefault = (s: AnySetting) => s.shown ?? (s.default === null ? 'none' : `\`${s.default}\``);
/** How a setting's variable is written: a switch's says what turns it on. */
const envShown = (s: AnySetting) => (s.env && isSwitch(s) ? `${s.env}=1` : s.env);

/** One setting in `--help`: its flag (or variable), then what it does, wrapped under the description's column. */
function usageLine(s: AnySetting): string {
  const head = s.flag ?? s.env!;
  // The variable and the default are kept whole on a line.
  const words = [
    ...s.help.split(' '),
    s.flag && s.env ? `[${envShown(s)}]` : '',
    isSwitch(s)
      ? ''
      : s.default !== null && s.shown === undefined
        ? `(default ${s.default})`
        : `(default: ${shownDefault(s).replace(/`/g, '')})`,
  ];
  const lines: string[] = [];
  let line = head.length < 18 ? `  ${head.padEnd(20)}` : `  ${head}  `;
  for (const word of words.filter(Boolean)) {
    if (!line.endsWith(' ') && line.length + 1 + word.length > 106) {
      lines.push(line);
      line = ' '.repeat(22);
    }
    line += line.endsWith(' ') ? word : ` ${word}`;
  }
  lines.push(line);
  return lines.join('\n');
}

export const USAGE = [
  'Usage: npm start -- [options]   (or: node --import tsx src/main.ts [options])',
  '',
  'Options (each also read from the environment variable in brackets):',
  ...ROWS.filter(([, s]) => s.flag).map(([, s]) => usageLine(s)),
  '  --help              print this and exit',
  '',
  'Read from the environment only:',
  ...ROWS.filter(([, s]) => !s.flag).map(([, s]) => usageLine(s)),
  '',
].join('\n');

/** The README's configuration table (`npm run docs`). */
export function settingsTable(): string {
  const code = (t: string | undefined) => (t ? `\`${t}\`` : '');
  const lines = ['| flag | environment | default | meaning |', '|---|---|---|---|'];
  for (const [, s] of ROWS) {
    const cells = [code(s.flag), code(envShown(s)), shownDefault(s), s.meaning.replace(/\|/g, '\\|')];
    lines.push(`|${cells.map((c) => (c ? ` ${c} ` : ' ')).join('|')}|`);
  }
  return lines.join('\n');
}
