// The embedded engine (`local`): offline and deterministic (same input, same output), yet useful:
// it searches the knowledge base through the knowledge_search tool, answers from the passages it
// gets back, builds forms with render_form, greets by the name found in the metadata (as data),
// and remembers what the user said earlier. Per-app testing knobs slow it down or make it fail.
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import type { FormTemplateT } from './forms.ts';
import { answer as intentAnswer, languageOf, recognise } from './intents.ts';
import { countTokens, dataString, estimateInputTokens, keywords, sentences, truncate } from './text.ts';
import { ModelError, type ChatMessage, type ModelEngine, type ModelEvent, type ModelRequest, type TitleRequest } from './types.ts';

/** Per-app knobs (`agent.testing` in the fixtures) for client authors who need slow or failing streams. */
export const LocalTesting = z.strictObject({
  /** Pause before each chunk, in milliseconds. */
  latency_ms: z.number().int().min(0).max(60_000).default(0),
  /** Characters per text chunk; 0 streams word by word. */
  chunk_chars: z.number().int().min(0).max(10_000).default(0),
  /** Fail with `scripted_fault` after this many model events (text chunks and tool calls) of a turn. */
  fail_after_events: z.number().int().min(0).nullable().default(null),
  /** Fail before producing anything. */
  fail_before_first: z.boolean().default(false),
});
export type LocalTestingT = z.infer<typeof LocalTesting>;

/** D-56: the first line of a form submission from the widget. */
const FORM_SUBMISSION = /^Submitted the form "([^"\n]*)":\n/;

export interface LocalEngineOptions {
  forms: Map<string, FormTemplateT>;
  testing?: Partial<LocalTestingT>;
}

interface Turn {
  text: string;
  call?: { name: string; args: Record<string, unknown> };
}

export class LocalEngine implements ModelEngine {
  readonly id = 'local';
  private readonly testing: LocalTestingT;

  constructor(private readonly opts: LocalEngineOptions) {
    this.testing = LocalTesting.parse(opts.testing ?? {});
  }

