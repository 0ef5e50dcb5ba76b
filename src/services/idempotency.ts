// Idempotent retries (IETF httpapi Idempotency-Key draft): the first request with a key runs and its
// answer is kept for 24 h; the same key and body replays that answer (a stream as the same events),
// another body is 422, and a retry while the first still runs is 409. Kept in hourly journal segments
// in the data directory: expiry deletes whole old segments, nothing is ever rewritten.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import type { Logger } from 'pino';
import type { RequestContext } from '../http/context.ts';
import { readJsonBody } from '../http/body.ts';
import { ApiError, invalidRequest } from '../http/errors.ts';
import { writeSseHead } from '../http/sse.ts';
import { Journal } from '../store/journal.ts';

const HOUR = 3_600_000;
/** How long a key is remembered (published in docs/reliability.md, as the draft asks). */
export const IDEMPOTENCY_TTL_MS = 24 * HOUR;
/** Longest key accepted; the draft recommends UUIDs (36 characters). */
export const IDEMPOTENCY_KEY_MAX = 255;
/** A recorded answer larger than this is not kept for replay (a retry is then told so, never re-run). */
export const REPLAY_MAX_BYTES = 4 * 1024 * 1024;
/**
 * Answers held in memory, all keys together. Past it the oldest answers are let go (their keys still
 * refuse to run twice: a retry gets 409 idempotency_replay_unavailable), so memory stays bounded
 * whatever a day's traffic.
 */
export const REPLAY_MEMORY_BYTES = 64 * 1024 * 1024;

/** Answers sent but not to be kept (see doNotKeep). */
const unkept = new WeakSet<ServerResponse>();

/**
 * The answer being written to `res` reports a failure to save (a stream's 200 was sent before the
 * save failed): like a 500, it is not kept, so a retry with the same key runs again.
 */
export function doNotKeep(res: ServerResponse): void {
  unkept.add(res);
}

interface Done {
  /** Hash of method, path and canonical body: what "the same request" means. */
  f: string;
  at: number;
  kind: 'json' | 'sse';
  /** The answer's body (JSON text, or the SSE stream's text); null when too large to keep. */
  b: string | null;
  /** The stream was cut by the client before its last event (D-19). */
  cut?: boolean;
}
type Line = Done & { k: string };

export interface IdempotencyOptions {
  /** `<data dir>/idempotency` */
  dir: string;
  /** Memory for answers (default REPLAY_MEMORY_BYTES). */
  memoryBytes?: number;
  logger?: Logger;
  now?: () => number;
}

export class IdempotencyService {
  private readonly done = new Map<string, Done>();
  private readonly running = new Map<string, string>();
  /** Resolvers waiting for a running key to finish (see `settled`). */
  private readonly waiters = new Map<string, Array<() => void>>();
  private readonly now: () => number;
  private segment: { hour: number; journal: Journal } | undefined;
  private rotating: Promise<void> = Promise.resolve();
  private held = 0;

  private constructor(private readonly opts: IdempotencyOptions) {
    this.now = opts.now ?? Date.now;
  }

  static async open(opts: IdempotencyOptions): Promise<IdempotencyService> {
    const svc = new IdempotencyService(opts);
    await fs.mkdir(opts.dir, { recursive: true });
    const oldest = svc.hourOf(svc.now() - IDEMPOTENCY_TTL_MS);
    for (const name of (await fs.readdir(opts.dir)).sort()) {
      const hour = Number(name.replace(/\.jsonl$/, ''));
      if (!/^\d+\.jsonl$/.test(name)) continue;
      const file = path.join(opts.dir, name);
      if (hour < oldest) {
        await fs.rm(file, { force: true });
        continue;
      }
      const journal = new Journal(file);
      // A damaged line in a cache of answers is not worth refusing to start for: skip it.
      await journal
        .open((e) => {
          const line = e as Line;
          if (typeof line?.k === 'string' && typeof line.f === 'string' && typeof line.at === 'number') {
            svc.remember(line.k, { f: line.f, at: line.at, kind: line.kind, b: line.b, cut: line.cut });
          }
        })
        .catch((err: Error) => opts.logger?.warn({ file, err: err.message }, 'idempotency segment unreadable; its keys are forgotten'));
      await journal.close();
    }
    return svc;
  }

  /** Keeps an answer, letting the oldest bodies go past the memory budget (their keys stay). */
  private remember(k: string, d: Done): void {
    const prev = this.done.get(k);
    if (prev?.b) this.held -= prev.b.length;
    this.done.delete(k); // re-inserted last: the map iterates oldest first
    this.done.set(k, d);
    if (d.b) this.held += d.b.length;
    const budget = this.opts.memoryBytes ?? REPLAY_MEMORY_BYTES;
    for (const old of this.done.values()) {
      if (this.held <= budget) break;
      if (old.b) {
        this.held -= old.b.length;
        old.b = null;
      }
    }
  }

