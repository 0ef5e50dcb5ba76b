// Terminal I/O of the CLI: its process context, redacting writers, exit codes, stdin, and the errors a user is shown.
import fs from 'node:fs/promises';
import { AbortedError, ApiError, ConnectionError, InvalidResponseError, TimeoutError } from './client.ts';

export const EXIT = { ok: 0, api: 1, usage: 2, network: 3 } as const;

/** A stream that may be a terminal (process.stdout is; a pipe or a test's capture is not). */
export type Terminal = { isTTY?: boolean; columns?: number };

/**
 * Everything the CLI takes from its process, in one place: the real process by default, a test's own
 * streams and environment when it runs `main()` in-process (several runs at once, none touching globals).
 */
export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdin: NodeJS.ReadableStream & Terminal;
  stdout: NodeJS.WritableStream & Terminal;
  stderr: NodeJS.WritableStream & Terminal;
  /** Where SIGINT arrives from. */
  signals: Pick<NodeJS.EventEmitter, 'on' | 'off'>;
}

export function processIo(): CliIo {
  return { env: process.env, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, signals: process };
}

/** A mistake in the command line or its inputs: exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A response that finished with status `failed` (D-17): exit 1, after its output was shown. */
export class FailedResponseError extends Error {
  override name = 'FailedResponseError';
  /** D-63: the request whose reply failed, when known, so that the server's log line can be found. */
  requestId: string | undefined;
}

/**
 * Both output streams, with every occurrence of the secrets replaced: the key must never be printed,
 * whatever a server echoes back into a message or a body.
 *
 * When the reader of either stream goes away (`parley … | head -1`), writing fails with EPIPE. That
 * is not an error of the command: the output stops, `closed` fires so that requests and streams are
 * aborted, and the command exits 0 (`closedExitCode`). Without a listener Node would print a stack
 * trace, which nothing redacts.
 */
export class Output {
  #secrets: string[] = [];
  /** Whether the last text written to stdout ended a line (so notes on stderr start on their own line). */
  #stdoutAtLineStart = true;
  readonly #closed = new AbortController();
  #closedBy: string | undefined;

  constructor(
    readonly stdout: CliIo['stdout'] = process.stdout,
    readonly stderr: CliIo['stderr'] = process.stderr,
  ) {
    for (const stream of [stdout, stderr]) stream.on('error', (err: NodeJS.ErrnoException) => this.#onWriteError(err));
  }

  #onWriteError(err: NodeJS.ErrnoException): void {
    // The first failure says why; the writes already queued then fail as ERR_STREAM_DESTROYED.
    this.#closedBy ??= err.code ?? 'error';
    this.#closed.abort();
  }

  /** Aborted once stdout or stderr cannot be written any more. */
  get closedSignal(): AbortSignal {
    return this.#closed.signal;
  }

  get closed(): boolean {
    return this.#closed.signal.aborted;
  }

  /** 0 when the reader left (EPIPE), as `head` users expect; 1 for any other failure to write. */
  get closedExitCode(): number {
    return this.#closedBy === 'EPIPE' ? EXIT.ok : EXIT.api;
  }

  addSecret(secret: string | undefined): void {
    // Short strings would redact ordinary words; real keys are long (D-6: 8 + 32 characters).
    if (secret && secret.length >= 8) this.#secrets.push(secret);
  }

