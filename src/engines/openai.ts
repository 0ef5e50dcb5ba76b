// The OpenAI-compatible engine (`openai:<model>`, D-143): any server speaking the Chat Completions API
// (llama.cpp's server, vLLM, LM Studio, LiteLLM, a hosted model) through the official `openai` client,
// streamed, its tool calls run by the service as on Ollama. The client's retries are off: Parley's own
// rules (D-17, D-34) decide what a failure does.
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { patientFetch } from './ollama-fetch.ts';
import { boundFetch, parseTitle, systemPrompt, TITLE_SCHEMA, titleMessages, untilAborted } from './prompt.ts';
import { countTokens, estimateInputTokens } from './text.ts';
import {
  ModelError,
  ownModelError,
  type ModelEngine,
  type ModelEvent,
  type ModelRequest,
  type TitleRequest,
  type ToolCall,
} from './types.ts';

export interface OpenAIEngineOptions {
  /** OPENAI_BASE_URL, e.g. `http://127.0.0.1:8080/v1`: required, there is no default that leaves the machine. */
  baseUrl: string;
  /** OPENAI_API_KEY; without one no Authorization header is sent (local servers need none). */
  apiKey?: string | null;
  model: string;
  /** Defaults to `patientFetch()` (no time limits of its own); the tape layer wraps it (D-140). */
  fetch?: typeof fetch;
  /** How long to wait for the server's answer to begin: past it, `model_timeout` (the client's own default). */
  timeoutMs?: number;
}

/** The `openai` client's own default: a long prompt on a busy server may take minutes before its first byte. */
const DEFAULT_TIMEOUT_MS = 600_000;