  private hourOf(t: number): number {
    return Math.floor(t / HOUR);
  }

  /** Appends to the current hour's segment, opening the next and dropping expired ones as hours pass. */
  private async persist(line: Line): Promise<void> {
    const hour = this.hourOf(line.at);
    if (this.segment?.hour !== hour) {
      // A failed rotation (full disk) must not block every later one.
      this.rotating = this.rotating.catch(() => {}).then(async () => {
        if (this.segment?.hour === hour) return;
        const previous = this.segment;
        const journal = new Journal(path.join(this.opts.dir, `${hour}.jsonl`));
        await journal.open(() => {});
        this.segment = { hour, journal };
        await previous?.journal.close();
        await this.expire();
      });
    }
    await this.rotating;
    if (this.segment?.hour !== hour) throw new Error(`idempotency segment ${hour} could not be opened`);
    await this.segment.journal.append(line);
  }

  private async expire(): Promise<void> {
    const cutoff = this.now() - IDEMPOTENCY_TTL_MS;
    for (const [k, d] of this.done) {
      if (d.at > cutoff) continue;
      if (d.b) this.held -= d.b.length;
      this.done.delete(k);
    }
    const oldest = this.hourOf(cutoff);
    for (const name of await fs.readdir(this.opts.dir)) {
      if (/^\d+\.jsonl$/.test(name) && Number(name.slice(0, -6)) < oldest) await fs.rm(path.join(this.opts.dir, name), { force: true });
    }
  }

  async close(): Promise<void> {
    await this.rotating.catch(() => {});
    await this.segment?.journal.close();
  }

  /**
   * Runs `next` under the request's Idempotency-Key, if it has one. Returns what `next` returns (the
   * JSON body), or undefined when the answer was written here or by `next` itself (SSE).
   */
  async run(ctx: RequestContext, next: () => Promise<unknown>): Promise<unknown> {
    // Most requests carry no key: skip headersDistinct, which builds a copy of every header.
    if (ctx.req.headers['idempotency-key'] === undefined) return next();
    const clientKey = parseIdempotencyKey(ctx.req.headersDistinct['idempotency-key']);
    if (clientKey === undefined) return next();
    // The body is read (and cached for the handler) to fingerprint it; a bad body fails as usual.
    const body = await readJsonBody(ctx.req);
    const path = (ctx.req.url ?? '').split('?')[0];
    const f = sha256(`${ctx.req.method} ${path}\n${canonicalJson(body ?? null)}`);
    // Keys are per app: one app can never see, or collide with, another app's answers.
    const k = sha256(`${ctx.app.id}\0${clientKey}`);

    const seen = this.done.get(k);
    const fresh = seen && seen.at > this.now() - IDEMPOTENCY_TTL_MS ? seen : undefined;
    const runningWith = this.running.get(k);
    if ((fresh && fresh.f !== f) || (runningWith !== undefined && runningWith !== f)) {
      throw new ApiError(422, 'invalid_request_error', 'This Idempotency-Key was already used with another request (a different body or endpoint). Use a new key for a new request.', {
        param: 'Idempotency-Key',
        code: 'idempotency_key_reused',
      });
    }
    if (runningWith !== undefined) {
      throw new ApiError(409, 'invalid_request_error', 'A request with this Idempotency-Key is still being processed. Retry once it has finished.', {
        param: 'Idempotency-Key',
        code: 'idempotency_key_in_use',
        headers: { 'retry-after': '1' },
      });
    }
    if (fresh) return this.replay(ctx, fresh);

    this.running.set(k, f);
    let finished = false;
    // Only answers of work that ran are kept: a request refused before it changed anything (400,
    // 404, …) or that failed (500, or a stream whose exchange could not be saved: nothing was saved)
    // releases its key and runs again when retried.
    const finish = async (record: Done | undefined): Promise<void> => {
      if (finished) return;
      finished = true;
      capture.stop();
      if (unkept.has(ctx.res)) record = undefined;
      if (record) this.remember(k, record);
      this.running.delete(k);
      for (const wake of this.waiters.get(k) ?? []) wake();
      this.waiters.delete(k);
      // Kept in memory even if the disk refuses: the work is done and durable, and retries in this
      // process must not repeat it.
      if (record) await this.persist({ k, ...record }).catch((err: Error) => ctx.log.warn({ err: err.message }, 'idempotency record not persisted'));
    };
    const isStream = () => ctx.res.statusCode === 200 && String(ctx.res.getHeader('content-type') ?? '').startsWith('text/event-stream');
    const streamRecord = (): Done => ({ f, at: this.now(), kind: 'sse', b: capture.overflow ? null : capture.text(), cut: !ctx.res.writableEnded || undefined });
    // A stream is settled the moment it ends, so that a client retrying right after it read the end
    // gets the replay rather than a 409 while the handler winds down.
    const capture = captureBody(ctx.res, () => {
      if (isStream()) void finish(streamRecord());
    });
    try {
      const result = await next();
      if (result !== undefined) {
        const text = JSON.stringify(result);
        await finish({ f, at: this.now(), kind: 'json', b: Buffer.byteLength(text) <= REPLAY_MAX_BYTES ? text : null });
      } else if (isStream()) {
        await finish(streamRecord()); // cut by the client: its end was never written
      }
      return result;
    } finally {
      await finish(undefined);
    }
  }

