// Building blocks the cases share: the run's baseline requests (each negative case changes one thing
// in one of them), tagged creation, sized payloads, and the analysis of an SSE stream.
import type { z } from 'zod';
import type * as C from '../../src/contract/index.ts';
import type { CaseContext } from '../context.ts';
import type { Exchange, OutgoingRequest } from '../http.ts';
import { HOSTILE_TEXT } from '../text.ts';

export { HOSTILE_TEXT };

export type ConversationT = z.infer<typeof C.Conversation>;

export const convPath = (app: string, id?: string) =>
  `/apps/${encodeURIComponent(app)}/conversations${id === undefined ? '' : `/${encodeURIComponent(id)}`}`;
export const appPath = (app: string, rest: string) => `/apps/${encodeURIComponent(app)}/${rest}`;

/** Creates a conversation (tagged unless the case says otherwise) and schedules its deletion. */
export async function createConversation(
  ctx: CaseContext,
  body: Record<string, unknown> | undefined = undefined,
  app = ctx.target.appId,
): Promise<{ ex: Exchange; conv: ConversationT }> {
  const ex = await ctx.send({
    method: 'POST',
    path: convPath(app),
    body: body ?? { external_user_id: ctx.tag, metadata: ctx.tagMetadata },
  });
  const conv = ctx.ok(ex, ctx.schemas.conversation, 'create conversation') as ConversationT;
  return { ex, conv };
}

export interface Baseline<T = unknown> {
  request: OutgoingRequest;
  exchange: Exchange;
  value: T;
}

/** The run's passing create-conversation request. */
export function baselineCreate(ctx: CaseContext): Promise<Baseline<ConversationT>> {
  return ctx.once('baseline: create conversation', async () => {
    const request: OutgoingRequest = {
      method: 'POST',
      path: convPath(ctx.target.appId),
      body: { external_user_id: ctx.tag, title: `Conformance ${HOSTILE_TEXT}`, metadata: ctx.tagMetadata },
    };
    const exchange = await ctx.send(request);
    const value = ctx.ok(exchange, ctx.schemas.conversation, 'create conversation') as ConversationT;
    return { request, exchange, value };
  });
}

/** A live conversation of the run, on the main app, for reads and negative cases. */
export async function liveConversation(ctx: CaseContext): Promise<ConversationT> {
  return (await baselineCreate(ctx)).value;
}

export type Json = Record<string, unknown>;

/**
 * §2: created_at is the Unix time in seconds of the creation the answer `ex` reports. The answer's
 * Date header (which RFC 9110 §6.6.1 asks of every server with a clock) is the server's time when it
 * answered: created_at lies between it less the request's duration and it, give or take a second
 * of rounding each way. Without a Date header, the suite's own clock, within a day.
 */
export function checkUnixSeconds(ctx: CaseContext, value: unknown, what: string, ex?: Exchange): void {
  const date = Date.parse(ex?.headers.get('date') ?? '');
  if (typeof value !== 'number') ctx.fail(`${what}: created_at ${String(value)} is not a number`, ex);
  if (Number.isNaN(date)) {
    const now = Date.now() / 1000;
    ctx.check(Math.abs(value - now) < 86_400, `${what}: created_at ${value} is not Unix seconds near now (${Math.round(now)})`, ex);
    return;
  }
  const answered = Math.floor(date / 1000);
  const asked = answered - Math.ceil((ex?.ms ?? 0) / 1000);
  ctx.check(
    value >= asked - 2 && value <= answered + 2,
    `${what}: created_at ${value} is not the Unix time of its creation in seconds: the answer's Date header says ${answered} (${new Date(date).toISOString()}), the request took ${ex?.ms ?? 0} ms`,
    ex,
  );
}

/** Whether `text` appears anywhere in the JSON of `value`: for items, whose fields are not shown (§2.1). */
export function mentions(value: unknown, text: string): boolean {
  return JSON.stringify(value).includes(JSON.stringify(text).slice(1, -1));
}