  async *generate(request: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelEvent> {
    const t = this.testing;
    // The service starts a turn before it writes `response.created` (so that a remote model's request
    // is already on its way). This engine has no request to send: it plans its turn synchronously,
    // and doing that first would only hold back the event clients are waiting for. So it plans on the
    // next turn of the event loop, once the event is out (bench: time to first event).
    await new Promise<void>((resolve) => setImmediate(resolve));
    signal.throwIfAborted();
    if (t.fail_before_first) {
      if (t.latency_ms) await delay(t.latency_ms, undefined, { signal });
      throw new ModelError('scripted_fault', 'The app is configured to fail before the first event (agent.testing.fail_before_first).');
    }
    const turn = this.plan(request);
    const chunks = this.chunks(turn.text);
    let events = 0;
    const step = async () => {
      if (t.fail_after_events !== null && events >= t.fail_after_events) {
        throw new ModelError(
          'scripted_fault',
          `The app is configured to fail after ${t.fail_after_events} events (agent.testing.fail_after_events).`,
        );
      }
      events++;
      if (t.latency_ms) await delay(t.latency_ms, undefined, { signal });
      signal.throwIfAborted();
    };
    for (const delta of chunks) {
      await step();
      yield { type: 'text', delta };
    }
    let outputText = turn.text;
    if (turn.call) {
      await step();
      const args = JSON.stringify(turn.call.args);
      outputText += args;
      yield { type: 'tool_call', call: { name: turn.call.name, arguments: args } };
    }
    yield { type: 'done', usage: { input_tokens: estimateInputTokens(request), output_tokens: countTokens(outputText) } };
  }

  async title(req: TitleRequest): Promise<Record<'en-ca' | 'fr-ca', string>> {
    if (req.source) return { 'en-ca': req.source.en, 'fr-ca': req.source.fr };
    const form = this.matchForm(req.firstMessage, [...this.opts.forms.keys()]);
    if (form) return { 'en-ca': form.template.title, 'fr-ca': form.template.title_fr };
    if (recognise(req.firstMessage)?.kind === 'greeting') return { 'en-ca': 'Greetings', 'fr-ca': 'Salutations' };
    const words = keywords(req.firstMessage, 4);
    if (words.length === 0) return { 'en-ca': 'New conversation', 'fr-ca': 'Nouvelle conversation' };
    const topic = words.join(' ');
    return { 'en-ca': truncate(topic[0]!.toUpperCase() + topic.slice(1), 60), 'fr-ca': truncate(`Discussion : ${topic}`, 60) };
  }

  /** Decides this turn: what to say and which tool, if any, to call. */
  private plan(req: ModelRequest): Turn {
    const last = req.messages.at(-1);
    const name = dataString(req.metadata.user_name) ?? dataString(req.metadata.name);
    // The name greets the first reply of a conversation only; later replies get on with it.
    const hello = name && !repliedBefore(req.messages) ? `Hi ${name}! ` : '';
    if (last?.role === 'tool') {
      // The greeting belongs at the start of the reply: only when this turn's earlier text had none.
      const greet = thisResponseText(req.messages) === '' ? hello : '';
      return { text: greet + this.afterTool(last) };
    }
    const text = last?.role === 'user' ? last.content : '';
    // A form sent back by the widget (docs/widget.md, D-56) is an answer, not a request for a form.
    const submitted = FORM_SUBMISSION.exec(text);
    if (submitted) {
      const answered = text.split('\n').filter((l) => l.startsWith('- ') && !l.endsWith(': (empty)')).length;
      return { text: `${hello}Thank you! I received the “${submitted[1]}” form with ${answered} answer${answered === 1 ? '' : 's'}.` };
    }
    const tools = new Set(req.tools.map((t) => t.name));
    const formNames = tools.has('render_form') ? formEnum(req) : [];
    const intent = recognise(text);
    // A writing request is answered even when it names a form's topic ("write a feedback message").
    if (intent?.kind !== 'write' && formNames.length) {
      const form = this.matchForm(text, formNames);
      if (form) {
        return { text: `${hello}Here is the “${form.template.title}” form.`, call: { name: 'render_form', args: { form: form.name } } };
      }
    }
    if (intent) {
      const abilities = {
        agentName: req.agentName,
        userName: name,
        knowledgeBase: tools.has('knowledge_search'),
        forms: formNames,
        conversation: req.kind === 'response',
      };
      // The greeting already names the user; other answers get the first-reply greeting.
      return { text: (intent.kind === 'greeting' ? '' : hello) + intentAnswer(intent, abilities) };
    }
    if (tools.has('knowledge_search')) {
      return { text: '', call: { name: 'knowledge_search', args: { query: truncate(text.replace(/[?!.]+$/, ''), 200) } } };
    }
    return { text: hello + this.plainAnswer(req, text) };
  }

  private afterTool(msg: Extract<ChatMessage, { role: 'tool' }>): string {
    let result: {
      query?: string;
      results?: Array<{ document: string; title: string; passage: string }>;
      form?: string;
      submit_label?: string;
      error?: string;
    };
    try {
      result = JSON.parse(msg.content);
    } catch {
      result = {};
    }
    if (result.error) return `I could not use ${msg.name}: ${result.error}`;
    if (msg.name === 'render_form') return `Fill it in and press “${result.submit_label ?? 'Submit'}” when you are ready.`;
    const hits = result.results ?? [];
    if (hits.length === 0) return nothingFound(result.query ?? '');
    const [best, ...rest] = hits;
    let answer = `According to “${best!.title}” (${best!.document}): ${sentences(best!.passage, 2)}`;
    const other = rest.find((h) => h.document !== best!.document);
    if (other) answer += ` See also “${other.title}” (${other.document}).`;
    return answer;
  }

  private plainAnswer(req: ModelRequest, text: string): string {
    const topic = keywords(text, 3);
    const earlier = [...req.messages.slice(0, -1)].reverse().find((m) => m.role === 'user');
    const parts: string[] = [];
    if (req.kind === 'completion') {
      const subject = keywords(
        text.replace(/\b(write|draft|compose|create|make|give|generate|summari[sz]e|produce|short|brief|quick)\b/gi, ' '),
        3,
      );
      parts.push(subject.length ? `Here is a short draft about ${subject.join(', ')}.` : 'Here is a short draft.');
      parts.push(
        `${req.agentName} runs on Parley's embedded offline engine, which writes from a knowledge base and fixed templates rather than a language model.`,
      );
    } else {
      parts.push(topic.length ? `You asked about ${topic.join(', ')}.` : 'I read your message.');
      parts.push(
        `I'm ${req.agentName}, running on Parley's embedded offline engine: I have no knowledge base for this app, so I cannot look that up.`,
      );
      if (earlier && earlier.role === 'user') {
        const before = keywords(earlier.content, 3);
        if (before.length) parts.push(`Earlier in this conversation you mentioned ${before.join(', ')}.`);
      }
    }
    parts.push('Start Parley with PARLEY_MODEL=ollama:<model> for answers from a real language model.');
    return parts.join(' ');
  }

  private matchForm(text: string, allowed: string[]): { name: string; template: FormTemplateT } | undefined {
    const lower = ` ${text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ')} `;
    for (const name of allowed) {
      const template = this.opts.forms.get(name);
      if (template?.keywords.some((k) => lower.includes(` ${k.toLowerCase()}`))) return { name, template };
    }
    // Asking for "a form" without saying which gets the first one the app offers.
    const first = allowed.find((n) => this.opts.forms.has(n));
    if (first && /\sforms?\s/.test(lower)) return { name: first, template: this.opts.forms.get(first)! };
    return undefined;
  }

  private chunks(text: string): string[] {
    if (!text) return [];
    const n = this.testing.chunk_chars;
    if (n > 0) {
      const chars = Array.from(text);
      const out: string[] = [];
      for (let i = 0; i < chars.length; i += n) out.push(chars.slice(i, i + n).join(''));
      return out;
    }
    return text.match(/\s*\S+/g) ?? [text];
  }
}

/** D-111: no passage is relevant to the query: said plainly, in the language it was asked in. */
function nothingFound(query: string): string {
  const q = truncate(query, 80);
  return languageOf(query) === 'fr'
    ? `Je n’ai rien trouvé sur « ${q} » dans la base de connaissances : je ne peux donc pas y répondre de façon fiable. Essayez d’autres mots, ou posez une question sur un autre sujet.`
    : `I found nothing about “${q}” in the knowledge base, so I cannot answer that reliably. Try other words, or ask about another topic.`;
}

/** The forms the render_form tool offers in this request (its `form` enum). */
function formEnum(req: ModelRequest): string[] {
  const tool = req.tools.find((t) => t.name === 'render_form');
  const props = (tool?.parameters as { properties?: { form?: { enum?: string[] } } } | undefined)?.properties;
  return props?.form?.enum ?? [];
}

/** The assistant answered earlier in the conversation (before the last user message). */
function repliedBefore(messages: ChatMessage[]): boolean {
  let i = messages.length - 1;
  while (i >= 0 && messages[i]!.role !== 'user') i--;
  return messages.slice(0, Math.max(i, 0)).some((m) => m.role === 'assistant');
}

/** Text the assistant already produced in this response (turns after the last user message). */
function thisResponseText(messages: ChatMessage[]): string {
  let out = '';
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role !== 'user'; i--) {
    const m = messages[i]!;
    if (m.role === 'assistant') out = m.content + out;
  }
  return out;
}
