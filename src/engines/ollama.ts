// The Ollama engine (`ollama:<model>`): a real LLM through the `ollama` client, one client per request
// so that a disconnecting caller aborts only its own generation (D-19). Tools run in the service;
// Ollama's failures become model errors with clear codes (D-17).
import { Ollama, type ChatResponse, type Message, type Tool } from 'ollama';
import { patientFetch } from './ollama-fetch.ts';
import { boundFetch, parseTitle, safeParse, systemPrompt, TITLE_SCHEMA, titleMessages, untilAborted } from './prompt.ts';
import {
  ModelError,
  ownModelError,
  type ChatMessage,
  type ModelEngine,
  type ModelEvent,
  type ModelRequest,
  type TitleRequest,
} from './types.ts';

export interface OllamaEngineOptions {
  /** e.g. `http://127.0.0.1:11434` */
  host: string;
  model: string;
  /** Defaults to `patientFetch()`; tests pass the global fetch so that msw can answer. */
  fetch?: typeof fetch;
}

function toOllamaMessages(req: ModelRequest): Message[] {
  const out: Message[] = [{ role: 'system', content: systemPrompt(req) }];
  for (const m of req.messages as ChatMessage[]) {
    if (m.role === 'tool') out.push({ role: 'tool', content: m.content, tool_name: m.name });
    else if (m.role === 'assistant' && m.tool_calls?.length) {
      out.push({
        role: 'assistant',
        content: m.content,
        tool_calls: m.tool_calls.map((c) => ({ function: { name: c.name, arguments: safeParse(c.arguments) } })),
      });
    } else out.push({ role: m.role, content: m.content });
  }
  return out;
}

function toOllamaTools(req: ModelRequest): Tool[] {
  return req.tools.map((t) => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: t.parameters as Tool['function']['parameters'] },
  }));
}

/**
 * Maps whatever the client threw to a ModelError; an abort stays an abort. `streaming`: Ollama had
 * already answered, so a transport failure is a connection lost mid-generation, not an unreachable Ollama.
 */
export function mapOllamaError(err: unknown, host: string, model: string, signal: AbortSignal, streaming = false): unknown {
  if (signal.aborted) return signal.reason ?? err;
  const own = ownModelError(err);
  if (own) return own;
  const e = err as { name?: string; status_code?: number; message?: string; cause?: { code?: string } };
  if (e?.name === 'ResponseError') {
    const msg = e.message ?? '';
    if (e.status_code === 404)
      return new ModelError(
        'model_not_found',
        `Ollama has no model ${JSON.stringify(model)}: run \`ollama pull ${model}\` (Ollama said: ${msg})`,
      );
    if (e.status_code === 503 || e.status_code === 429)
      return new ModelError('model_busy', `Ollama is busy; try again shortly (Ollama said: ${msg})`);
    return new ModelError('model_error', `Ollama refused the request (HTTP ${e.status_code}): ${msg}`);
  }
  const transport = e?.name === 'TypeError' || e?.cause?.code === 'ECONNREFUSED' || e?.cause?.code === 'ENOTFOUND';
  if (transport && streaming) {
    // undici's `TypeError('terminated')`: the socket closed under a reply already under way.
    return new ModelError(
      'model_error',
      `The connection to Ollama at ${host} was lost during the generation (${e?.message ?? 'terminated'}); try again`,
    );
  }
  if (transport) {
    return new ModelError('model_unreachable', `Ollama is not reachable at ${host}; start it with \`ollama serve\` or set OLLAMA_HOST`);
  }
  // An `{"error": …}` line in the middle of the stream arrives as a plain Error.
  return new ModelError('model_error', `Ollama failed during the generation: ${e?.message ?? String(err)}`);
}

export class OllamaEngine implements ModelEngine {
  readonly id: string;
  /** Learnt from Ollama's answers, so that later requests do not pay for a refused first try. */
  private thinkingUnsupported = false;
  private toolsUnsupported = false;
  private readonly fetch: typeof fetch;

  constructor(private readonly opts: OllamaEngineOptions) {
    this.id = `ollama:${opts.model}`;
    this.fetch = opts.fetch ?? patientFetch();
  }

  /** One client per request (abort() on a client aborts all its streams), bound to the caller's signal. */
  private client(signal: AbortSignal): Ollama {
    return new Ollama({ host: this.opts.host, fetch: boundFetch(this.fetch, signal) });
  }

  async *generate(request: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelEvent> {
    const client = this.client(signal);
    const messages = toOllamaMessages(request);
    let tools = this.toolsUnsupported ? [] : toOllamaTools(request);
    // §4.7 `fast`: no reasoning step; otherwise think where the model can.
    let think = !request.fast && !this.thinkingUnsupported;
    let stream: AsyncIterable<ChatResponse>;
    for (;;) {
      try {
        stream = await client.chat({ model: this.opts.model, messages, tools: tools.length ? tools : undefined, think, stream: true });
        break;
      } catch (err) {
        const e = err as { name?: string; status_code?: number; message?: string };
        if (think && e?.name === 'ResponseError' && e.status_code === 400 && /does not support thinking/i.test(e.message ?? '')) {
          this.thinkingUnsupported = true;
          think = false;
          continue;
        }
        // A model without tool support still answers, only without the knowledge base or forms.
        if (tools.length && e?.name === 'ResponseError' && e.status_code === 400 && /does not support tools/i.test(e.message ?? '')) {
          this.toolsUnsupported = true;
          tools = [];
          continue;
        }
        throw mapOllamaError(err, this.opts.host, this.opts.model, signal);
      }
    }
    try {
      for await (const chunk of untilAborted(stream, signal)) {
        const m = chunk.message;
        if (m?.content) yield { type: 'text', delta: m.content };
        for (const call of m?.tool_calls ?? []) {
          yield { type: 'tool_call', call: { name: call.function.name, arguments: JSON.stringify(call.function.arguments ?? {}) } };
        }
        if (chunk.done) {
          yield { type: 'done', usage: { input_tokens: chunk.prompt_eval_count ?? 0, output_tokens: chunk.eval_count ?? 0 } };
          return;
        }
      }
    } catch (err) {
      throw mapOllamaError(err, this.opts.host, this.opts.model, signal, true);
    } finally {
      client.abort();
    }
    if (!signal.aborted) throw new ModelError('model_error', 'Ollama ended the stream without finishing the generation');
  }

  /** D-8: both locales at once, as JSON constrained by a schema through `format`. */
  async title(req: TitleRequest, signal: AbortSignal): Promise<Record<'en-ca' | 'fr-ca', string>> {
    const client = this.client(signal);
    let text = '';
    try {
      const stream = await client.chat({
        model: this.opts.model,
        stream: true,
        think: false,
        format: TITLE_SCHEMA,
        messages: titleMessages(req),
      });
      for await (const chunk of untilAborted(stream, signal)) text += chunk.message?.content ?? '';
    } catch (err) {
      throw mapOllamaError(err, this.opts.host, this.opts.model, signal);
    } finally {
      client.abort();
    }
    const title = parseTitle(text);
    if (!title) throw new ModelError('model_error', 'Ollama gave no usable title');
    return title;
  }
}
