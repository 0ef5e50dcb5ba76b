// Runs one response: drives the model through its tool rounds and turns its events into the §6
// events (unsequenced) while building the output items from the very same events, so that the SSE
// stream and the JSON body can never disagree (§6 rule 4).
import type { OutputItemT, ResponseErrorT, UnsequencedEvent, UsageT } from '../contract/index.ts';
import { internalError } from '../http/errors.ts';
import { EventStream } from '../http/reply.ts';
import { countTokens, estimateInputTokens } from '../engines/text.ts';
import { ModelError, type ChatMessage, type ModelEngine, type ModelRequest } from '../engines/types.ts';
import { newId } from '../core/ids.ts';
import { runTool, type ToolBox } from './tools.ts';

/** At most this many model turns per response: a model that keeps calling tools must then answer. */
const MAX_TOOL_ROUNDS = 4;

export interface RunOptions {
  id: string;
  /** `response` carries a conversation id and every item kind; `completion` only text (§6 rule 2). */
  kind: 'response' | 'completion';
  conversationId?: string;
  engine: ModelEngine;
  request: ModelRequest;
  tools: ToolBox;
  signal: AbortSignal;
  /** Called once the output is final, before the terminal event: persistence goes here. */
  finish(run: ResponseRun): Promise<void>;
  /** Told about failures that are not the model's (bugs), which the response only names vaguely. */
  onUnexpected?(err: unknown): void;
}

type MessageItem = Extract<OutputItemT, { type: 'message' }>;

/** One model turn: what it was asked (its first `inputMessages` messages) and what it said so far. */
interface Turn {
  request: ModelRequest;
  inputMessages: number;
  said: string;
  calls: string;
  /** The model produced an event. */
  began: boolean;
}

export class ResponseRun {
  readonly output: OutputItemT[] = [];
  status: 'in_progress' | 'completed' | 'failed' = 'in_progress';
  error: ResponseErrorT | undefined;
  /** The output could not be made durable: see `answerOf`, the one place a failed save is handled. */
  unsaved = false;
  readonly usage: UsageT = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  /** What the exchange was about (a document found, a form shown), for titles (D-8). */
  source: { en: string; fr: string } | undefined;
  private open: { index: number; text: string } | undefined;
  /** The model turn under way, until its `done` brings the real token counts. */
  private turn: Turn | undefined;

  constructor(private readonly opts: RunOptions) {}

  get id(): string {
    return this.opts.id;
  }

  /** All the text of the reply, in order (the completion's `text`). */
  get text(): string {
    return this.output
      .filter((i): i is MessageItem => i.type === 'message')
      .map((i) => (i.content ?? []).map((p) => p.text ?? '').join(''))
      .join('');
  }

  async *events(): AsyncGenerator<UnsequencedEvent> {
    const o = this.opts;
    // The model starts before `response.created` is written, not after: a remote model's request is
    // on its way while the event goes out (time to first token: docs/benchmarks.md).
    const rounds = this.rounds();
    const first = rounds.next();
    first.catch(() => {}); // awaited below; a failure before then is not an unhandled rejection
    let finished = false;
    try {
      yield {
        event: 'response.created',
        data: { id: o.id, object: o.kind, status: 'in_progress', ...(o.kind === 'response' ? { conversation_id: o.conversationId } : {}) },
      };
      finished = true;
    } finally {
      // A consumer that leaves at `response.created` ends the model's round too.
      // (An async generator queues the return behind the pending next.)
      if (!finished) void rounds.return(undefined).catch(() => {});
    }
    try {
      yield* resumed(rounds, first);
      yield* this.closeText();
      this.status = 'completed';
    } catch (err) {
      this.status = 'failed';
      this.error = toResponseError(err, o.signal);
      if (this.error.code === 'internal_error') o.onUnexpected?.(err);
      this.estimateUnfinishedTurn();
    }
    try {
      await o.finish(this);
    } catch (err) {
      o.onUnexpected?.(err);
      this.status = 'failed';
      this.unsaved = true;
      this.error = unsavedError(o.kind);
    }
    // `usage` (an extension, as in the JSON body) after D-16's fields; a save that failed reports none.
    const usage = this.unsaved ? {} : { usage: { ...this.usage } };
    if (this.status === 'completed') {
      yield { event: 'response.completed', data: { id: o.id, status: 'completed', ...usage } };
    } else {
      yield { event: 'response.failed', data: { id: o.id, status: 'failed', error: this.error!, ...usage } };
    }
  }

