// Configuration from flags, then environment, then defaults (README's configuration table).
import { parseArgs } from 'node:util';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  fixturesDir: string;
  logLevel: string;
  /** PARLEY_MODEL: `local` or `ollama:<model>` for every app; null keeps each app's `agent.model`. */
  model: string | null;
  /** OLLAMA_HOST: where the Ollama engine finds Ollama. */
  ollamaHost: string;
}

export const DEFAULTS: Config = {
  host: '127.0.0.1',
  port: 8787,
  dataDir: './data',
  fixturesDir: './fixtures',
  logLevel: 'info',
  model: null,
  ollamaHost: 'http://127.0.0.1:11434',
};

export class ConfigError extends Error {}

export function loadConfig(argv: string[], env: NodeJS.ProcessEnv): Config {
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'data-dir': { type: 'string' },
        fixtures: { type: 'string' },
        'log-level': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }) as { values: Record<string, string | undefined> });
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const portText = values.port ?? env.PORT ?? String(DEFAULTS.port);
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) throw new ConfigError(`port must be an integer from 0 to 65535 (got ${JSON.stringify(portText)})`);
  const logLevel = values['log-level'] ?? env.LOG_LEVEL ?? DEFAULTS.logLevel;
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got ${JSON.stringify(logLevel)})`);
  }
  return {
    host: values.host ?? env.HOST ?? DEFAULTS.host,
    port,
    dataDir: values['data-dir'] ?? env.DATA_DIR ?? DEFAULTS.dataDir,
    fixturesDir: values.fixtures ?? env.FIXTURES ?? DEFAULTS.fixturesDir,
    logLevel,
    model: env.PARLEY_MODEL || DEFAULTS.model,
    ollamaHost: normalizeOllamaHost(env.OLLAMA_HOST || DEFAULTS.ollamaHost),
  };
}

/** OLLAMA_HOST as Ollama's own CLI accepts it: `host`, `host:port` or a URL. */
export function normalizeOllamaHost(v: string): string {
  const withScheme = /^https?:\/\//.test(v) ? v : `http://${v}`;
  const url = new URL(withScheme);
  if (!url.port && !/^https?:\/\/[^/]+:\d+/.test(withScheme)) url.port = url.protocol === 'https:' ? '443' : '11434';
  return url.origin;
}
