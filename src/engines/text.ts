// Small text helpers shared by the engines: token estimates, keywords, safe use of metadata values.
import type { ModelRequest } from './types.ts';

/** A deterministic token estimate (words and punctuation marks), close enough for offline usage figures. */
export function countTokens(text: string): number {
  return text.match(/[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu)?.length ?? 0;
}

/** The estimated input of one model turn: the instructions, the metadata and every message. */
export function estimateInputTokens(req: Pick<ModelRequest, 'instructions' | 'metadata' | 'messages'>): number {
  let n = countTokens(req.instructions) + countTokens(JSON.stringify(req.metadata));
  for (const m of req.messages) n += countTokens(m.content);
  return n;
}

/** Words that carry no topic: without them, "what is it" would match every passage of a search. */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a an and are as at be but by can could do does for from had has have how i if in into is it its me my no not of on or our ' +
    'please should so tell than that the their them then there these they this to too us was we were what when where which who ' +
    'why will with would you your about any get got know need want more some explain much many also just like'
  ).split(' '),
);

/** Greetings say nothing of a message's topic either (a search keeps them: a passage may be about them). */
const GREETINGS: ReadonlySet<string> = new Set(['hi', 'hello', 'hey']);

/** The words that carry a message's topic, in order of appearance, without repeats. */
export function keywords(text: string, max = 4): string[] {
  const out: string[] = [];
  for (const w of text.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'-]*/gu) ?? []) {
    if (w.length < 3 || STOP_WORDS.has(w) || GREETINGS.has(w) || out.includes(w)) continue;
    out.push(w);
    if (out.length === max) break;
  }
  return out;
}

/**
 * A metadata value used as data inside a fixed sentence: a short single-line string or nothing.
 * Whatever it says, it is never read as an instruction.
 */
export function dataString(v: unknown, max = 60): string | undefined {
  if (typeof v !== 'string' && typeof v !== 'number') return undefined;
  const s = String(v)
    .replace(/[\p{Cc}\p{Cf}]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (!s) return undefined;
  const chars = Array.from(s);
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : s;
}

/**
 * The first `n` sentences of a passage. A sentence ends at `.`, `!` or `?` followed by white space or
 * the end, so dotted names inside it (`response.completed`, `api-keys.md`) do not cut it short.
 */
export function sentences(text: string, n: number): string {
  const parts = text.match(/\S[\s\S]*?(?:[.!?]+(?=\s|$)|$)/g) ?? [text];
  return parts.slice(0, n).join(' ').trim();
}

export function truncate(text: string, max: number): string {
  const chars = Array.from(text.replace(/\s+/g, ' ').trim());
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : chars.join('');
}