  /**
   * A turn that failed or was cut off brought no token counts: bill an estimate of its input and of
   * what it generated so far, if the model was at work on it (it produced something, or the client
   * left while it ran). A model that refused the turn outright (not found, unreachable, busy) did none.
   */
  private estimateUnfinishedTurn(): void {
    const t = this.turn;
    this.turn = undefined;
    if (!t || !(t.began || this.opts.signal.aborted)) return;
    this.usage.input_tokens += estimateInputTokens({ ...t.request, messages: t.request.messages.slice(0, t.inputMessages) });
    this.usage.output_tokens += countTokens(t.said) + countTokens(t.calls);
    this.usage.total_tokens = this.usage.input_tokens + this.usage.output_tokens;
  }

  private async *rounds(): AsyncGenerator<UnsequencedEvent> {
    const o = this.opts;
    const messages: ChatMessage[] = [...o.request.messages];
    for (let round = 0; ; round++) {
      // The last round offers no tools, so the model has to answer.
      const tools = round < MAX_TOOL_ROUNDS - 1 ? o.request.tools : [];
      const calls: Array<{ call_id: string; name: string; arguments: string }> = [];
      const request = { ...o.request, tools, messages };
      // Tool results are pushed onto `messages` during the turn: the turn's input is what came before.
      const turn: Turn = { request, inputMessages: messages.length, said: '', calls: '', began: false };
      this.turn = turn;
      for await (const e of o.engine.generate(request, o.signal)) {
        o.signal.throwIfAborted();
        turn.began = true;
        if (e.type === 'text') {
          if (!e.delta) continue;
          turn.said += e.delta;
          yield* this.textDelta(e.delta);
        } else if (e.type === 'tool_call') {
          const call = { call_id: newId('call'), name: e.call.name, arguments: e.call.arguments };
          calls.push(call);
          turn.calls += call.arguments;
          yield* this.toolCall(call, messages);
        } else if (e.type === 'done') {
          this.turn = undefined;
          this.usage.input_tokens += e.usage.input_tokens;
          this.usage.output_tokens += e.usage.output_tokens;
          this.usage.total_tokens = this.usage.input_tokens + this.usage.output_tokens;
        } else {
          throw new ModelError(e.code, e.message);
        }
      }
      if (calls.length === 0) return;
      // The assistant's turn goes before its tool results, as chat models expect.
      const firstTool = messages.length - calls.length;
      messages.splice(firstTool, 0, { role: 'assistant', content: turn.said, tool_calls: calls });
    }
  }

  private async *textDelta(delta: string): AsyncGenerator<UnsequencedEvent> {
    if (!this.open) {
      this.open = { index: this.output.length, text: '' };
      this.output.push({ type: 'message', role: 'assistant', content: [{ type: 'text', text: '' }] });
    }
    this.open.text += delta;
    (this.output[this.open.index] as MessageItem).content![0]!.text = this.open.text;
    yield { event: 'response.output_text.delta', data: { delta, output_index: this.open.index, content_index: 0 } };
  }

  /** Ends the open message item. A completion keeps one message for all its text (§6 rule 2). */
  private async *closeText(): AsyncGenerator<UnsequencedEvent> {
    if (this.opts.kind === 'completion' && !this.open) {
      // A completion always reports its text, even an empty one.
      this.open = { index: 0, text: '' };
      this.output.push({ type: 'message', role: 'assistant', content: [{ type: 'text', text: '' }] });
    }
    if (!this.open) return;
    const { index, text } = this.open;
    this.open = undefined;
    yield { event: 'response.output_text.done', data: { text, output_index: index, content_index: 0 } };
  }

