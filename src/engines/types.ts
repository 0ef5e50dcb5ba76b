// The model interface: one `generate` call streams model events; the engines behind it are swappable.

/** A turn of the conversation as the model sees it. Tool results come back as `tool` turns. */
export type ChatMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; tool_calls?: Array<ToolCall & { call_id: string }> }
  | { role: 'tool'; name: string; call_id: string; content: string };

/** A tool call as the model makes it; the service gives it its `call_id` (D-7). */
export interface ToolCall {
  name: string;
  /** JSON-encoded arguments, exactly as they appear in the function_call item (§2.4). */
  arguments: string;
}

/** A tool the service offers to the model (D-21): it executes every call itself. */
export interface ToolSpec {
  name: 'knowledge_search' | 'render_form';
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  /** `response` (a conversation) or `completion` (§4.7: no history, only knowledge_search). */
  kind: 'response' | 'completion';
  agentName: string;
  /** The agent's instructions: the only instructions the model gets. */
  instructions: string;
  /** Caller context, always handed to the model as data, never as instructions (§4.1, §4.7). */
  metadata: Record<string, unknown>;
  /** History, then the current user turn, then this response's tool turns so far. */
  messages: ChatMessage[];
  tools: ToolSpec[];
  /** §4.7 `fast`: skip the reasoning step. */
  fast: boolean;
}

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
}

export type ModelEvent =
  | { type: 'text'; delta: string }
  | { type: 'tool_call'; call: ToolCall }
  | { type: 'done'; usage: TokenUsage }
  | { type: 'error'; code: string; message: string };

export interface TitleRequest {
  firstMessage: string;
  reply: string;
  /** What the exchange was about when the service knows it (the document found, the form shown). */
  source?: { en: string; fr: string };
}

export interface ModelEngine {
  /** `local` or `ollama:<model>`: logged and shown in errors. */
  readonly id: string;
  /**
   * Streams one model turn. A turn that asks for tools ends after its tool calls (with `done`);
   * the service runs them and calls `generate` again with their results. Aborting `signal`
   * stops the generation at once.
   */
  generate(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent>;
  /** D-8: a short title per locale for a conversation's first exchange. */
  title(request: TitleRequest, signal: AbortSignal): Promise<Record<'en-ca' | 'fr-ca', string>>;
}

/** An engine failure with a code that ends up in the failed response's error (D-17). */
export class ModelError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

/**
 * A ModelError raised under a client (at the wire seam: a tape that is missing), found where the
 * client wrapped it, so that its code reaches the response rather than the client's own mapping.
 */
export function ownModelError(err: unknown): ModelError | undefined {
  for (let e = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ModelError) return e;
  }
  return undefined;
}
