// Runs the `parley` CLI as a real child process (through tsx), for the CLI tests, and fakes of other implementations.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { once } from 'node:events';
import { KEY } from './helpers.ts';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const BIN = path.join(ROOT, 'bin/parley.js');
export const MAIN = path.join(ROOT, 'cli/main.ts');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment of a CLI run: none of the caller's PARLEY_* settings, plus the given ones. Coverage is
 * measured over src/ only, so a CLI child writes none (it would cost every run seconds for nothing).
 */
export function cliEnv(env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PARLEY_') && k !== 'NODE_V8_COVERAGE') base[k] = v;
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

/** A request a fake implementation received. */
export interface FakeRequest {
  method: string;
  /** Below `/v1`, with the query: `/apps/app_x/conversations?limit=2`. */
  path: string;
  body: string;
  json: any;
}

export interface FakeApi {
  baseUrl: string;
  /** The environment pointing the CLI at it (app `app_x`). */
  env: Record<string, string>;
  requests: FakeRequest[];
  /** The handler of the next requests (replaces the previous one). */
  handle(fn: (req: FakeRequest, res: http.ServerResponse) => void): void;
  close(): Promise<void>;
}

export const FAKE_KEY = 'sk_live_fake_0123456789abcdef0123456789abcdef';

/** Another implementation of the interface on loopback: each test scripts its answers, requests are recorded. */
export async function startFakeApi(): Promise<FakeApi> {
  let handler: (req: FakeRequest, res: http.ServerResponse) => void = (_req, res) => res.writeHead(404).end();
  const requests: FakeRequest[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => {
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        // No body, or not JSON.
      }
      const r = { method: req.method!, path: req.url!.replace(/^\/v1/, ''), body, json };
      requests.push(r);
      handler(r, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return {
    baseUrl,
    env: { PARLEY_BASE_URL: baseUrl, PARLEY_API_KEY: FAKE_KEY, PARLEY_APP_ID: 'app_x' },
    requests,
    handle: (fn) => (handler = fn),
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Answers with a JSON body, byte for byte as given. */
export function sendJson(res: http.ServerResponse, body: string | object, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/** One SSE event, as `event:` and `data:` lines (§6). */
export function sseEvent(event: string, data: object | string): string {
  return `event: ${event}\ndata: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}