  redact(text: string): string {
    for (const s of this.#secrets) if (text.includes(s)) text = text.split(s).join('[redacted]');
    return text;
  }

  out(text: string): void {
    if (text === '' || this.closed) return;
    this.stdout.write(this.redact(text));
    this.#stdoutAtLineStart = text.endsWith('\n');
  }

  line(text = ''): void {
    this.out(`${text}\n`);
  }

  /** Ends the current stdout line if text is pending on it. */
  endLine(): void {
    if (!this.#stdoutAtLineStart) this.out('\n');
  }

  /** A note on stderr; on a terminal showing both streams, it first ends a half-written stdout line. */
  note(text: string): void {
    if (this.closed) return;
    if (!this.#stdoutAtLineStart && this.stdout.isTTY && this.stderr.isTTY) this.endLine();
    this.stderr.write(this.redact(text.endsWith('\n') ? text : `${text}\n`));
  }

  get isTTY(): boolean {
    return Boolean(this.stdout.isTTY);
  }
}

/** What to try next, said after an error (reportError prints it as `hint: …`). */
const HINTS = new WeakMap<object, string>();

export function withHint<E>(err: E, hint: string): E {
  if (typeof err === 'object' && err !== null) HINTS.set(err, hint);
  return err;
}

/**
 * Prints an error the way the issue fixes it and returns the exit code. With `json`, a body the CLI
 * could not use is still printed when it is JSON, before the error (jq sees what the server said).
 */
export function reportError(out: Output, err: unknown, json = false): number {
  // The error ends the output: a half-written line of text ends first, also when stdout and stderr
  // go to one file (`hi` then `error: …`, not `hierror: …`).
  out.endLine();
  const code = reportWhat(out, err, json);
  const hint = typeof err === 'object' && err !== null ? HINTS.get(err) : undefined;
  if (hint) out.note(`hint: ${hint}`);
  return code;
}

function reportWhat(out: Output, err: unknown, json: boolean): number {
  if (err instanceof ApiError) {
    // D-63: with --json the error object goes to stdout too, so that a jq pipeline sees what the server said.
    if (json && err.raw.trim() !== '') {
      try {
        out.line(oneLine(err.raw));
      } catch {
        // Not JSON (a proxy's page): stdout stays JSON; the error below says what came.
      }
    }
    const extras = [err.param ? `param: ${err.param}` : '', err.code ? `code: ${err.code}` : ''].filter(Boolean).join(', ');
    out.note(`error: ${err.type} (${err.status}): ${err.message}${extras ? ` (${extras})` : ''}`);
    if (err.headers['retry-after']) out.note(`retry after ${err.headers['retry-after']} s`);
    // D-63: the id the server wrote in its log line for this request.
    if (err.requestId) out.note(`request id: ${err.requestId}`);
    return EXIT.api;
  }
  if (err instanceof TimeoutError) {
    out.note(`error: timeout: ${err.message} (${err.url})`);
    return EXIT.network;
  }
  if (err instanceof ConnectionError) {
    out.note(`error: cannot reach ${err.url}: ${err.message}`);
    return EXIT.network;
  }
  if (err instanceof InvalidResponseError) {
    if (json && err.raw !== '') {
      try {
        out.line(err.event === undefined ? oneLine(err.raw) : ndjsonLine(err.event, err.raw));
      } catch {
        // Not JSON: nothing a JSON consumer could use; the error says what is wrong.
      }
    }
    out.note(`error: invalid_response: ${err.message} (${err.url})`);
    return EXIT.api;
  }
  if (err instanceof UsageError) {
    out.note(`error: ${err.message}`);
    return EXIT.usage;
  }
  if (err instanceof FailedResponseError) {
    out.note(`error: ${err.message}`);
    if (err.requestId) out.note(`request id: ${err.requestId}`);
    return EXIT.api;
  }
  if (err instanceof AbortedError) {
    out.note('cancelled');
    return 130;
  }
  out.note(`error: ${(err as Error)?.message ?? String(err)}`);
  return EXIT.api;
}

/** Reads all of stdin as UTF-8 (for `send`, `complete` and `@-` inputs). */
export async function readStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** The text argument, or stdin when it is absent or `-`; a terminal stdin is not waited on silently. */
export async function textArgument(value: string | undefined, what: string, stdin: CliIo['stdin']): Promise<string> {
  if (value !== undefined && value !== '-') return value;
  if (stdin.isTTY) throw new UsageError(`missing ${what}: give it as an argument or pipe it on stdin`);
  // One trailing newline is how `echo` and editors end text; it is not part of the message.
  const text = (await readStdin(stdin)).replace(/\r?\n$/, '');
  if (text === '') throw new UsageError(`missing ${what}: stdin was empty`);
  return text;
}

/** Why a file could not be read, in words rather than errno codes. */
const FILE_ERRORS: Record<string, string> = { ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'it is a directory' };

/** `--metadata '{"k":"v"}'` or `--metadata @file.json` (`@-` for stdin): a JSON object. */
export async function parseMetadata(value: string | undefined, stdin: NodeJS.ReadableStream): Promise<Record<string, unknown> | undefined> {
  if (value === undefined) return undefined;
  let text = value;
  if (value.startsWith('@')) {
    const file = value.slice(1);
    try {
      text = file === '-' ? await readStdin(stdin) : await fs.readFile(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new UsageError(`--metadata: cannot read ${file}: ${(code && FILE_ERRORS[code]) ?? code ?? (err as Error).message}`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--metadata must be a JSON object or @file: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UsageError('--metadata must be a JSON object (like {"plan":"pro"})');
  return parsed as Record<string, unknown>;
}

/** One JSON document per line, as NDJSON needs; the API's own bytes when they already are one line. */
export function oneLine(raw: string): string {
  const trimmed = raw.trim();
  return trimmed.includes('\n') ? JSON.stringify(JSON.parse(trimmed)) : trimmed;
}

/**
 * The NDJSON line of one stream event: its payload, exactly when it names its event in `type` (D-16
 * does, so Parley's output is its bytes); a payload without `type` gets `"type": <event name>` first,
 * so that a line still says which event it was. Throws when the payload is not JSON.
 */
export function ndjsonLine(event: string, raw: string): string {
  const line = oneLine(raw);
  const data: unknown = JSON.parse(line);
  if (typeof data !== 'object' || data === null || Array.isArray(data) || 'type' in data) return line;
  return JSON.stringify({ type: event, ...data });
}
