// Idempotent retries (IETF httpapi Idempotency-Key draft): the first request with a key runs and its
// answer is kept for 24 h; the same key and body replays that answer (a stream as the same events),
// another body is 422, and a retry while the first still runs is 409. The policy is here; the answers
// are the backend's (IdempotencyAnswers: the data directory's hourly segments for one process, or
// PostgreSQL's rows for every instance).
//
// A stage of the request pipeline: it wraps the handler's answer after `next()` (a JSON body, or an
// EventStream whose events it records as they pass), and never touches the response object. The
// work a keyed request runs saves the request's claim (`ctx.claim`) in the same step of the store
// as itself; at start-up the claims whose answer was lost in a crash are honoured (never run twice).
import { createHash } from 'node:crypto';
import { ID_PREFIX, IDEMPOTENCY_KEY_SYNTAX, LIMITS, RESPONSE_ID_HEADER, type UnsequencedEvent } from '../contract/index.ts';
import type { RequestContext } from '../http/context.ts';
import { apiError, invalidRequest } from '../core/api-errors.ts';
import { EventStream } from '../core/answers.ts';
import { eventsOfSseText, sseText } from '../http/sse.ts';
import type { IdempotencyAnswers, KeptAnswer } from '../store/shared.ts';
import { STOPS } from '../services/send/stops.ts';

/** A recorded answer larger than this is not kept for replay (a retry is then told so, never re-run). */
const REPLAY_MAX_BYTES = 4 * 1024 * 1024;

type Done = KeptAnswer;

export class IdempotencyService {
  /** Keys whose work runs in this process. */
  private readonly running = new Set<string>();
  /** How a retry joins a running key's work, when its handler says (D-30). */
  private readonly joins = new Map<string, (retry: RequestContext) => Promise<unknown>>();
  /** Resolvers waiting for a running key to finish (see `settled`). */
  private readonly waiters = new Map<string, Array<() => void>>();
  private readonly now: () => number;

  constructor(
    private readonly answers: IdempotencyAnswers,
    private readonly opts: {
      now?: () => number;
      /** D-30: how a retry follows a response that another instance produces (the running key names it). */
      follow?: (retry: RequestContext, responseId: string) => Promise<unknown>;
    } = {},
  ) {
    this.now = opts.now ?? Date.now;
  }

  /**
   * Runs `next` under the request's Idempotency-Key, if it has one, and returns its answer (a JSON
   * body, or an EventStream recorded as it is written), or the kept answer of an earlier run.
   */
  async run(ctx: RequestContext, next: () => Promise<unknown>): Promise<unknown> {
    // Most requests carry no key: skip headersDistinct, which builds a copy of every header.
    if (ctx.req.headers['idempotency-key'] === undefined) return next();
    const clientKey = parseIdempotencyKey(ctx.req.headersDistinct['idempotency-key']);
    if (clientKey === undefined) return next();
    // The body is fingerprinted before the route validates it with its row's schema (D-118); a bad body fails as usual.
    const body = await ctx.json();
    const f = sha256(`${ctx.req.method} ${canonicalPath(ctx.req.url ?? '')}\n${canonicalJson(body ?? null)}`);
    // Keys are per app: one app can never see, or collide with, another app's answers.
    const k = sha256(`${ctx.app.id}\0${clientKey}`);

    const seen = await this.answers.begin(k, f);
    if (seen.state !== 'new' && (seen.state === 'running' ? seen.f : seen.answer.f) !== f) {
      throw apiError(
        'idempotency_key_reused',
        'This Idempotency-Key was already used with another request (a different body or endpoint). Use a new key for a new request.',
        { param: 'Idempotency-Key' },
      );
    }
    if (seen.state === 'running') {
      // D-30: joined in the process that runs it, followed from the store on another instance.
      const join = this.joins.get(k);
      if (join) return join(ctx);
      if (seen.responseId !== undefined && this.opts.follow) return this.opts.follow(ctx, seen.responseId);
      throw apiError(
        'idempotency_key_in_use',
        'A request with this Idempotency-Key is still being processed. Retry once it has finished.',
        { param: 'Idempotency-Key' },
      );
    }
    if (seen.state === 'done') return this.replay(ctx, seen.answer);

    this.running.add(k);
    ctx.claim = { key: k, fingerprint: f };
    ctx.joinable = (join, responseId) => {
      this.joins.set(k, join);
      // Until it is written, a retry on another instance is told to retry (409).
      if (responseId !== undefined)
        void this.answers
          .produces?.(k, responseId)
          .catch((err: Error) => ctx.log.warn({ err: err.message }, 'idempotency: running response not recorded'));
    };
    // Only answers of work that ran are kept: a request refused before it changed anything (400,
    // 404, …) or that failed (500, or a stream whose work could not be saved: nothing was saved)
    // releases its key and runs again when retried.
    let reply: unknown;
    try {
      reply = await next();
    } catch (err) {
      await this.finish(ctx, k, undefined);
      throw err;
    }
    if (reply instanceof EventStream) return new EventStream(this.recorded(ctx, k, f, reply), reply.outcome);
    const text = JSON.stringify(reply);
    // A JSON answer is kept before it is sent.
    await this.finish(ctx, k, { f, at: this.now(), kind: 'json', b: Buffer.byteLength(text) <= REPLAY_MAX_BYTES ? text : null });
    return reply;
  }

