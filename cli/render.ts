// Human-readable rendering: tables, a conversation's history, and a live stream of events.
import type { ClientStreamEvent, Completion, Conversation, ConversationWithItems, MessageResponse } from './client.ts';
import { patchLines, wrapWords } from './form-summary.ts';
import { FailedResponseError, type Output } from './io.ts';

export function time(seconds: number | undefined): string {
  const d = new Date((seconds ?? NaN) * 1000);
  return Number.isNaN(d.getTime())
    ? '-'
    : d
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d{3}Z$/, 'Z');
}

const RELATIVE = new Intl.RelativeTimeFormat('en', { numeric: 'always' });
const UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['year', 365 * 86400],
  ['month', 30 * 86400],
  ['week', 7 * 86400],
  ['day', 86400],
  ['hour', 3600],
  ['minute', 60],
];

/** D-64: "3 minutes ago" for a table; the exact time stays in `--json` and in `get`. */
export function ago(seconds: number | undefined, nowMs = Date.now()): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return '-';
  const delta = seconds - nowMs / 1000;
  const abs = Math.abs(delta);
  if (abs < 45) return 'just now';
  for (const [unit, size] of UNITS) if (abs >= size) return RELATIVE.format(Math.trunc(delta / size), unit);
  return RELATIVE.format(Math.trunc(delta), 'second');
}

export function table(rows: string[][], header: string[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return `${all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n')}\n`;
}

export function truncate(s: string, n: number): string {
  const flat = s.replace(/\s+/g, ' ');
  return flat.length > n ? `${flat.slice(0, n - 1)}…` : flat;
}

/** The title a person would call the conversation by: the custom one, else a generated one. */
export function displayTitle(c: Conversation): string {
  if (c.title) return c.title;
  const generated = c.generated_title ?? {};
  const t = generated['en-ca'] ?? Object.values(generated)[0];
  return t ? `${t} (generated)` : '(untitled)';
}

export function conversationRows(list: Conversation[]): string[][] {
  return list.map((c) => [c.id, ago(c.created_at), c.external_user_id ?? '-', truncate(displayTitle(c), 60)]);
}

export const CONVERSATION_HEADER = ['ID', 'CREATED', 'USER', 'TITLE'];

/** A field's value for a key: value list; `?` when the server left it out. */
export function shown(v: unknown): string {
  return v === undefined ? '?' : typeof v === 'string' ? v : JSON.stringify(v);
}

export function keyValues(pairs: Array<[string, string]>): string {
  const w = Math.max(...pairs.map(([k]) => k.length));
  return `${pairs.map(([k, v]) => `${(`${k}:`).padEnd(w + 1)} ${v}`).join('\n')}\n`;
}

export function conversationSummary(c: Conversation): string {
  const pairs: Array<[string, string]> = [
    ['id', c.id],
    ['created', `${time(c.created_at)} (${ago(c.created_at)})`],
    ['title', c.title ?? '(none)'],
  ];
  const generated = Object.entries(c.generated_title ?? {});
  if (generated.length > 0) pairs.push(['generated title', generated.map(([k, v]) => `${k}: ${v}`).join(' | ')]);
  pairs.push(['external user', c.external_user_id ?? '(none)']);
  pairs.push(['metadata', JSON.stringify(c.metadata ?? {})]);
  return keyValues(pairs);
}

/** Text of a message's text parts; other part types are named so nothing vanishes silently. */
function partsText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((p: { type?: string; text?: unknown }) => (p?.type === 'text' && typeof p.text === 'string' ? p.text : `[${p?.type ?? 'part'}]`))
    .join('');
}

function callLine(name: unknown, args: unknown): string {
  return `→ ${String(name ?? 'function')}(${typeof args === 'string' ? truncate(args, 200) : ''})`;
}

/** One history item (D-14) as a line or paragraph; tolerant of what other servers put in items. */
export function itemText(item: Record<string, unknown>): string {
  switch (item.type) {
    case 'message':
      // D-39: a reply that did not complete says so.
      return `${String(item.role ?? 'assistant')}${item.status === 'incomplete' ? ' (incomplete)' : ''}: ${partsText(item.content)}`;
    case 'function_call':
      return callLine(item.name, item.arguments);
    case 'data_spec':
      return patchLines(item.data).join('\n');
    default:
      return `[${String(item.type ?? 'item')}] ${truncate(JSON.stringify(item), 200)}`;
  }
}

export function conversationWithHistory(c: ConversationWithItems): string {
  const lines = [conversationSummary(c).trimEnd(), ''];
  if (c.items.length === 0) lines.push('(no messages yet)');
  for (const item of c.items) lines.push(itemText(item));
  return `${lines.join('\n')}\n`;
}

/** A non-streamed response: text on stdout, calls, patches and unknown items on stderr, a failure as exit 1. */
export function renderResponse(out: Output, r: MessageResponse, withStatus = true): void {
  let first = true;
  for (const item of r.output) {
    if (item.type === 'message') {
      if (!first) out.endLine();
      out.out(partsText(item.content));
      first = false;
    } else out.note(itemText(item));
  }
  out.endLine();
  if (withStatus) finish(out, r);
}

export function renderCompletion(out: Output, c: Completion): void {
  out.out(c.text);
  out.endLine();
  finish(out, c);
}

