// What a tape's streamed chunks say (its text and tool calls), read from either engine's wire format,
// and how far two answers are apart: what `parley tapes show` prints and `parley tapes check` compares
// (D-145).
import { canonicalJson, type TapeEngine } from './tapes.ts';

export interface TapeAnswer {
  text: string;
  /** Each call as `name {canonical JSON arguments}`, in order. */
  calls: string[];
}

/** The fields of either wire format's lines that an answer is made of (a model may send anything). */
interface WireLine {
  /** Ollama's. */
  message?: { content?: unknown; tool_calls?: Array<{ function?: { name?: string; arguments?: unknown } }> };
  /** OpenAI-compatible. */
  choices?: Array<{
    delta?: { content?: unknown; tool_calls?: Array<{ index: number; function?: { name?: string; arguments?: string } }> };
  }>;
}

function json(line: string): WireLine | undefined {
  try {
    const v = JSON.parse(line) as unknown;
    return v && typeof v === 'object' ? (v as WireLine) : undefined;
  } catch {
    return undefined;
  }
}

function callOf(name: string, args: unknown): string {
  const parsed = typeof args === 'string' ? (json(args || '{}') ?? {}) : (args ?? {});
  return `${name} ${canonicalJson(parsed)}`;
}

/** Ollama streams NDJSON objects; an OpenAI-compatible server SSE `data:` lines ending with `[DONE]`. */
export function answerOf(engine: TapeEngine, chunks: string[]): TapeAnswer {
  const body = chunks.join('');
  let text = '';
  const calls: string[] = [];
  if (engine === 'ollama') {
    for (const line of body.split('\n')) {
      const m = json(line)?.message;
      if (typeof m?.content === 'string') text += m.content;
      for (const c of m?.tool_calls ?? []) calls.push(callOf(c.function?.name ?? '', c.function?.arguments));
    }
    return { text, calls };
  }
  const building = new Map<number, { name: string; args: string }>();
  for (const line of body.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const choice = json(line.slice(5).trim())?.choices?.[0];
    if (typeof choice?.delta?.content === 'string') text += choice.delta.content;
    for (const d of choice?.delta?.tool_calls ?? []) {
      const c = building.get(d.index) ?? { name: '', args: '' };
      c.name += d.function?.name ?? '';
      c.args += d.function?.arguments ?? '';
      building.set(d.index, c);
    }
  }
  for (const [, c] of [...building].sort(([a], [b]) => a - b)) calls.push(callOf(c.name, c.args));
  return { text, calls };
}

/** The share of words that differ, 0 (the same) to 1: a word-level edit distance over the longer text's length. */
export function textChange(a: string, b: string): number {
  const x = a.split(/\s+/).filter(Boolean);
  const y = b.split(/\s+/).filter(Boolean);
  const longest = Math.max(x.length, y.length);
  if (longest === 0) return 0;
  let prev = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const row = [i];
    for (let j = 1; j <= y.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[y.length]! / longest;
}

/**
 * D-145: the ways a live answer drifted from the recorded one: text changed beyond `threshold`, a tool
 * call added, removed, or made with other arguments. None: no drift.
 */
export function driftOf(recorded: TapeAnswer, live: TapeAnswer, threshold: number): string[] {
  const out: string[] = [];
  const change = textChange(recorded.text, live.text);
  if (change > threshold) out.push(`text changed ${Math.round(change * 100)}% (threshold ${Math.round(threshold * 100)}%)`);
  const left = [...live.calls];
  for (const c of recorded.calls) {
    const i = left.indexOf(c);
    if (i >= 0) left.splice(i, 1);
    else out.push(`tool call removed or changed: ${c}`);
  }
  for (const c of left) out.push(`tool call added or changed: ${c}`);
  return out;
}
