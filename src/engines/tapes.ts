// Tapes (D-140): each model call of a model engine recorded at the wire seam (the fetch its client
// consumes), one JSONL file per call, and served back from the files without any model. One layer
// under both engines, so that Ollama and OpenAI-compatible calls are taped the same way.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ModelError } from './types.ts';

export type TapeEngine = 'ollama' | 'openai';

/** The first line of a tape: what was asked and how the answer began. */
export interface TapeHead {
  tape: 1;
  key: string;
  engine: TapeEngine;
  model: string;
  /** The request body as the engine sent it, with Parley's tool call ids normalized (D-141). */
  request: Record<string, unknown>;
  /** The path it was sent to (no host: the engine's address is configuration, not the call). */
  path: string;
  status: number;
  /** The response headers a client reads: its type and a Retry-After. */
  headers: Record<string, string>;
  /** Milliseconds from the call to the response's headers. */
  ms: number;
}

/** A streamed chunk, as text, with its offset from the call in milliseconds. */
export interface TapeChunk {
  ms: number;
  chunk: string;
}

/** How the stream ended: `done` (its end), `cut` (the connection failed under it). */
export interface TapeEnd {
  end: 'done' | 'cut';
  ms: number;
}

export interface Tape {
  head: TapeHead;
  chunks: TapeChunk[];
  end: TapeEnd;
}

export type TapeTiming = 'recorded' | 'fast';

export type TapeMode = { record: string } | { replay: string; timing: TapeTiming };

/** JSON with its object keys sorted at every depth: the same value always gives the same text. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/**
 * D-141: the ids Parley makes for tool calls (`call_…`, new on every run) become `call_1`, `call_2`…
 * in the order they appear, so that a tool turn asks the same thing on every run.
 */
function normalizeIds(messages: unknown[]): unknown[] {
  const ids = new Map<string, string>();
  const id = (v: unknown) => {
    if (typeof v !== 'string') return v;
    if (!ids.has(v)) ids.set(v, `call_${ids.size + 1}`);
    return ids.get(v);
  };
  return messages.map((m) => {
    if (!m || typeof m !== 'object') return m;
    const out = { ...(m as Record<string, unknown>) };
    if ('tool_call_id' in out) out.tool_call_id = id(out.tool_call_id);
    if (Array.isArray(out.tool_calls)) {
      out.tool_calls = out.tool_calls.map((c: Record<string, unknown>) =>
        c && typeof c === 'object' && 'id' in c ? { ...c, id: id(c.id) } : c,
      );
    }
    return out;
  });
}

/** D-140: a call's key, the SHA-256 of {engine, model, messages, tools, options}, and its normalized request. */
export function tapeKey(engine: TapeEngine, body: Record<string, unknown>): { key: string; request: Record<string, unknown> } {
  const { model, messages, tools, stream: _stream, stream_options: _options, ...options } = body;
  const normalized = normalizeIds(Array.isArray(messages) ? messages : []);
  const material = { engine, model, messages: normalized, tools: tools ?? [], options };
  const key = createHash('sha256').update(canonicalJson(material)).digest('hex');
  return { key, request: { ...body, messages: normalized } };
}