/**
 * A conversation id that does not exist but has the shape of the run's real one (same length, the
 * same kind of character at each place): §2.10 does not show the id format, so an implementation
 * that checks it still sees a well-formed id, and §7 fixes 404 not_found for it. It is read first,
 * so that no case ever changes a conversation that happens to exist.
 */
export function unknownConversationId(ctx: CaseContext): Promise<string> {
  return ctx.once('an unknown conversation id', async () => {
    const real = (await baselineCreate(ctx)).value.id;
    for (let shift = 1; shift <= 5; shift++) {
      const id = lookalike(real, shift);
      if (id === real) break;
      const ex = await ctx.send({ method: 'GET', path: convPath(ctx.target.appId, id) });
      if (ex.status !== 200) return id;
    }
    return ctx.fail(`could not derive an id that no conversation has from ${real}`);
  });
}

/**
 * `id` with up to 8 of its last characters moved `shift` places within the alphabet of its random
 * tail (what follows the last separator: `conv_…`, the last group of a UUID), kind by kind.
 */
export function lookalike(id: string, shift: number): string {
  const tail = /[0-9A-Za-z]*$/.exec(id)![0];
  const classes = [/[0-9]/, /[a-z]/, /[A-Z]/];
  const alphabets = classes.map((re) => [...new Set([...tail].filter((ch) => re.test(ch)))].sort());
  const chars = [...tail];
  for (let i = chars.length - 1; i >= Math.max(0, chars.length - 8); i--) {
    const a = alphabets[classes.findIndex((re) => re.test(chars[i]!))]!;
    chars[i] = a[(a.indexOf(chars[i]!) + shift) % a.length]!;
  }
  return id.slice(0, id.length - tail.length) + chars.join('');
}

/** The run's passing send-message request (JSON mode) on a fresh conversation. */
export function baselineSend(ctx: CaseContext): Promise<Baseline<Json> & { conversationId: string }> {
  return ctx.once('baseline: send message', async () => {
    const { conv } = await createConversation(ctx);
    const request: OutgoingRequest = {
      method: 'POST',
      path: convPath(ctx.target.appId, conv.id),
      body: { message: { content: `Hello! How do I reset my password? ${HOSTILE_TEXT}` }, stream: false },
    };
    const exchange = await ctx.send(request);
    const value = ctx.ok(exchange, ctx.schemas.response, 'send message') as Json;
    return { request, exchange, value, conversationId: conv.id };
  });
}

/** The run's passing completion request (JSON mode). */
export function baselineCompletion(ctx: CaseContext): Promise<Baseline<Json>> {
  return ctx.once('baseline: completion', async () => {
    const request: OutgoingRequest = {
      method: 'POST',
      path: appPath(ctx.target.appId, 'completions'),
      body: { prompt: `Write one sentence welcoming a new customer. ${HOSTILE_TEXT}` },
    };
    const exchange = await ctx.send(request);
    const value = ctx.ok(exchange, ctx.schemas.completion, 'create completion') as Json;
    return { request, exchange, value };
  });
}

/** The same request with its JSON body changed by `change` (one thing, by the negative case). */
export function withBody(r: OutgoingRequest, change: (body: Json) => Json): OutgoingRequest {
  return { ...r, body: change(structuredClone(r.body as Json)) };
}

/** An object whose compact JSON is exactly `bytes` UTF-8 bytes, tagged with the run. */
export function metadataOfBytes(ctx: CaseContext, bytes: number, char: 'x' | 'é' = 'x'): Json {
  const base = { ...ctx.tagMetadata, pad: '' };
  const room = bytes - Buffer.byteLength(JSON.stringify(base), 'utf8');
  // 'é' is two UTF-8 bytes but one character: a size counted in characters falls short.
  const width = Buffer.byteLength(char, 'utf8');
  return { ...ctx.tagMetadata, pad: char.repeat(Math.floor(room / width)) + 'x'.repeat(room % width) };
}

export interface StreamAnalysis {
  types: string[];
  payloads: Json[];
  /** Text per `output_index:content_index`, from deltas and from done events. */
  deltas: Map<string, string>;
  done: Map<string, string>;
}