  private async *toolCall(
    call: { call_id: string; name: string; arguments: string },
    messages: ChatMessage[],
  ): AsyncGenerator<UnsequencedEvent> {
    const o = this.opts;
    const result = runTool(o.tools, call.name, call.arguments);
    messages.push({ role: 'tool', name: call.name, call_id: call.call_id, content: result.content });
    this.source ??= result.source;
    if (o.kind === 'completion') return; // §6 rule 2: tool use stays invisible in a completion.
    if (result.patches) {
      // render_form becomes data_spec items (D-21, D-22), interleaved with the text around it.
      yield* this.closeText();
      for (const data of result.patches) {
        const output_index = this.output.length;
        this.output.push({ type: 'data_spec', data });
        yield { event: 'response.data_spec', data: { data, output_index } };
      }
      return;
    }
    yield* this.closeText();
    const output_index = this.output.length;
    this.output.push({ type: 'function_call', name: call.name, arguments: call.arguments, call_id: call.call_id });
    yield { event: 'response.function_call.start', data: { output_index, call_id: call.call_id, name: call.name } };
    yield { event: 'response.function_call_arguments.delta', data: { output_index, call_id: call.call_id, delta: call.arguments } };
    yield {
      event: 'response.function_call_arguments.done',
      data: { output_index, call_id: call.call_id, name: call.name, arguments: call.arguments },
    };
  }
}

// ---------------------------------------------------------------------------------------------
// A failed save (a full disk): the one place it is handled. Not a model failure (D-17) but the
// server's (D-5): nothing of the run was saved (the store's save is all or nothing), so the client
// must not believe it was, and an Idempotency-Key retry must run again.
// ---------------------------------------------------------------------------------------------

/** The error a run whose save failed ends with (its terminal event reports no usage). */
function unsavedError(kind: RunOptions['kind']): ResponseErrorT {
  return {
    type: 'internal_error',
    code: 'internal_error',
    message:
      kind === 'response'
        ? 'The response could not be saved because of a server storage error; it was not added to the conversation. Retry the message.'
        : 'The completion could not be recorded because of a server storage error. Retry the request.',
  };
}

/**
 * A run's answer: its events as a stream, or, in JSON mode, the body `result` gives once it ran to
 * the end (§6 rule 4: the same events). A run whose save failed answers 500 in JSON mode; as a
 * stream (its 200 already sent) it ends with `response.failed` and its outcome says it was not
 * saved, so that the idempotency stage does not keep it.
 */
export async function answerOf<T>(run: ResponseRun, stream: boolean, result: () => T, requestId: string): Promise<T | EventStream> {
  if (stream) return new EventStream(run.events(), () => ({ saved: !run.unsaved }));
  for await (const _ of run.events());
  if (run.unsaved) throw internalError(requestId);
  return result();
}

/** The rest of `gen`, whose first `next()` was called already; leaving early ends `gen` too. */
async function* resumed<T>(gen: AsyncGenerator<T>, first: Promise<IteratorResult<T>>): AsyncGenerator<T> {
  try {
    for (let r = await first; !r.done; r = await gen.next()) yield r.value;
  } finally {
    await gen.return(undefined);
  }
}

/**
 * Why a run was stopped on purpose, as its abort reason: the error the response then carries
 * (D-33 cancelled, D-34 past its maximum duration, D-38 interrupted by a shutdown).
 */
export class StopReason extends Error {
  constructor(readonly error: ResponseErrorT) {
    super(error.message);
    this.name = 'StopReason';
  }
}

/** D-17, D-19 (revised by D-34): the error a failed response carries; internals stay in the log. */
function toResponseError(err: unknown, signal: AbortSignal): ResponseErrorT {
  if (signal.aborted && signal.reason instanceof StopReason) return signal.reason.error;
  if (signal.aborted) {
    return { type: 'request_aborted', code: 'client_disconnected', message: 'The client disconnected before the response was complete.' };
  }
  if (err instanceof ModelError) return { type: 'model_error', code: err.code, message: err.message };
  return { type: 'internal_error', code: 'internal_error', message: 'The response failed because of an unexpected server error.' };
}