function toMessages(req: ModelRequest): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [{ role: 'system', content: systemPrompt(req) }];
  for (const m of req.messages) {
    if (m.role === 'tool') out.push({ role: 'tool', tool_call_id: m.call_id, content: m.content });
    else if (m.role === 'assistant' && m.tool_calls?.length) {
      out.push({
        role: 'assistant',
        content: m.content || null,
        tool_calls: m.tool_calls.map((c) => ({ id: c.call_id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
      });
    } else out.push({ role: m.role, content: m.content });
  }
  return out;
}

function toTools(req: ModelRequest): ChatCompletionTool[] {
  return req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
}

/** A tool call as its deltas build it: the name in the first, the arguments in pieces across chunks. */
interface PartialCall {
  name: string;
  arguments: string;
}

/** Folds one chunk's tool-call deltas into the calls under way, by their index. */
function foldToolDeltas(calls: Map<number, PartialCall>, chunk: ChatCompletionChunk): void {
  for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) {
    const call = calls.get(d.index) ?? { name: '', arguments: '' };
    if (d.function?.name) call.name += d.function.name;
    if (d.function?.arguments) call.arguments += d.function.arguments;
    calls.set(d.index, call);
  }
}

/** The finished calls in their order; arguments that are not a JSON object become `{}` (§2.4 items carry JSON). */
function finishedCalls(calls: Map<number, PartialCall>): ToolCall[] {
  return [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .filter(([, c]) => c.name)
    .map(([, c]) => ({ name: c.name, arguments: validJson(c.arguments) }));
}

function validJson(s: string): string {
  try {
    const v = JSON.parse(s || '{}') as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? JSON.stringify(v) : '{}';
  } catch {
    return '{}';
  }
}

export class OpenAIEngine implements ModelEngine {
  readonly id: string;
  private readonly fetch: typeof fetch;

  constructor(private readonly opts: OpenAIEngineOptions) {
    this.id = `openai:${opts.model}`;
    this.fetch = opts.fetch ?? patientFetch();
  }

  /** One client per call, bound to the caller's signal: a reply that stops aborts its upstream request (D-19, D-34). */
  private client(signal: AbortSignal): OpenAI {
    const base = boundFetch(this.fetch, signal);
    const key = this.opts.apiKey || undefined;
    // Without a key the client would refuse to start, so it gets a placeholder that never leaves: the header is dropped.
    const withoutKey = ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      const headers = new Headers(init?.headers);
      headers.delete('authorization');
      return base(input, { ...init, headers });
    }) as typeof fetch;
    return new OpenAI({
      baseURL: this.opts.baseUrl,
      apiKey: key ?? 'none',
      organization: null,
      project: null,
      maxRetries: 0,
      timeout: this.opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      fetch: key ? base : withoutKey,
      // Its log lines would carry request details: Parley logs what it needs itself.
      logLevel: 'off',
    });
  }

  async *generate(request: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelEvent> {
    const client = this.client(signal);
    const tools = toTools(request);
    let stream: AsyncIterable<ChatCompletionChunk>;
    try {
      stream = await client.chat.completions.create(
        {
          model: this.opts.model,
          messages: toMessages(request),
          ...(tools.length ? { tools } : {}),
          stream: true,
          stream_options: { include_usage: true },
        },
        { signal },
      );
    } catch (err) {
      throw this.failure(err, signal, false);
    }
    const calls = new Map<number, PartialCall>();
    let said = '';
    let finished = false;
    let usage: { input_tokens: number; output_tokens: number } | undefined;
    try {
      for await (const chunk of untilAborted(stream, signal)) {
        const text = chunk.choices[0]?.delta?.content;
        if (text) {
          said += text;
          yield { type: 'text', delta: text };
        }
        foldToolDeltas(calls, chunk);
        if (chunk.choices[0]?.finish_reason) finished = true;
        if (chunk.usage) usage = { input_tokens: chunk.usage.prompt_tokens ?? 0, output_tokens: chunk.usage.completion_tokens ?? 0 };
      }
    } catch (err) {
      throw this.failure(err, signal, true);
    }
    signal.throwIfAborted();
    // A stream that ends before its finish_reason was cut, whatever the transport said.
    if (!finished)
      throw new ModelError('model_error', `The server at ${this.opts.baseUrl} ended the stream before the generation finished; try again`);
    for (const call of finishedCalls(calls)) yield { type: 'tool_call', call };
    // Usage is the server's when it sends it (stream_options.include_usage); an estimate otherwise.
    yield { type: 'done', usage: usage ?? { input_tokens: estimateInputTokens(request), output_tokens: countTokens(said) } };
  }

  /** D-8: both locales at once, as JSON constrained by a schema through `response_format`. */
  async title(req: TitleRequest, signal: AbortSignal): Promise<Record<'en-ca' | 'fr-ca', string>> {
    const client = this.client(signal);
    let text = '';
    try {
      const stream = await client.chat.completions.create(
        {
          model: this.opts.model,
          messages: titleMessages(req),
          response_format: { type: 'json_schema', json_schema: { name: 'title', schema: TITLE_SCHEMA } },
          stream: true,
        },
        { signal },
      );
      for await (const chunk of untilAborted(stream, signal)) text += chunk.choices[0]?.delta?.content ?? '';
    } catch (err) {
      throw this.failure(err, signal, false);
    }
    const title = parseTitle(text);
    if (!title) throw new ModelError('model_error', `The server at ${this.opts.baseUrl} gave no usable title`);
    return title;
  }

  /**
   * D-144: whatever the client threw, as a ModelError with Parley's code; an abort stays an abort.
   * `streaming`: the server had answered, so a transport failure is a cut stream. The key never
   * appears in a message: a server's own words are kept only with it removed.
   */
  private failure(err: unknown, signal: AbortSignal, streaming: boolean): unknown {
    if (signal.aborted) return signal.reason ?? err;
    const own = ownModelError(err);
    if (own) return own;
    const where = `the server at ${this.opts.baseUrl}`;
    const said = (e: Error) => this.redact(e.message);
    if (err instanceof APIUserAbortError) return signal.reason ?? err;
    if (err instanceof APIConnectionTimeoutError) return new ModelError('model_timeout', `${where} did not answer in time; try again`);
    if (err instanceof APIError && err.status !== undefined) {
      if (err.status === 401) return new ModelError('model_unauthorized', `${where} refused the credentials: check OPENAI_API_KEY`);
      if (err.status === 404)
        return new ModelError('model_not_found', `${where} has no model ${JSON.stringify(this.opts.model)} (it said: ${said(err)})`);
      if (err.status === 429) {
        const after = err.headers?.get('retry-after');
        return new ModelError(
          'model_busy',
          `${where} is busy${after ? `; retry after ${after} s` : '; try again shortly'} (it said: ${said(err)})`,
        );
      }
      return new ModelError('model_error', `${where} refused the request (HTTP ${err.status}): ${said(err)}`);
    }
    if (err instanceof APIConnectionError || !streaming) {
      if (streaming) return new ModelError('model_error', `The connection to ${where} was lost during the generation; try again`);
      return new ModelError('model_unreachable', `${where} is not reachable; start it or set OPENAI_BASE_URL`);
    }
    // An error event in the stream arrives as an APIError without a status; a cut body as a TypeError.
    if (err instanceof APIError) return new ModelError('model_error', `${where} failed during the generation: ${said(err)}`);
    return new ModelError('model_error', `The connection to ${where} was lost during the generation; try again`);
  }

  private redact(text: string): string {
    const key = this.opts.apiKey;
    return key ? text.split(key).join('[OPENAI_API_KEY]') : text;
  }
}