/** The JSON body of a call, when it has one (both clients send their requests as JSON text). */
function bodyOf(init: RequestInit | undefined): Record<string, unknown> | undefined {
  if (typeof init?.body !== 'string') return undefined;
  try {
    const v = JSON.parse(init.body) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function pathOf(input: Parameters<typeof fetch>[0]): string {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  return new URL(url).pathname;
}

/** What a tape keeps of the response headers: none of them can carry a credential. */
const KEPT_HEADERS = ['content-type', 'retry-after'];

export function tapeFile(dir: string, key: string): string {
  return path.join(dir, `${key}.jsonl`);
}

export function serializeTape(t: Tape): string {
  return `${[t.head, ...t.chunks, t.end].map((l) => JSON.stringify(l)).join('\n')}\n`;
}

export function parseTape(text: string): Tape {
  const lines = text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const head = lines[0] as unknown as TapeHead;
  if (head?.tape !== 1 || typeof head.key !== 'string') throw new Error('not a Parley tape (its first line has no "tape": 1 and key)');
  const last = lines.at(-1) as unknown as TapeEnd;
  const end = last && 'end' in last ? last : { end: 'cut' as const, ms: 0 };
  const chunks = lines.slice(1).filter((l) => typeof l.chunk === 'string') as unknown as TapeChunk[];
  return { head, chunks, end };
}

/**
 * D-144: the key a server echoed, also where the stream cut it across chunks (which the serialized tape,
 * a line a chunk, cannot see whole): the chunk where it begins carries the placeholder, and what follows
 * of it is left out of the chunks after.
 */
export function redactChunks(chunks: TapeChunk[], secret: string | null | undefined): TapeChunk[] {
  if (!secret) return chunks;
  const joined = chunks.map((c) => c.chunk).join('');
  const spans: Array<[number, number]> = [];
  for (let at = joined.indexOf(secret); at !== -1; at = joined.indexOf(secret, at + secret.length)) spans.push([at, at + secret.length]);
  if (spans.length === 0) return chunks;
  let from = 0;
  return chunks.map((c) => {
    let text = '';
    for (let i = from; i < from + c.chunk.length; i++) {
      const span = spans.find(([s, e]) => i >= s && i < e);
      if (!span) text += joined[i];
      else if (i === span[0]) text += '[OPENAI_API_KEY]';
    }
    from += c.chunk.length;
    return { ...c, chunk: text };
  });
}

/**
 * The recording layer: the call goes to `base` untouched and its answer reaches the client chunk by
 * chunk as it arrives (recording changes nothing the client sees); the tape is written once the
 * stream ends or is cut, and a tape that cannot be written is a warning, never a failed reply. A
 * call the caller aborted before its answer was whole is not written: it is not an answer to replay.
 */
export function recordingFetch(
  base: typeof fetch,
  engine: TapeEngine,
  dir: string,
  warn: (message: string) => void,
  secret?: string | null,
): typeof fetch {
  // D-144: a server may echo the key in an answer (a 401's message): the tape keeps it out.
  const redact = (text: string) => (secret ? text.split(secret).join('[OPENAI_API_KEY]') : text);
  return (async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    const body = bodyOf(init);
    if (!body) return base(input, init);
    const start = performance.now();
    const since = () => Math.round(performance.now() - start);
    const res = await base(input, init);
    const { key, request } = tapeKey(engine, body);
    const headers: Record<string, string> = {};
    for (const h of KEPT_HEADERS) {
      const v = res.headers.get(h);
      if (v !== null) headers[h] = v;
    }
    const head: TapeHead = {
      tape: 1,
      key,
      engine,
      model: String(body.model),
      request,
      path: pathOf(input),
      status: res.status,
      headers,
      ms: since(),
    };
    const chunks: TapeChunk[] = [];
    // Written before the engine reads the answer's last chunk, so that a reply is over only once its
    // tapes are on disk; written once (an engine stops at its stream's last message, before the body ends).
    let written = false;
    const write = (end: TapeEnd['end']): Promise<void> => {
      if (written) return Promise.resolve();
      written = true;
      const file = tapeFile(dir, key);
      // Its own temporary name: the same call made twice at once is written twice, the last rename wins.
      const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
      return fs
        .mkdir(dir, { recursive: true })
        .then(() => fs.writeFile(tmp, redact(serializeTape({ head, chunks: redactChunks(chunks, secret), end: { end, ms: since() } }))))
        .then(() => fs.rename(tmp, file))
        .catch((err: NodeJS.ErrnoException) => warn(`tape ${key} not written (${err.code ?? err.message})`));
    };
    if (!res.body) {
      await write('done');
      return res;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    /** The end of the answer so far: enough to hold its last message, without joining every chunk again. */
    let tail = '';
    const taped = new ReadableStream<Uint8Array>(
      {
        async pull(ctrl) {
          try {
            const r = await reader.read();
            if (r.done) {
              const rest = decoder.decode();
              if (rest) chunks.push({ ms: since(), chunk: rest });
              await write('done');
              ctrl.close();
              return;
            }
            const chunk = decoder.decode(r.value, { stream: true });
            chunks.push({ ms: since(), chunk });
            tail = (tail + chunk).slice(-TAIL_CHARS);
            if (answered(engine, tail)) await write('done');
            ctrl.enqueue(r.value);
          } catch (err) {
            if (!init?.signal?.aborted) await write('cut');
            ctrl.error(err);
          }
        },
        cancel(reason) {
          return reader.cancel(reason);
        },
      },
      { highWaterMark: 0 },
    );
    return new Response(taped, { status: res.status, statusText: res.statusText, headers: res.headers });
  }) as typeof fetch;
}

/** Longer than any stream's last message (Ollama's `done` line with its counts). */
const TAIL_CHARS = 8192;

/** Whether the answer's end says it is whole: Ollama's last line is `done`, an OpenAI-compatible stream's `[DONE]`. */
function answered(engine: TapeEngine, body: string): boolean {
  if (engine === 'openai') return /^data: \[DONE\]\s*$/m.test(body);
  const last = body.trimEnd().split('\n').at(-1) ?? '';
  try {
    return (JSON.parse(last) as { done?: unknown }).done === true;
  } catch {
    return false;
  }
}

/** Resolves at `at` (performance.now() time), or rejects with the signal's reason. */
function waitUntil(at: number, signal: AbortSignal | null | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const tick = () => {
      // A timer may fire a fraction of a millisecond early: the recorded offset is a lower bound.
      const left = at - performance.now();
      if (left > 0) timer = setTimeout(tick, Math.ceil(left));
      else {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }
    };
    let timer = setTimeout(tick, 0);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The replaying layer: no call leaves; each is answered from its tape, with the recorded offsets
 * (`recorded`) or at once (`fast`). A call with no tape fails with `tape_missing` (D-142), naming
 * its key and the nearest tape so that whoever changed the conversation sees where it departs.
 */
export function replayingFetch(engine: TapeEngine, dir: string, timing: TapeTiming): typeof fetch {
  return (async (_input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    const start = performance.now();
    const signal = init?.signal;
    const body = bodyOf(init) ?? {};
    const { key, request } = tapeKey(engine, body);
    let tape: Tape;
    try {
      tape = parseTape(await fs.readFile(tapeFile(dir, key), 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        throw new ModelError('tape_missing', `tape ${key} in ${dir} cannot be read: ${(err as Error).message}`);
      throw new ModelError('tape_missing', await missingMessage(dir, key, engine, request));
    }
    const wait = (ms: number) => (timing === 'recorded' ? waitUntil(start + ms, signal) : Promise.resolve(signal?.throwIfAborted()));
    await wait(tape.head.ms);
    const enc = new TextEncoder();
    let i = 0;
    const stream = new ReadableStream<Uint8Array>(
      {
        async pull(ctrl) {
          try {
            const c = tape.chunks[i++];
            if (c) {
              await wait(c.ms);
              ctrl.enqueue(enc.encode(c.chunk));
              return;
            }
            await wait(tape.end.ms);
            if (tape.end.end === 'cut') ctrl.error(new TypeError('terminated'));
            else ctrl.close();
          } catch (err) {
            ctrl.error(err);
          }
        },
      },
      { highWaterMark: 0 },
    );
    return new Response(tape.head.status === 204 ? null : stream, { status: tape.head.status, headers: tape.head.headers });
  }) as typeof fetch;
}

/** The tapes of a directory, each with its head (a file that is no tape is left out). */
export async function tapeHeads(dir: string): Promise<Array<{ file: string; head: TapeHead }>> {
  const names = (await fs.readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.jsonl')).sort();
  const out: Array<{ file: string; head: TapeHead }> = [];
  for (const n of names) {
    const file = path.join(dir, n);
    try {
      const text = await fs.readFile(file, 'utf8');
      out.push({ file, head: JSON.parse(text.slice(0, text.indexOf('\n') + 1 || undefined)) as TapeHead });
    } catch {
      // Not a tape: `parley tapes list` names it; a replay has no use for it.
    }
  }
  return out;
}

/**
 * D-142: the nearest tape is the one of the same engine and model whose messages agree with the
 * call's for the longest run from the start; the message says where they part, never what they say.
 */
async function missingMessage(dir: string, key: string, engine: TapeEngine, request: Record<string, unknown>): Promise<string> {
  const messages = (request.messages as unknown[]).map(canonicalJson);
  let best: { key: string; same: number } | undefined;
  for (const { head } of await tapeHeads(dir)) {
    if (head.engine !== engine || head.model !== request.model) continue;
    const theirs = ((head.request?.messages as unknown[]) ?? []).map(canonicalJson);
    let same = 0;
    while (same < messages.length && same < theirs.length && messages[same] === theirs[same]) same++;
    if (!best || same > best.same) best = { key: head.key, same };
  }
  const base = `No tape for this model call (key ${key}) in ${dir}`;
  if (!best) return `${base}; it has no tape of ${engine}:${String(request.model)}. Record them with --record-tapes.`;
  return `${base}; the nearest tape is ${best.key}, whose messages agree with this call's up to message ${best.same} of ${messages.length}. Record again with --record-tapes.`;
}