  /**
   * The stream's events, recorded as the writer takes them. It is settled the moment the last event
   * is taken, so that a client retrying right after it read the end gets the replay rather than a 409
   * while the handler winds down. A client that left is recorded too: the events continue to the end
   * (the reply runs on, D-34, or past the cap ends with D-19's `response.failed`), exactly as saved.
   */
  private async *recorded(ctx: RequestContext, k: string, f: string, stream: EventStream): AsyncGenerator<UnsequencedEvent> {
    const kept: UnsequencedEvent[] = [];
    let size = 0;
    let record: Done | undefined;
    try {
      for await (const e of stream.events) {
        if (size <= REPLAY_MAX_BYTES) {
          size += JSON.stringify(e.data).length + e.event.length;
          kept.push(e);
        }
        yield e;
      }
      if (stream.outcome().saved) {
        const text = size <= REPLAY_MAX_BYTES ? sseText(kept) : null;
        record = { f, at: this.now(), kind: 'sse', b: text !== null && Buffer.byteLength(text) <= REPLAY_MAX_BYTES ? text : null };
      }
    } finally {
      await this.finish(ctx, k, record);
    }
  }

  /** Ends the run of key `k`: keeps its answer (`record`), or releases the key when there is none. */
  private async finish(ctx: RequestContext, k: string, record: Done | undefined): Promise<void> {
    if (!this.running.has(k)) return;
    // A failure to keep the answer is logged, not the request's: its work is done and durable (its
    // claim with it), so a retry is answered from the claim, never runs it again.
    await this.answers.finish(k, record).catch((err: Error) => ctx.log.warn({ err: err.message }, 'idempotency record not persisted'));
    this.running.delete(k);
    this.joins.delete(k);
    for (const wake of this.waiters.get(k) ?? []) wake();
    this.waiters.delete(k);
  }

  /** Resolves once no request of `appId` runs under `clientKey` in this process (at once if none does). */
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
      const why = d.lost ? 'was lost in a crash after its work was saved' : `was larger than ${REPLAY_MAX_BYTES} bytes`;
      throw apiError(
        'idempotency_replay_unavailable',
        `The answer to this Idempotency-Key ${why} and cannot be replayed; the request was not run again.`,
        { param: 'Idempotency-Key' },
      );
    }
    if (d.kind === 'json') {
      const body = JSON.parse(d.b) as unknown;
      nameResponse(ctx, (body as { id?: unknown } | null)?.id);
      return body;
    }
    const events = eventsOfSseText(d.b);
    nameResponse(ctx, (events[0]?.data as { id?: unknown } | undefined)?.id);
    if (d.cut) events.push(...closingFailure(events));
    return new EventStream(
      (async function* () {
        yield* events;
      })(),
      () => ({ saved: true }),
    );
  }
}

/**
 * D-31: a replayed send message names its response as the first answer did. The kept answer is the
 * Response (JSON) or begins with `response.created` (SSE), whose id says so; a completion's does not.
 */
function nameResponse(ctx: RequestContext, id: unknown): void {
  if (typeof id === 'string' && id.startsWith(ID_PREFIX.response)) ctx.headers[RESPONSE_ID_HEADER] = id;
}

/**
 * The draft's syntax is an RFC 8941 sf-string (`"…"`); a bare token is accepted too, as Stripe's and
 * OpenAI's clients send it. Printable ASCII only, 1 to 255 characters, one header only.
 */
/**
 * The path as the router reads it: each segment decoded then encoded one way, so that
 * `/apps/%61pp_demo/…` and `/apps/app_demo/…` (the same resource) fingerprint alike. A plain path is
 * unchanged, so answers kept before this rule still match.
 */
function canonicalPath(url: string): string {
  const q = url.indexOf('?');
  return (q === -1 ? url : url.slice(0, q))
    .split('/')
    .map((segment) => {
      try {
        return encodeURIComponent(decodeURIComponent(segment));
      } catch {
        return segment;
      }
    })
    .join('/');
}

export function parseIdempotencyKey(values: string[] | undefined): string | undefined {
  if (values === undefined) return undefined;
  const bad = (why: string) => invalidRequest(`Idempotency-Key ${why}.`, 'Idempotency-Key', 'invalid_value');
  if (values.length !== 1) throw bad('must be sent once');
  const raw = values[0]!.trim();
  let key: string;
  const quoted = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/.exec(raw);
  if (quoted) key = quoted[1]!.replace(/\\(["\\])/g, '$1');
  else if (/^[\x21\x23-\x2b\x2d-\x7e]+$/.test(raw)) key = raw;
  else throw bad(`must be ${IDEMPOTENCY_KEY_SYNTAX}`);
  if (key.length < 1 || key.length > LIMITS.idempotencyKeyChars) throw bad(`must be ${IDEMPOTENCY_KEY_SYNTAX}`);
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

/**
 * A stream the client cut, kept by an earlier version as the events it was sent (`cut`), ends when
 * replayed the way the response was persisted: failed with `client_disconnected`.
 */
function closingFailure(events: UnsequencedEvent[]): UnsequencedEvent[] {
  if (events.some((e) => e.event === 'response.completed' || e.event === 'response.failed')) return [];
  const id = (events[0]?.data as { id?: string } | undefined)?.id;
  if (!id) return [];
  return [
    {
      event: 'response.failed',
      data: {
        id,
        status: 'failed',
        // Its fields in the order replays of it have always sent.
        error: { type: STOPS.disconnected.type, message: STOPS.disconnected.message, code: STOPS.disconnected.code },
      },
    },
  ];
}
