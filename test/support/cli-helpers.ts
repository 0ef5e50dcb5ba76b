// Runs the `parley` CLI for the CLI tests: in this process through main() (the default), or as a real child
// process where only a process shows the behaviour (signals, closed pipes, the installed executable); and
// fakes of other implementations.
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import type { CliIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import { KEY, NO_COVERAGE } from './helpers.ts';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const BIN = path.join(ROOT, 'bin/parley.js');
export const MAIN = path.join(ROOT, 'cli/main.ts');
/** A config directory that is never created: runs see no profile unless a test sets XDG_CONFIG_HOME. */
export const NO_CONFIG_DIR = path.join(os.tmpdir(), `parley-test-no-config-${process.pid}`);

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI run: none of the caller's PARLEY_* settings, plus the given ones. */
export function cliEnv(env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PARLEY_') && k !== 'NODE_V8_COVERAGE') base[k] = v;
  // Never the user's own profiles or chat history (D-60): a config directory that does not exist, unless a test gives one.
  base.XDG_CONFIG_HOME = NO_CONFIG_DIR;
  for (const [k, v] of Object.entries(env))
    if (v === undefined) delete base[k];
    else base[k] = v;
  return base;
}

/** The environment pointing at a test server with the demo key and app. */
export function serverEnv(baseUrl: string, app = 'app_demo', extra: Record<string, string> = {}): Record<string, string> {
  return { PARLEY_BASE_URL: baseUrl, PARLEY_API_KEY: KEY, PARLEY_APP_ID: app, ...extra };
}

/**
 * How a run is made. `inline` (the default): main() in this process, with its own streams, environment and
 * signal source, so that runs may overlap. `process`: `node --import tsx cli/main.ts`; `bin`: the installed
 * bin/parley.js. A child costs a third of a CPU-second (tsx's loader), so only what needs a process uses one.
 * A `serve` that starts needs one too: the server takes over the process's signals and stdout.
 */
export type Via = 'inline' | 'process' | 'bin';

export interface CliOptions {
  env?: Record<string, string | undefined>;
  input?: string;
  via?: Via;
}

/** Starts the CLI as a child process: `via: 'bin'` runs the installed executable, otherwise `node --import tsx cli/main.ts`. */
export function spawnCli(
  args: string[],
  opts: { env?: Record<string, string | undefined>; via?: 'bin' | 'process' } = {},
): ChildProcessWithoutNullStreams {
  const entry = opts.via === 'bin' ? [BIN] : ['--import', 'tsx', MAIN];
  return spawn(process.execPath, [...entry, ...args], { cwd: ROOT, env: { ...cliEnv(opts.env), ...NO_COVERAGE }, stdio: 'pipe' });
}

/** A stream that keeps what is written to it, as a pipe would pass it on (not a terminal). */
export class Capture extends Writable {
  text = '';
  constructor() {
    super({ decodeStrings: false });
  }
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

/** Runs the CLI to the end, with `input` on stdin (stdin is closed either way). */
export async function runCli(args: string[], opts: CliOptions = {}): Promise<CliResult> {
  if (opts.via === 'process' || opts.via === 'bin') {
    const child = spawnCli(args, { env: opts.env, via: opts.via });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdin.end(opts.input ?? '');
    const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
    return { code, signal, stdout, stderr };
  }
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await inline(main(args, inlineIo(opts, stdout, stderr)));
  return { code, signal: null, stdout: stdout.text, stderr: stderr.text };
}

/** An in-process run's exit code; it must come from main() alone, never from the process-wide exit code other runs share. */
async function inline(run: Promise<number>): Promise<number> {
  const code = await run;
  assert.equal(process.exitCode, undefined, 'an in-process run of the CLI set process.exitCode');
  return code;
}

/** An in-process run whose output can be watched while it runs (`waitFor`); `done` when main() returns. */
export function startCli(args: string[], opts: CliOptions = {}): { stdout: PassThrough; stderr: PassThrough; done: Promise<CliResult> } {
  const stdout = new PassThrough({ encoding: 'utf8' });
  const stderr = new PassThrough({ encoding: 'utf8' });
  let out = '';
  let err = '';
  stdout.on('data', (d: string) => (out += d));
  stderr.on('data', (d: string) => (err += d));
  const done = inline(main(args, inlineIo(opts, stdout, stderr)))
    .then((code) => ({ code, signal: null, stdout: out, stderr: err }))
    .finally(() => {
      // Whoever waits for more output learns that there is none.
      stdout.end();
      stderr.end();
    });
  return { stdout, stderr, done };
}

/** The I/O of an in-process run: the environment a child would get, `input` as a piped stdin, SIGINT from nowhere. */
export function inlineIo(opts: CliOptions, stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream): CliIo {
  return { env: cliEnv(opts.env), stdin: Readable.from(opts.input ? [opts.input] : []), stdout, stderr, signals: new EventEmitter() };
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
  headers: http.IncomingHttpHeaders;
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
      const r = { method: req.method!, path: req.url!.replace(/^\/v1/, ''), body, json, headers: req.headers };
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

/** main() at a terminal (stdin and stderr say isTTY), typing `typed` once it asks its [y/N] question. */
export async function atTerminal(
  args: string[],
  typed: string,
  env: Record<string, string | undefined>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdin = Object.assign(new PassThrough(), { isTTY: true });
  const stdout = new Capture();
  const stderr = Object.assign(new Capture(), { isTTY: true });
  const write = stderr.write.bind(stderr);
  let asked = false;
  stderr.write = ((chunk: string, ...rest: never[]) => {
    if (!asked && String(chunk).includes('[y/N]')) {
      asked = true;
      setImmediate(() => stdin.end(typed));
    }
    return write(chunk, ...rest);
  }) as typeof stderr.write;
  const code = await main(args, { env: cliEnv(env), stdin, stdout, stderr, signals: new EventEmitter() });
  if (!asked) stdin.end();
  return { code, stdout: stdout.text, stderr: stderr.text };
}
