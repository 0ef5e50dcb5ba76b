// Human-readable rendering: tables, a conversation's history, and a live stream of events.
import type { ClientStreamEvent, Completion, Conversation, ConversationWithItems, MessageResponse } from './client.ts';
import { FailedResponseError, type Output } from './io.ts';

export function time(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, 'Z');
}

export function table(rows: string[][], header: string[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

export function truncate(s: string, n: number): string {
  const flat = s.replace(/\s+/g, ' ');
  return flat.length > n ? flat.slice(0, n - 1) + '…' : flat;
}

/** The title a person would call the conversation by: the custom one, else a generated one. */
export function displayTitle(c: Conversation): string {
  if (c.title) return c.title;
  const generated = c.generated_title ?? {};
  const t = generated['en-ca'] ?? Object.values(generated)[0];
  return t ? `${t} (generated)` : '(untitled)';
}

export function conversationRows(list: Conversation[]): string[][] {
  return list.map((c) => [c.id, time(c.created_at), c.external_user_id ?? '-', truncate(displayTitle(c), 60)]);
}

export const CONVERSATION_HEADER = ['ID', 'CREATED', 'USER', 'TITLE'];

export function keyValues(pairs: Array<[string, string]>): string {
  const w = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${(k + ':').padEnd(w + 1)} ${v}`).join('\n') + '\n';
}

export function conversationSummary(c: Conversation): string {
  const pairs: Array<[string, string]> = [
    ['id', c.id],
    ['created', time(c.created_at)],
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

function patchLine(data: unknown): string {
  const patch = (data as { patch?: { op?: string; path?: string; value?: unknown } })?.patch ?? {};
  const value = patch.value === undefined ? '' : ' ' + truncate(JSON.stringify(patch.value), 100);
  return `◆ data_spec ${patch.op ?? '?'} ${patch.path ?? '?'}${value}`;
}

/** One history item (D-14) as a line or paragraph; tolerant of what other servers put in items. */
export function itemText(item: Record<string, unknown>): string {
  switch (item.type) {
    case 'message':
      return `${String(item.role ?? 'assistant')}: ${partsText(item.content)}`;
    case 'function_call':
      return callLine(item.name, item.arguments);
    case 'data_spec':
      return patchLine(item.data);
    default:
      return `[${String(item.type ?? 'item')}] ${truncate(JSON.stringify(item), 200)}`;
  }
}

export function conversationWithHistory(c: ConversationWithItems): string {
  const lines = [conversationSummary(c).trimEnd(), ''];
  if (c.items.length === 0) lines.push('(no messages yet)');
  for (const item of c.items) lines.push(itemText(item));
  return lines.join('\n') + '\n';
}

/** A non-streamed response: text on stdout, calls and patches on stderr, a failure as exit 1. */
export function renderResponse(out: Output, r: MessageResponse): void {
  let first = true;
  for (const item of r.output) {
    if (item.type === 'message') {
      if (!first) out.endLine();
      out.out(partsText(item.content));
      first = false;
    } else if (item.type === 'function_call') out.note(callLine(item.name, item.arguments));
    else out.note(patchLine(item.data));
  }
  out.endLine();
  finish(out, r.status, r.id, r.error);
}

export function renderCompletion(out: Output, c: Completion): void {
  out.out(c.text);
  out.endLine();
  finish(out, c.status, c.id, c.error);
}

function finish(out: Output, status: string, id: string, error: { type?: string; message?: string; code?: string | null } | undefined): void {
  if (status === 'failed') throw new FailedResponseError(failureText(id, error));
  out.note(`[${status} ${id}]`);
}

/** The one line naming a failed response or completion (D-17) and why, in every output mode. */
export function failureText(id: string, error: { type?: string; message?: string; code?: string | null } | undefined): string {
  const what = error ? `${error.type ?? 'error'}: ${error.message ?? ''}${error.code ? ` (code: ${error.code})` : ''}` : 'no details given';
  return `${id.startsWith('cmpl_') ? 'completion' : 'response'} ${id} failed: ${what}`;
}

/**
 * Renders a stream live (§6): text deltas to stdout as they arrive, function calls and data_spec
 * patches as one line each on stderr, then the final status. Returns the id of the response.
 */
export async function renderStream(out: Output, events: AsyncIterable<ClientStreamEvent>): Promise<string | undefined> {
  let id: string | undefined;
  let textIndex: number | undefined;
  for await (const e of events) {
    switch (e.event) {
      case 'response.created':
        id = e.data.id;
        break;
      case 'response.output_text.delta':
        // A new message item starts on a new line.
        if (textIndex !== undefined && textIndex !== e.data.output_index) out.endLine();
        textIndex = e.data.output_index;
        out.out(e.data.delta);
        break;
      case 'response.function_call_arguments.done':
        out.note(callLine(e.data.name, e.data.arguments));
        break;
      case 'response.data_spec':
        out.note(patchLine(e.data.data));
        break;
      case 'response.completed':
        out.endLine();
        out.note(`[completed ${e.data.id}]`);
        return e.data.id;
      case 'response.failed': {
        out.endLine();
        const failed = e.data as { id?: string; error?: { type?: string; message?: string; code?: string | null } };
        throw new FailedResponseError(failureText(failed.id ?? id ?? '?', failed.error));
      }
      default:
        // function_call.start, argument deltas and the assembled text add nothing a reader needs live.
        break;
    }
  }
  return id;
}