function finish(out: Output, r: MessageResponse | Completion): void {
  if (r.status === 'failed') throw new FailedResponseError(failureText(r.id, r.error, r.object));
  out.note(`[${r.status} ${r.id}]`);
}

type FailureError = { type?: string; message?: string; code?: string | null } | null | undefined;

/**
 * The one line naming a failed response or completion (D-17) and why, in every output mode. `object`
 * (`completion`, from the answer or its response.created event) names it; else the id's prefix (D-7).
 */
export function failureText(id: string, error: FailureError, object?: string): string {
  const what = error ? `${error.type ?? 'error'}: ${error.message ?? ''}${error.code ? ` (code: ${error.code})` : ''}` : 'no details given';
  const completion = object === undefined ? id.startsWith('cmpl_') : object === 'completion';
  return `${completion ? 'completion' : 'response'} ${id} failed: ${what}`;
}

/** What a stream's `response.created` said, to name the reply when later events do not. */
export interface StreamStart {
  id?: string;
  object?: string;
}

/** The error of a `response.failed` event (D-16), named like every other failure. */
export function streamFailure(data: unknown, start: StreamStart): FailedResponseError {
  const failed = (data ?? {}) as { id?: unknown; error?: FailureError };
  const id = typeof failed.id === 'string' ? failed.id : (start.id ?? '?');
  return new FailedResponseError(failureText(id, failed.error, start.object));
}

/**
 * Renders a stream live (§6): text deltas to stdout as they arrive, function calls and data_spec
 * patches as one line each on stderr, then the final status. Returns the id of the response.
 */
export interface StreamRendering {
  /** Wrap the text and the form's lines at word boundaries to this many columns (the chat, on a terminal). */
  wrapWidth?: number;
  /** Leave out the `[completed id]` status line (the chat says it only with --verbose). */
  quiet?: boolean;
}

/**
 * Text written at word boundaries within `width` columns, as it streams: a word is held until the
 * space or newline after it arrives, then goes on this line or the next. A word longer than a line is
 * written as it is.
 */
export class WordWrapper {
  #column = 0;
  #word = '';
  #spaces = '';
  constructor(
    readonly width: number,
    readonly write: (s: string) => void,
  ) {}

  push(text: string): void {
    for (const ch of text) {
      if (ch === '\n') {
        this.#flushWord();
        this.#spaces = '';
        this.write('\n');
        this.#column = 0;
      } else if (ch === ' ' || ch === '\t') {
        this.#flushWord();
        this.#spaces += ch === '\t' ? '    ' : ' ';
      } else this.#word += ch;
    }
  }

  /** Writes the word held back (the end of the text). */
  flush(): void {
    this.#flushWord();
  }

  #flushWord(): void {
    if (this.#word === '') return;
    const length = [...this.#word].length;
    if (this.#column > 0 && this.#column + this.#spaces.length + length > this.width) {
      this.write('\n');
      this.#column = 0;
    } else if (this.#column > 0) {
      this.write(this.#spaces);
      this.#column += this.#spaces.length;
    }
    this.write(this.#word);
    this.#column += length;
    this.#word = '';
    this.#spaces = '';
  }
}

export async function renderStream(
  out: Output,
  events: AsyncIterable<ClientStreamEvent>,
  opts: StreamRendering = {},
): Promise<string | undefined> {
  const start: StreamStart = {};
  const wrapper = opts.wrapWidth ? new WordWrapper(opts.wrapWidth, (s) => out.out(s)) : undefined;
  const write = (s: string) => (wrapper ? wrapper.push(s) : out.out(s));
  const endLine = () => {
    wrapper?.flush();
    out.endLine();
  };
  let textIndex: number | undefined;
  // Indexes whose text came as deltas: for the others, output_text.done is the only text there is.
  const streamed = new Set<number>();
  // D-16 names the function in .start and .done; another server may name it only in .start.
  const callNames = new Map<unknown, unknown>();
  const text = (index: number, s: string) => {
    // A new message item starts on a new line.
    if (textIndex !== undefined && textIndex !== index) endLine();
    textIndex = index;
    write(s);
  };
  for await (const e of events) {
    switch (e.event) {
      case 'response.created':
        start.id = e.data.id;
        start.object = e.data.object;
        break;
      case 'response.output_text.delta':
        streamed.add(e.data.output_index);
        text(e.data.output_index, e.data.delta);
        break;
      case 'response.output_text.done':
        if (!streamed.has(e.data.output_index)) text(e.data.output_index, e.data.text);
        break;
      case 'response.function_call.start':
        callNames.set(e.data.call_id ?? e.data.output_index, e.data.name);
        break;
      case 'response.function_call_arguments.done':
        wrapper?.flush();
        out.note(callLine(e.data.name ?? callNames.get(e.data.call_id ?? e.data.output_index), e.data.arguments));
        break;
      case 'response.data_spec':
        wrapper?.flush();
        for (const line of patchLines(e.data.data)) out.note(opts.wrapWidth ? wrapWords(line, opts.wrapWidth).join('\n') : line);
        break;
      case 'response.completed': {
        endLine();
        const id = e.data.id ?? start.id;
        if (!opts.quiet) out.note(`[completed ${id ?? '?'}]`);
        return id;
      }
      case 'response.failed':
        endLine();
        throw streamFailure(e.data, start);
      default:
        // Argument deltas add nothing a reader needs live.
        break;
    }
  }
  return start.id;
}
