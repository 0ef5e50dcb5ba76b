// `npm start` / `parley serve`: start the server, print how to reach it, and shut down gracefully.
import fs from 'node:fs';
import path from 'node:path';
import { startParley } from './app.ts';
import { limitHeapGrowth } from './heap.ts';
import { ConfigError, HelpRequested, USAGE, loadConfig } from './config.ts';
import { StoreError } from './store/types.ts';

export async function serve(argv: string[]): Promise<void> {
  let config;
  try {
    config = loadConfig(argv, process.env);
  } catch (err) {
    if (err instanceof HelpRequested) {
      process.stdout.write(err.message);
      process.exit(0);
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`parley: ${err.message}\n\n${USAGE}`);
      process.exit(2);
    }
    throw err;
  }
  limitHeapGrowth();
  let parley;
  try {
    parley = await startParley(config);
  } catch (err) {
    // A bad data dir or fixtures file, a port in use or not ours, a host that does not resolve:
    // each is the operator's to fix, so a one-line reason rather than a stack trace.
    if (err instanceof StoreError || typeof (err as NodeJS.ErrnoException).code === 'string') {
      process.stderr.write(`parley: cannot start: ${(err as Error).message}\n`);
      process.exit(1);
    }
    throw err;
  }
  process.stdout.write(banner(parley.baseUrl, config.fixturesDir, parley.playgroundUrl));
  if (config.model) process.stdout.write(`  model (PARLEY_MODEL): ${config.model}${config.model.startsWith('ollama:') ? ` at ${config.ollamaHost}` : ''}\n`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    parley.logger.info({ signal }, 'shutting down: finishing in-flight requests');
    try {
      await parley.close();
    } catch (err) {
      parley.logger.error({ err }, 'shutdown failed');
      process.exit(1);
    }
    parley.logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/** The demo credentials come from the fixtures' target file, the only place they are written in clear. */
function banner(baseUrl: string, fixturesDir: string, playgroundUrl: string | null): string {
  const lines = [`Parley listening on ${baseUrl}`];
  if (playgroundUrl) lines.push(`  widget playground: ${playgroundUrl}`);
  try {
    const target = JSON.parse(fs.readFileSync(path.join(fixturesDir, 'target.json'), 'utf8')) as { app_id?: string; api_key?: string };
    if (target.app_id) lines.push(`  demo app id:     ${target.app_id}`);
    if (target.api_key) lines.push(`  demo secret key: ${target.api_key}`);
    lines.push(`  try: curl -H "Authorization: Bearer ${target.api_key}" ${baseUrl}/apps/${target.app_id}/config`);
  } catch {
    // Custom fixtures without a target file: nothing more to show.
  }
  return lines.join('\n') + '\n';
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('src/main.ts')) {
  await serve(process.argv.slice(2));
}
