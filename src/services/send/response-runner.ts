// Runs one response: drives the model through its tool rounds and turns its events into the §6
// events (unsequenced), folding each one into the output as it hands it out (`foldEvent`, the
// reducer the look-up and recovery use too), so that the SSE stream and the JSON body can never
// disagree (§6 rule 4).
import type { OutputItemT, ResponseErrorT, UnsequencedEvent, UsageT } from '../../contract/index.ts';
import { internalError } from '../../core/api-errors.ts';
import { EventStream } from '../../core/answers.ts';
import { countTokens, estimateInputTokens } from '../../engines/text.ts';
import { ModelError, type ChatMessage, type ModelEngine, type ModelRequest } from '../../engines/types.ts';
import { newId } from '../../core/ids.ts';
import { type Scenario, shapesModel } from '../../core/scenario.ts';
import { ScenarioPlay } from './scenario-pacing.ts';
import { emptyResponse, foldEvent } from './response-fold.ts';
import { STOPS, stopError } from './stops.ts';
import { runTool, type ToolBox } from '../tools.ts';

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
  /** D-120: the request's scenario; its model directives shape the events (./scenario-pacing.ts). */
  scenario?: Scenario;
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
  /** The events handed out so far, folded: `output` is what the stream carried. */
  private readonly folded = emptyResponse();
  readonly output: OutputItemT[] = this.folded.output;
  status: 'in_progress' | 'completed' | 'failed' = 'in_progress';
  error: ResponseErrorT | undefined;
  /** The output could not be made durable: see `answerOf`, the one answer to a failed save. */
  unsaved = false;
  readonly usage: UsageT = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  /** What the exchange was about (a document found, a form shown), for titles (D-8). */
  source: { en: string; fr: string } | undefined;
  /** The index of the message item the text deltas go to, until it is closed. */
  private open: number | undefined;
  /** The model turn under way, until its `done` brings the real token counts. */
  private turn: Turn | undefined;
  /** D-124: the scenario's model directives, when the request carries any. */
  private readonly play: ScenarioPlay | undefined;

  constructor(private readonly opts: RunOptions) {
    this.play = opts.scenario && shapesModel(opts.scenario) ? new ScenarioPlay(opts.scenario) : undefined;
  }

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

  /**
   * The run's events, each folded into `output` before it is handed out (the one place: every event of
   * `produce` passes here, and the next is made only once it has been folded, so item indexes follow).
   */
  async *events(): AsyncGenerator<UnsequencedEvent> {
    for await (const e of this.produce()) {
      foldEvent(this.folded, e);
      yield e;
    }
  }

  private async *produce(): AsyncGenerator<UnsequencedEvent> {
    const o = this.opts;
    // The model starts before `response.created` is handed out, not after: a remote model's request is
    // on its way while the event goes out (time to first token: docs/benchmarks.md).
    const rounds = this.rounds();
    const first = rounds.next();
    first.catch(() => {}); // awaited below; a failure before then is not an unhandled rejection
    let finished = false;
    try {
      yield createdEvent(o);
      finished = true;
    } finally {
      // A consumer that leaves at `response.created` ends the model's round too.
      // (An async generator queues the return behind the pending next.)
      if (!finished) void rounds.return(undefined).catch(() => {});
    }
    try {
      try {
        const play = this.play;
        play?.handedOut();
        await play?.firstToken(o.signal);
        for (let r = await first; !r.done; r = await rounds.next()) {
          yield r.value;
          play?.handedOut();
        }
      } finally {
        // Leaving early ends the model's round too.
        await rounds.return(undefined);
      }
      const done = this.closeText();
      if (done) yield done;
      this.status = 'completed';
    } catch (err) {
      this.status = 'failed';
      this.error = stopError(err, o.signal);
      if (this.error === STOPS.failed) o.onUnexpected?.(err);
      this.estimateUnfinishedTurn();
    }
    try {
      await o.finish(this);
    } catch (err) {
      o.onUnexpected?.(err);
      this.status = 'failed';
      this.unsaved = true;
      this.error = o.kind === 'response' ? STOPS.unsaved : STOPS.unsavedCompletion;
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
          if (!this.play) yield this.textDelta(e.delta);
          else for await (const piece of this.play.paced(e.delta, o.signal)) yield this.textDelta(piece);
        } else if (e.type === 'tool_call') {
          yield* this.heldText();
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
      yield* this.heldText();
      if (calls.length === 0) return;
      // The assistant's turn goes before its tool results, as chat models expect.
      const firstTool = messages.length - calls.length;
      messages.splice(firstTool, 0, { role: 'assistant', content: turn.said, tool_calls: calls });
    }
  }

  /** D-124: the text a scenario's `chunk` still holds back, before anything but text follows. */
  private *heldText(): Generator<UnsequencedEvent> {
    const rest = this.play?.rest();
    if (rest) yield this.textDelta(rest);
  }

  // The events are made one at a time, each once the one before is folded into `output`: an item's
  // index is the output's length when its first event is made.

  private textDelta(delta: string): UnsequencedEvent {
    this.open ??= this.output.length;
    return { event: 'response.output_text.delta', data: { delta, output_index: this.open, content_index: 0 } };
  }

  /** Ends the open message item, if any. A completion keeps one message for all its text (§6 rule 2). */
  private closeText(): UnsequencedEvent | undefined {
    // A completion always reports its text, even an empty one.
    if (this.opts.kind === 'completion') this.open ??= 0;
    if (this.open === undefined) return undefined;
    const index = this.open;
    this.open = undefined;
    const text = (this.output[index] as MessageItem | undefined)?.content?.[0]?.text ?? '';
    return { event: 'response.output_text.done', data: { text, output_index: index, content_index: 0 } };
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
      const done = this.closeText();
      if (done) yield done;
      for (const data of result.patches) yield { event: 'response.data_spec', data: { data, output_index: this.output.length } };
      return;
    }
    const done = this.closeText();
    if (done) yield done;
    const output_index = this.output.length;
    yield { event: 'response.function_call.start', data: { output_index, call_id: call.call_id, name: call.name } };
    yield { event: 'response.function_call_arguments.delta', data: { output_index, call_id: call.call_id, delta: call.arguments } };
    yield {
      event: 'response.function_call_arguments.done',
      data: { output_index, call_id: call.call_id, name: call.name, arguments: call.arguments },
    };
  }
}

