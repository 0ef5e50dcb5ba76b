// The client kit's reference client (docs/client-kit.md): a client of the interface that passes every
// case of `parley conformance client`, written to be copied. It does each task of the kit's protocol
// from the PARLEY_* variables and prints one JSON object as its last line. Its rules, in order of
// appearance: retry only what may succeed later, after Retry-After or a growing delay, at most 5 tries,
// with one Idempotency-Key per operation; read a stream by sequence_number (a duplicate is dropped, a
// frame that is not JSON is skipped), and resume a cut stream from the last event seen (D-32).
import { randomUUID } from 'node:crypto';
import { createParser } from 'eventsource-parser';

const env = process.env;
const BASE = env.PARLEY_BASE_URL!;
const APP = encodeURIComponent(env.PARLEY_APP_ID!);
const TRIES = 5;
/** A stream silent this long is taken as cut and resumed. */
const IDLE_MS = 10_000;

/** An answer the client gave up on: printed as the task's error. */
class GaveUp extends Error {
  constructor(
    readonly status: number,
    readonly type: string | null,
    readonly code: string | null,
  ) {
    super(`${status} ${type ?? ''} ${code ?? ''}`);
  }
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether an error answer may succeed if sent again (the kit's `must`: no other 4xx is retried). */
function retriable(res: Response, code: string | null): boolean {
  if (res.headers.get('x-should-retry') === 'false') return false;
  if (res.status === 408 || res.status === 429 || res.status >= 500) return true;
  return res.status === 409 && (code === 'conversation_busy' || code === 'idempotency_key_in_use');
}

/** Retry-After in milliseconds, else a delay that doubles each try. */
function delayOf(res: Response | undefined, attempt: number): number {
  const after = Number(res?.headers.get('retry-after'));
  return Number.isFinite(after) && after >= 0 ? after * 1000 : 500 * 2 ** attempt;
}

interface Call {
  method: string;
  path: string;
  body?: unknown;
  /** One key for every try of one operation, so that the server runs it once. */
  idempotencyKey?: string;
  headers?: Record<string, string>;
}

/** One operation, retried by the rules above; resolves to its 2xx answer. */
async function call(c: Call): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    let res: Response | undefined;
    try {
      res = await fetch(`${BASE}${c.path}`, {
        method: c.method,
        headers: {
          authorization: `Bearer ${env.PARLEY_API_KEY}`,
          ...(c.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(c.idempotencyKey ? { 'idempotency-key': c.idempotencyKey } : {}),
          ...c.headers,
        },
        body: c.body === undefined ? undefined : JSON.stringify(c.body),
      });
    } catch (err) {
      // No answer at all: a read, or a write with its key, is safe to send again.
      if (attempt + 1 >= TRIES || (c.method !== 'GET' && !c.idempotencyKey)) throw err;
      await wait(delayOf(undefined, attempt));
      continue;
    }
    if (res.ok) return res;
    const error = ((await res.json().catch(() => ({}))) as { error?: { type?: string; code?: string } }).error;
    const code = error?.code ?? null;
    if (!retriable(res, code) || attempt + 1 >= TRIES) throw new GaveUp(res.status, error?.type ?? null, code);
    await wait(delayOf(res, attempt));
  }
}

type Item = Record<string, any> & { type: string };

/** A reply as its events describe it, as a person would be shown it. */
interface Reply {
  responseId?: string;
  lastSeq: number;
  items: Item[];
  /** The form's patches in the order they came (RFC 6902). */
  patches: Array<{ op: string; path: string; value?: unknown }>;
  formAt?: number;
  status?: 'completed' | 'failed';
  error?: unknown;
}

/** Folds one event into the reply (the events of §6, with Parley's payloads). */
function fold(r: Reply, type: string, d: Record<string, any>): void {
  const i = d.output_index as number;
  if (type === 'response.created') r.responseId ??= d.id ?? d.response?.id;
  else if (type === 'response.output_text.delta') {
    const item = (r.items[i] ??= { type: 'message', role: 'assistant', content: [] }) as Item & {
      content: Array<{ type: string; text: string }>;
    };
    const part = (item.content[d.content_index] ??= { type: 'text', text: '' });
    part.text += d.delta;
  } else if (type === 'response.output_text.done')
    r.items[i] = { type: 'message', role: 'assistant', content: [{ type: 'text', text: d.text }] };
  else if (type === 'response.function_call.start') r.items[i] = { type: 'function_call', name: d.name, arguments: '', call_id: d.call_id };
  else if (type === 'response.function_call_arguments.delta') r.items[i]!.arguments += d.delta;
  else if (type === 'response.function_call_arguments.done') r.items[i]!.arguments = d.arguments;
  else if (type === 'response.data_spec') {
    r.patches.push(d.data.patch);
    r.formAt ??= i;
  } else if (type === 'response.completed') r.status = 'completed';
  else if (type === 'response.failed') {
    r.status = 'failed';
    r.error = d.error;
  }
}

/** Reads one stream into the reply until its terminal event, its end, or a silence of IDLE_MS. */
async function read(res: Response, r: Reply, watch?: (r: Reply) => void): Promise<void> {
  r.responseId ??= res.headers.get('parley-response-id') ?? undefined;
  const parser = createParser({
    onEvent(m) {
      let d: Record<string, any>;
      try {
        d = JSON.parse(m.data);
      } catch {
        return; // A frame that is not JSON is not the end of the reply.
      }
      const seq = d.sequence_number;
      if (typeof seq === 'number') {
        if (seq <= r.lastSeq) return; // Seen already: a duplicate, or a replay before the resume point.
        r.lastSeq = seq;
      }
      fold(r, m.event ?? '', d);
      watch?.(r);
    },
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const silence = new Promise<'idle'>((resolve) => {
      timer = setTimeout(() => resolve('idle'), IDLE_MS);
    });
    const next = await Promise.race([reader.read().catch(() => ({ done: true as const, value: undefined })), silence]);
    clearTimeout(timer);
    if (next === 'idle' || next.done) break;
    parser.feed(decoder.decode(next.value, { stream: true }));
    if (r.status) break;
  }
  await reader.cancel().catch(() => {});
}

/** Sends a message with `stream: true` and reads the reply to its end, resuming it after a cut. */
async function sendStream(watch?: (r: Reply) => void): Promise<Reply> {
  const conversation = encodeURIComponent(env.PARLEY_CONVERSATION_ID!);
  const send: Call = {
    method: 'POST',
    path: `/apps/${APP}/conversations/${conversation}`,
    body: { message: { content: env.PARLEY_MESSAGE }, stream: true },
    idempotencyKey: randomUUID(),
  };
  const r: Reply = { lastSeq: -1, items: [], patches: [] };
  let res = await call(send);
  for (let attempt = 0; ; attempt++) {
    await read(res, r, watch);
    if (r.status) return r;
    if (attempt + 1 >= TRIES) throw new GaveUp(0, 'stream_cut', null);
    await wait(delayOf(undefined, attempt));
    // Resume from the last event seen; cut before its response was named, the same key replays it (D-30).
    res = r.responseId
      ? await call({
          method: 'GET',
          path: `/apps/${APP}/responses/${encodeURIComponent(r.responseId)}/events`,
          headers: r.lastSeq >= 0 ? { 'last-event-id': String(r.lastSeq) } : {},
        })
      : await call(send);
  }
}

/** RFC 6902's add, replace and remove on a plain JSON document (what a form's patches use). */
function applyPatches(patches: Reply['patches']): unknown {
  const root: { doc: any } = { doc: {} };
  for (const p of patches) {
    const keys = [
      'doc',
      ...p.path
        .split('/')
        .slice(1)
        .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~')),
    ];
    const last = keys.pop()!;
    let at: any = root;
    for (const k of keys) at = at[k];
    if (Array.isArray(at)) {
      const index = last === '-' ? at.length : Number(last);
      if (p.op === 'add') at.splice(index, 0, p.value);
      else if (p.op === 'remove') at.splice(index, 1);
      else at[index] = p.value;
    } else if (p.op === 'remove') delete at[last];
    else at[last] = p.value;
  }
  return root.doc;
}

/** The reply as the kit's protocol prints it: the form's patches applied, in place of its data_spec items. */
function shown(r: Reply) {
  const items = r.items.filter((x) => x !== undefined);
  if (r.formAt !== undefined) items.splice(Math.min(r.formAt, items.length), 0, { type: 'form', state: applyPatches(r.patches) });
  const text = r.items
    .filter((x) => x?.type === 'message')
    .flatMap((x) => (x.content as Array<{ text?: string }>).map((p) => p.text ?? ''))
    .join('');
  return { text, response_id: r.responseId, status: r.status, items };
}

async function task(): Promise<unknown> {
  switch (env.PARLEY_TASK) {
    case 'create-conversation': {
      const res = await call({
        method: 'POST',
        path: `/apps/${APP}/conversations`,
        body: { title: env.PARLEY_TITLE },
        idempotencyKey: randomUUID(),
      });
      return { conversation_id: ((await res.json()) as { id: string }).id };
    }
    case 'send-stream':
      return shown(await sendStream());
    case 'send-json': {
      const conversation = encodeURIComponent(env.PARLEY_CONVERSATION_ID!);
      const body = { message: { content: env.PARLEY_MESSAGE }, stream: false };
      const res = await call({ method: 'POST', path: `/apps/${APP}/conversations/${conversation}`, body, idempotencyKey: randomUUID() });
      const response = (await res.json()) as { id: string; status: 'completed' | 'failed'; output: Item[] };
      const r: Reply = { responseId: response.id, status: response.status, lastSeq: -1, items: [], patches: [] };
      response.output.forEach((item, i) => {
        if (item.type !== 'data_spec') r.items[i] = item;
        else fold(r, 'response.data_spec', { data: item.data, output_index: i });
      });
      return shown(r);
    }
    case 'complete': {
      const res = await call({
        method: 'POST',
        path: `/apps/${APP}/completions`,
        body: { prompt: env.PARLEY_PROMPT },
        idempotencyKey: randomUUID(),
      });
      const c = (await res.json()) as { text: string; status: string };
      return { text: c.text, status: c.status };
    }
    case 'list-all': {
      const ids: string[] = [];
      for (let after: string | undefined; ; ) {
        const q = new URLSearchParams({ limit: '100', order: env.PARLEY_ORDER ?? 'desc', ...(after ? { after } : {}) });
        const page = (await (await call({ method: 'GET', path: `/apps/${APP}/conversations?${q}` })).json()) as {
          data: Array<{ id: string }>;
          has_more: boolean;
          last_id: string | null;
        };
        ids.push(...page.data.map((c) => c.id));
        if (!page.has_more || !page.last_id) return { ids };
        after = page.last_id;
      }
    }
    case 'cancel': {
      let cancelling: Promise<Response> | undefined;
      const r = await sendStream((sofar) => {
        // Cancelled through the API once its first text came: closing the socket would leave it running (D-34).
        if (!cancelling && sofar.responseId && sofar.items.length > 0)
          cancelling = call({ method: 'POST', path: `/apps/${APP}/responses/${encodeURIComponent(sofar.responseId)}/cancel` });
      });
      await cancelling;
      return { response_id: r.responseId, status: r.status, error: r.error };
    }
    default:
      return { unsupported: true };
  }
}

try {
  console.log(JSON.stringify(await task()));
} catch (err) {
  const e = err instanceof GaveUp ? err : new GaveUp(0, 'network_error', null);
  console.log(JSON.stringify({ error: { status: e.status, type: e.type, code: e.code } }));
  process.exitCode = 1;
}