function analyze(ex: Exchange): StreamAnalysis {
  const events = ex.sse?.events ?? [];
  const a: StreamAnalysis = {
    types: events.map((e) => e.event),
    payloads: events.map((e) => (e.json ?? {}) as Json),
    deltas: new Map(),
    done: new Map(),
  };
  events.forEach((e) => {
    const p = (e.json ?? {}) as Json;
    const key = `${String(p.output_index)}:${String(p.content_index)}`;
    if (e.event === 'response.output_text.delta') a.deltas.set(key, (a.deltas.get(key) ?? '') + String(p.delta));
    if (e.event === 'response.output_text.done') a.done.set(key, String(p.text));
  });
  return a;
}

/** Asserts a complete, well-formed SSE response and returns it analysed (shared by §6 cases). */
export function expectStream(ctx: CaseContext, ex: Exchange, what: string): StreamAnalysis {
  ctx.check(ex.status === 200, `${what}: expected HTTP 200, got ${ex.status}`, ex);
  const sse = ex.sse;
  if (!sse) return ctx.fail(`${what}: expected Content-Type text/event-stream, got ${JSON.stringify(ex.headers.get('content-type'))}`, ex);
  ctx.check(sse.ended, `${what}: the stream did not end (${sse.timedOut ? `${sse.timedOut} timeout` : 'cut short'})`, ex);
  ctx.check(sse.events.length > 0, `${what}: the stream carried no event`, ex);
  sse.events.forEach((e, i) => {
    ctx.check(
      e.json !== undefined && typeof e.json === 'object' && e.json !== null && !Array.isArray(e.json),
      `${what}: event #${i} (${e.event}) data is not a JSON object: ${e.data.slice(0, 120)}`,
      ex,
    );
  });
  return analyze(ex);
}

/** Output items of a JSON response or of persisted items, reduced to what both must agree on. */
export function contentOf(items: Json[]): Json[] {
  return items.map((it) => {
    if (it.type === 'message') return { type: 'message', role: it.role, text: textOf(it) };
    if (it.type === 'function_call') return { type: 'function_call', name: it.name, arguments: it.arguments, call_id: it.call_id };
    return { type: it.type, data: it.data };
  });
}

export function textOf(item: Json): string {
  const content = Array.isArray(item.content) ? (item.content as Json[]) : [];
  return content
    .filter((p) => p.type === 'text')
    .map((p) => String(p.text))
    .join('');
}

/** Reads a conversation with its items. */
export async function getConversation(ctx: CaseContext, id: string, app = ctx.target.appId): Promise<Json & { items: Json[] }> {
  const ex = await ctx.send({ method: 'GET', path: convPath(app, id) });
  return ctx.ok(ex, ctx.schemas.conversationWithItems, 'get conversation') as Json & { items: Json[] };
}

export type MetricsT = z.infer<typeof C.AppMetrics>;

export async function metrics(ctx: CaseContext, app = ctx.target.appId): Promise<MetricsT> {
  const ex = await ctx.send({ method: 'GET', path: appPath(app, 'metrics') });
  return ctx.ok(ex, ctx.schemas.metrics, 'get metrics');
}

/**
 * Metrics read until `reached` holds or the run's timeout passes: the metrics are "aggregated"
 * (§1), so an implementation may count a change a little after it answered.
 */
export function settledMetrics(ctx: CaseContext, reached: (m: MetricsT) => boolean): Promise<MetricsT> {
  return ctx.poll(() => metrics(ctx), reached);
}

/**
 * Creates one conversation and reads the metrics once they count it. A change that must not count
 * (a completion, a deletion) is judged against this one: nothing marks when a lagging aggregate has
 * taken in a change that does not show, but the creation after it does.
 */
export async function metricsAfterOneCreation(ctx: CaseContext, before: MetricsT): Promise<MetricsT> {
  await createConversation(ctx);
  return settledMetrics(ctx, (m) => m.total_conversations > before.total_conversations);
}
