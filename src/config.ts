// Configuration from flags, then environment, then defaults (README's configuration table).
import { parseArgs } from 'node:util';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  fixturesDir: string;
  logLevel: string;
}

export const DEFAULTS: Config = {
  host: '127.0.0.1',
  port: 8787,
  dataDir: './data',
  fixturesDir: './fixtures',
  logLevel: 'info',
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
  };
}
