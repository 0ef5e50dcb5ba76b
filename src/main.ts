// `npm start` / `parley serve`: start the server, print how to reach it, and shut down gracefully.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LOG_FLUSH_MS } from './app-log.ts';
import { startParley, type Parley } from './app.ts';
import { limitHeapGrowth } from './heap.ts';
import { ConfigError, HelpRequested, USAGE, loadConfig, type Config } from './config.ts';
import { startupReason } from './core/errors.ts';

export async function serve(argv: string[]): Promise<void> {
  let config: Config;
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
  let parley: Parley;
  try {
    parley = await startParley(config);
  } catch (err) {
    // A bad data dir or fixtures file, a full disk, a port in use or not ours, a host that does not
    // resolve: each is the operator's to fix, so a one-line reason rather than a stack trace.
    const reason = startupReason(err);
    if (reason !== undefined) {
      process.stderr.write(`parley: cannot start: ${reason}\n`);
      process.exit(1);
    }
    throw err;
  }
  const p = parley;
  // D-26: a shutdown always ends. Exits never wait for the log destination (abandonLog first).
  const exit = (code: number): never => {
    p.abandonLog();
    process.exit(code);
  };
  let stopping = false;
  const stop = async (signal: 'SIGINT' | 'SIGTERM') => {
    if (stopping) {
      // A second Ctrl-C or SIGTERM: the operator will not wait; the journals keep what was answered.
      exit(128 + os.constants.signals[signal]);
    }
    stopping = true;
    const deadline = setTimeout(() => {
      // Asynchronous, so that a stderr nobody reads cannot hold the exit either.
      fs.write(2, `parley: shutdown did not finish within ${SHUTDOWN_DEADLINE_MS / 1000} s; exiting\n`, () => exit(1));
      setTimeout(() => exit(1), 200);
    }, SHUTDOWN_DEADLINE_MS);
    deadline.unref();
    p.logger.info({ signal }, 'shutting down: finishing in-flight requests');
    try {
      await p.close();
    } catch (err) {
      p.logger.error({ err }, 'shutdown failed');
      await p.flushLog(LOG_FLUSH_MS);
      exit(1);
    }
    p.logger.info('stopped');
    await p.flushLog(LOG_FLUSH_MS);
    exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  // Announced only once a signal would be handled: one sent as soon as the banner is read stops gracefully.
  process.stdout.write(
    banner({
      ...config,
      baseUrl: parley.baseUrl,
      playgroundUrl: parley.playgroundUrl,
      dashboardUrl: parley.dashboardUrl,
      scenarios: parley.scenarios,
    }),
  );
  if (config.model) process.stdout.write(`  model (PARLEY_MODEL): ${config.model}${modelWhere(config)}\n`);
}

/** Where the model is reached (or the tapes it is replayed from, D-140); never the key. */
function modelWhere(c: Config): string {
  if (c.replayTapes) return ` replayed from ${c.replayTapes} (${c.tapeTiming} timing)`;
  const at = c.model!.startsWith('ollama:') ? ` at ${c.ollamaHost}` : c.model!.startsWith('openai:') ? ` at ${c.openaiBaseUrl}` : '';
  return c.recordTapes ? `${at}, recording tapes in ${c.recordTapes}` : at;
}

/** The whole shutdown: in-flight requests get the HTTP server's 10 s grace, then the stores close. */
const SHUTDOWN_DEADLINE_MS = 15_000;

/** What the banner is made of: where Parley listens, and what it uses. */
export interface BannerOf {
  baseUrl: string;
  fixturesDir: string;
  playgroundUrl: string | null;
  /** D-95: absent or null without the dashboard. */
  dashboardUrl?: string | null;
  dataDir: string;
  databaseUrl: string | null;
  /** D-65: where Parley is reached behind a proxy. */
  publicUrl?: string | null;
  /** D-122: whether the scenarios of requests are played. */
  scenarios?: boolean;
}

/**
 * D-94: names only what this process uses (the data directory, or the database by its host and name
 * without its credentials) and shows keys redacted, as a log or a screen share may keep them; the demo
 * key is written in README.md and fixtures/target.json.
 */
export function banner(o: BannerOf): string {
  const lines = [`Parley listening on ${o.baseUrl}`];
  if (o.publicUrl) lines.push(`  public URL:      ${o.publicUrl} (links, and Secure cookies when https)`);
  if (o.databaseUrl) {
    const db = new URL(o.databaseUrl);
    lines.push(`  database:        PostgreSQL at ${db.host}${db.pathname}`);
  } else lines.push(`  data directory:  ${path.resolve(o.dataDir)}`);
  if (o.scenarios !== undefined)
    lines.push(`  scenarios:       ${o.scenarios ? 'on (Parley-Scenario, docs/scenarios.md; --scenarios off to refuse them)' : 'off'}`);
  if (o.playgroundUrl) lines.push(`  widget playground: ${o.playgroundUrl}`);
  if (o.dashboardUrl) lines.push(`  dashboard:       ${o.dashboardUrl} (sign in as a member; the demo admin is in README.md)`);
  try {
    const target = JSON.parse(fs.readFileSync(path.join(o.fixturesDir, 'target.json'), 'utf8')) as { app_id?: string; api_key?: string };
    if (target.app_id) lines.push(`  demo app id:     ${target.app_id}`);
    if (target.api_key) {
      lines.push(`  demo secret key: ${redactedKey(target.api_key)} (in full in README.md and ${path.join(o.fixturesDir, 'target.json')})`);
      lines.push(`  try: curl -H "Authorization: Bearer $KEY" ${o.baseUrl}/apps/${target.app_id}/config`);
    }
  } catch {
    // Custom fixtures without a target file: nothing more to show.
  }
  return `${lines.join('\n')}\n`;
}

/** A key as it may be shown: its prefix (up to its second `_`), an ellipsis and its last four characters. */
export function redactedKey(key: string): string {
  const prefix = key.slice(0, key.indexOf('_', key.indexOf('_') + 1) + 1);
  return `${prefix}…${key.slice(-4)}`;
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('src/main.ts')) {
  await serve(process.argv.slice(2));
}