  /** Resolves once no request of `appId` runs under `clientKey` (at once if none does). */
  settled(appId: string, clientKey: string): Promise<void> {
    const k = sha256(`${appId}\0${clientKey}`);
    if (!this.running.has(k)) return Promise.resolve();
    return new Promise((resolve) => {
      const list = this.waiters.get(k) ?? [];
      list.push(resolve);
      this.waiters.set(k, list);
    });
  }

  private replay(ctx: RequestContext, d: Done): unknown {
    ctx.headers['idempotent-replayed'] = 'true';
    if (d.b === null) {
      throw new ApiError(409, 'invalid_request_error', `The answer to this Idempotency-Key was larger than ${REPLAY_MAX_BYTES} bytes and cannot be replayed; the request was not run again.`, {
        param: 'Idempotency-Key',
        code: 'idempotency_replay_unavailable',
      });
    }
    if (d.kind === 'json') return JSON.parse(d.b);
    const res = ctx.res;
    writeSseHead(res, ctx.headers);
    res.end(d.b + (d.cut ? closingFailure(d.b) : ''));
    return undefined;
  }
}

/**
 * The draft's syntax is an RFC 8941 sf-string (`"…"`); a bare token is accepted too, as Stripe's and
 * OpenAI's clients send it. Printable ASCII only, 1 to 255 characters, one header only.
 */
export function parseIdempotencyKey(values: string[] | undefined): string | undefined {
  if (values === undefined) return undefined;
  const bad = (why: string) => invalidRequest(`Idempotency-Key ${why}.`, 'Idempotency-Key', 'invalid_value');
  if (values.length !== 1) throw bad('must be sent once');
  const raw = values[0]!.trim();
  let key: string;
  const quoted = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/.exec(raw);
  if (quoted) key = quoted[1]!.replace(/\\(["\\])/g, '$1');
  else if (/^[\x21\x23-\x2b\x2d-\x7e]+$/.test(raw)) key = raw;
  else throw bad('must be a quoted string of printable ASCII characters, e.g. "8e03978e-40d5-43e8-bc93-6894a57f9324"');
  if (key.length < 1 || key.length > IDEMPOTENCY_KEY_MAX) throw bad(`must be 1 to ${IDEMPOTENCY_KEY_MAX} characters long`);
  return key;
}

function sha256(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('base64url');
}

/** JSON with sorted keys: the same value gives the same text, whatever the key order or spacing. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
}

/** Records what a handler writes to `res` itself (an SSE stream), up to REPLAY_MAX_BYTES. */
function captureBody(res: ServerResponse, onEnd: () => void): { text(): string; overflow: boolean; stop(): void } {
  const chunks: Buffer[] = [];
  let size = 0;
  const state = { overflow: false };
  const write = res.write;
  const end = res.end;
  const keep = (chunk: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function' || state.overflow) return;
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > REPLAY_MAX_BYTES) {
      state.overflow = true;
      chunks.length = 0;
    } else {
      chunks.push(buf);
    }
  };
  res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
    keep(chunk);
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as ServerResponse['write'];
  res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
    keep(chunk);
    const out = (end as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
    onEnd();
    return out;
  } as ServerResponse['end'];
  return {
    text: () => Buffer.concat(chunks).toString('utf8'),
    get overflow() {
      return state.overflow;
    },
    stop: () => {
      res.write = write;
      res.end = end;
    },
  };
}

/**
 * A stream the client cut (D-19) ends, when replayed, the way the response was persisted: failed with
 * `client_disconnected`, after the events that were sent.
 */
function closingFailure(text: string): string {
  if (/^event: response\.(completed|failed)$/m.test(text)) return '';
  const datas = [...text.matchAll(/^data: (.*)$/gm)].map((m) => {
    try {
      return JSON.parse(m[1]!) as { id?: string; sequence_number?: number };
    } catch {
      return {};
    }
  });
  const id = datas[0]?.id;
  if (!id) return '';
  const sequence = (datas.at(-1)?.sequence_number ?? -1) + 1;
  const data = {
    type: 'response.failed',
    sequence_number: sequence,
    id,
    status: 'failed',
    error: { type: 'request_aborted', message: 'The client disconnected before the response was complete.', code: 'client_disconnected' },
  };
  return `event: response.failed\ndata: ${JSON.stringify(data)}\n\n`;
}
