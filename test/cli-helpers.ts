// Runs the `parley` CLI as a real child process (through tsx), for the CLI tests.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { once } from 'node:events';
import { KEY } from './helpers.ts';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const BIN = path.join(ROOT, 'bin/parley.js');
export const MAIN = path.join(ROOT, 'cli/main.ts');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI run: none of the caller's PARLEY_* settings, plus the given ones. */
export function cliEnv(env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PARLEY_')) base[k] = v;
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete base[k];
  else base[k] = v;
  return base;
}

/** The environment pointing at a test server with the demo key and app. */
export function serverEnv(baseUrl: string, app = 'app_demo', extra: Record<string, string> = {}): Record<string, string> {
  return { PARLEY_BASE_URL: baseUrl, PARLEY_API_KEY: KEY, PARLEY_APP_ID: app, ...extra };
}

/** Starts the CLI; `via: 'bin'` runs the installed executable, otherwise `node --import tsx cli/main.ts`. */
export function spawnCli(args: string[], opts: { env?: Record<string, string | undefined>; via?: 'bin' | 'main'; cwd?: string } = {}): ChildProcessWithoutNullStreams {
  const entry = opts.via === 'bin' ? [BIN] : ['--import', 'tsx', MAIN];
  return spawn(process.execPath, [...entry, ...args], { cwd: opts.cwd ?? ROOT, env: cliEnv(opts.env), stdio: 'pipe' });
}

/** Runs the CLI to the end, with `input` on stdin (stdin is closed either way). */
export async function runCli(args: string[], opts: { env?: Record<string, string | undefined>; input?: string; via?: 'bin' | 'main'; cwd?: string } = {}): Promise<CliResult> {
  const child = spawnCli(args, opts);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdin.end(opts.input ?? '');
  const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
  return { code, signal, stdout, stderr };
}

/** Collects a stream's text and resolves when it first matches `re` (rejects if the stream ends first). */
export function waitFor(stream: NodeJS.ReadableStream, re: RegExp, seen: { text: string } = { text: '' }): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (re.test(seen.text)) {
        cleanup();
        resolve(seen.text);
      }
    };
    const onData = (d: Buffer | string) => {
      seen.text += d.toString();
      check();
    };
    const onEnd = () => {
      cleanup();
      reject(new Error(`stream ended before ${re}: ${JSON.stringify(seen.text)}`));
    };
    const cleanup = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
    };
    stream.on('data', onData);
    stream.on('end', onEnd);
    check();
  });
}