/** A run's first event (a response's is kept with its begin, D-35 revised). */
export function createdEvent(o: Pick<RunOptions, 'id' | 'kind' | 'conversationId'>): UnsequencedEvent {
  return {
    event: 'response.created',
    data: { id: o.id, object: o.kind, status: 'in_progress', ...(o.kind === 'response' ? { conversation_id: o.conversationId } : {}) },
  };
}

/**
 * The one answer to a failed save (a full disk). Not a model failure (D-17) but the server's (D-5):
 * nothing of the run was saved (the store's save is all or nothing), so the client must not believe
 * it was, and an Idempotency-Key retry must run again. A run whose save failed answers 500 in JSON
 * mode; as a stream (its 200 already sent) it ends with `response.failed` (`STOPS.unsaved`) and its
 * outcome says it was not saved, so that the idempotency stage does not keep it.
 *
 * The answer reads the run's events from `from`: the run itself (a completion), or the store the run's
 * events are appended to (a response: the request that started it and a keyed retry see the same
 * events, D-30). In JSON mode it gives the body `result` gives once `from` says the run has ended.
 */
export async function answerOf<T>(
  run: ResponseRun,
  stream: boolean,
  result: () => T,
  requestId: string,
  from: RunEvents = ownEvents(run),
): Promise<T | EventStream> {
  if (stream) return new EventStream(from.events(), () => ({ saved: !run.unsaved }));
  await from.ended();
  if (run.unsaved) throw internalError(requestId);
  return result();
}

/** Where an answer reads a run's events. */
export interface RunEvents {
  /** The events from the first. */
  events(): AsyncIterable<UnsequencedEvent>;
  /** Settles once the run's terminal event is out. */
  ended(): Promise<void>;
}

/** A run nobody else drives: the answer runs it. */
function ownEvents(run: ResponseRun): RunEvents {
  return {
    events: () => run.events(),
    ended: async () => {
      for await (const _ of run.events());
    },
  };
}
