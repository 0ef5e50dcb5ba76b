// Send message (§4.6): runs the agent on a conversation and persists the exchange (D-8, D-9, D-14,
// D-17, D-19, D-24), whether it completed or failed.
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import {
  RESPONSE_ID_HEADER,
  type ItemT,
  type LiveResponseT,
  type OutputItemT,
  type ResponseErrorT,
  type ResponseT,
  type SendMessageRequestT,
  type UnsequencedEvent,
  type UsageT,
} from '../contract/index.ts';
import type { ChatMessage } from '../engines/types.ts';
import type { AppT } from '../core/tenants.ts';
import type { ConversationChange, ConversationRecord, ResponseRecord, Store } from '../store/types.ts';
import type { IdempotencyClaim } from '../core/claims.ts';
import type { AgentRuntime } from './agent.ts';
import { newId } from '../core/ids.ts';
import { unixNow } from '../core/clock.ts';
import { checkHistory, type StorageQuota } from './quota.ts';
import { EventStream } from '../http/reply.ts';
import { apiError, internalError, notFound } from '../http/errors.ts';
import { ResponseEventsExpired } from '../core/errors.ts';
import type { ResponseTrace } from '../store/types.ts';
import { ResponseRun, StopReason } from './response-runner.ts';
import type { UsageLedger } from './usage.ts';

/** The model sees at most this many earlier messages: enough context, bounded cost. */
const HISTORY_MESSAGES = 40;
/** Generating a title must not hold the response for long. */
const TITLE_TIMEOUT_MS = 30_000;

/** D-33, D-34, D-38: the errors of a response stopped on purpose (docs/responses.md). */
const STOPPED = {
  cancelled: { type: 'request_aborted', code: 'cancelled', message: 'The response was cancelled.' },
  timeout: {
    type: 'request_aborted',
    code: 'response_timeout',
    message: 'The response ran past the maximum duration of its app and was stopped.',
  },
  interrupted: { type: 'server_error', code: 'interrupted', message: 'The server stopped before the response was complete.' },
  disconnected: {
    type: 'request_aborted',
    code: 'client_disconnected',
    message: 'The client disconnected before the response was complete.',
  },
} as const satisfies Record<string, ResponseErrorT>;

export interface StartedResponse {
  id: string;
  conversationId: string;
  createdAt: number;
  /** The answer to send message: the events from the first (a stream), or the Response once it ended (JSON). */
  answer(stream: boolean, requestId: string): Promise<unknown>;
}

/** D-37: the conversation's reply runs on another instance (begun in the store, not produced here). */
class RunningElsewhere extends Error {
  constructor(readonly id: string) {
    super(`response ${id} runs on another instance`);
  }
}

/** D-37: messages that may wait in line behind a conversation's running reply; one more gets a 409. */
const MAX_IN_LINE = 8;

/** What a finished run leaves, to be saved (a live run, or one rebuilt from its events at start-up). */
type Outcome = Pick<ResponseRun, 'id' | 'status' | 'error' | 'usage' | 'output' | 'text' | 'source'>;

/** A response this process produces. */
interface Producing {
  run: ResponseRun;
  appId: string;
  conversationId: string;
  stop: AbortController;
  /** Ends once the terminal event is appended. */
  done: Promise<void>;
}

export class ResponseService {
  /** Emits `persisted` (response id, status) once a response is durable, `waiting` as a message joins a line (D-37). */
  readonly events = new EventEmitter();
  private readonly producing = new Map<string, Producing>();
  /** D-34: per app, the replies running with no client. */
  private readonly detached = new Map<string, number>();
  /** D-37: per conversation, the end of the line of messages and how many wait in it. */
  private readonly lines = new Map<string, { tail: Promise<void>; waiting: number }>();
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> | undefined;
  constructor(
    private readonly store: Store,
    private readonly agent: AgentRuntime,
    private readonly usage: UsageLedger,
    private readonly log: Logger,
    /** D-27: the plans' storage quotas (none: unlimited). */
    private readonly quota?: StorageQuota,
  ) {}

  /**
   * Begins a response (D-35: in the store, before anything is sent; D-37: 409 while another of the
   * conversation runs) and runs it to its end whatever becomes of the request (D-34).
   */
  async start(
    app: AppT,
    record: ConversationRecord,
    body: SendMessageRequestT,
    requestSignal: AbortSignal,
    claim?: IdempotencyClaim,
    /** D-34: false keeps D-19 for this surface (the widget API, until it can resume): a disconnect stops the reply. */
    detachable = true,
  ): Promise<StartedResponse> {
    const leave = await this.takeTurn(record.id, requestSignal);
    try {
      for (;;) {
        try {
          return await this.begin(app, record, body, requestSignal, claim, detachable, leave);
        } catch (err) {
          if (!(err instanceof RunningElsewhere)) throw err;
          // D-37 across instances: each keeps its own line, and its first waits for the reply another
          // instance runs (its end is told by the store), then begins on the history it left.
          this.events.emit('awaiting', { conversation_id: record.id, response_id: err.id });
          await this.endOf(err.id, requestSignal);
        }
      }
    } catch (err) {
      leave();
      throw err;
    }
  }

  /** Resolves once response `id` has ended (whichever instance runs it); rejects if the client leaves. */
  private async endOf(id: string, signal: AbortSignal): Promise<void> {
    try {
      const trace = await this.store.responses.trace(id);
      if (trace && !trace.ended) for await (const _ of this.store.responses.follow(id, (trace.events?.length ?? 0) - 1, signal));
    } catch (err) {
      if (!(err instanceof ResponseEventsExpired)) throw err;
    }
    if (signal.aborted) throw new Error('client disconnected');
  }

  /**
   * D-37: waits for the conversation's running reply (and those in line before) to end, so that each
   * message sees the reply before it; at most MAX_IN_LINE wait, the next one gets a 409 naming the
   * running response. A client that leaves while waiting leaves the line (nothing was begun).
   * Resolves with the function that passes the turn on.
   */
  private async takeTurn(conversationId: string, signal: AbortSignal): Promise<() => void> {
    const line = this.lines.get(conversationId) ?? { tail: Promise.resolve(), waiting: 0 };
    if (line.waiting >= MAX_IN_LINE) {
      const running = [...this.producing.entries()].find(([, p]) => p.conversationId === conversationId)?.[0];
      throw apiError(
        'conversation_busy',
        `Conversation ${conversationId} has ${MAX_IN_LINE} messages waiting for its running reply${running ? ` (response ${running})` : ''}; send this one once it has finished, or cancel it.`,
        {
          headers: running ? { [RESPONSE_ID_HEADER]: running } : {},
        },
      );
    }
    const before = line.tail;
    let pass!: () => void;
    const mine = new Promise<void>((resolve) => (pass = resolve));
    const tail = before.then(() => mine);
    line.tail = tail;
    line.waiting++;
    this.lines.set(conversationId, line);
    // Tests and tools wait on it (no sleeps): how many messages now wait in the conversation's line.
    this.events.emit('waiting', { conversation_id: conversationId, waiting: line.waiting });
    let passed = false;
    const leave = () => {
      if (passed) return;
      passed = true;
      pass();
      if (line.tail === tail) void tail.then(() => line.tail === tail && line.waiting === 0 && this.lines.delete(conversationId));
    };
    try {
      await new Promise<void>((resolve, reject) => {
        const gone = () => reject(new Error('client disconnected'));
        if (signal.aborted) return gone();
        signal.addEventListener('abort', gone, { once: true });
        void before.then(() => {
          signal.removeEventListener('abort', gone);
          resolve();
        });
      });
    } catch (err) {
      // The turn passes on once the one before ends.
      void before.then(leave);
      throw err;
    } finally {
      line.waiting--;
    }
    return leave;
  }

  private async begin(
    app: AppT,
    record: ConversationRecord,
    body: SendMessageRequestT,
    requestSignal: AbortSignal,
    claim: IdempotencyClaim | undefined,
    detachable: boolean,
    leave: () => void,
  ): Promise<StartedResponse> {
    const id = newId('response');
    const createdAt = unixNow();
    const content = body.message.content;
    // D-9: an object replaces the snapshot; omitted or null keeps it.
    const metadata = body.metadata ?? record.metadata;
    const file = await this.store.readConversationFile(record.id);
    // D-29: a conversation's history is bounded; D-27: so is what an app stores. Refused before the
    // run, so nothing is spent or saved.
    checkHistory(record.id, file.bytes, this.quota?.historyBytes(app.id));
    await this.quota?.check(app.id, 0);
    const messages: ChatMessage[] = [...historyOf(file.items), { role: 'user', content }];
    const tools = this.agent.tools(app, 'response');
    const engine = this.agent.engine(app);
    const begun = await this.store.responses.begin({
      id,
      app_id: app.id,
      conversation_id: record.id,
      created_at: createdAt,
      input: { content, metadata: body.metadata ?? null },
    });
    if (begun.running && !this.producing.has(begun.running)) throw new RunningElsewhere(begun.running);
    if (begun.running) {
      throw apiError(
        'conversation_busy',
        `Conversation ${record.id} is still replying (response ${begun.running}); send the next message once it has finished, or cancel it.`,
        {
          headers: { [RESPONSE_ID_HEADER]: begun.running },
        },
      );
    }
    const stop = new AbortController();
    const run: ResponseRun = new ResponseRun({
      id,
      kind: 'response',
      conversationId: record.id,
      engine,
      request: this.agent.request(app, 'response', tools, messages, metadata, false),
      tools,
      signal: stop.signal,
      onUnexpected: (err) => this.log.error({ err, response_id: id }, 'response failed unexpectedly'),
      finish: (r) => this.persist(app.id, record.id, r, { content, metadata: body.metadata ?? null, createdAt }, claim, app),
    });
    // D-34: a reply runs to its end, within its app's maximum duration.
    const timer = setTimeout(() => stop.abort(new StopReason(STOPPED.timeout)), app.responses.max_duration_seconds * 1000);
    timer.unref();
    // D-33: a cancel asked of any instance reaches the one producing it through the store.
    const unsubscribe = this.store.responses.onCancelRequest(id, () => stop.abort(new StopReason(STOPPED.cancelled)));
    let detached = false;
    const done = (async () => {
      try {
        for await (const e of run.events()) await this.store.responses.append(id, e);
      } catch (err) {
        this.log.error({ err, response_id: id }, 'response events not kept');
      } finally {
        clearTimeout(timer);
        unsubscribe();
        this.producing.delete(id);
        if (detached) this.detachedLess(app.id);
        leave();
      }
    })();
    this.producing.set(id, { run, appId: app.id, conversationId: record.id, stop, done });
    // D-34: a client that leaves no longer stops the reply, up to the app's cap of detached replies;
    // past it, the reply is stopped as before (D-19).
    const onLeave = () => {
      if (!this.producing.has(id)) return;
      const n = this.detached.get(app.id) ?? 0;
      if (!detachable || n >= app.responses.max_detached) {
        stop.abort(new StopReason(STOPPED.disconnected));
        return;
      }
      detached = true;
      this.detached.set(app.id, n + 1);
    };
    if (requestSignal.aborted) onLeave();
    else requestSignal.addEventListener('abort', onLeave, { once: true });
    void done.finally(() => requestSignal.removeEventListener('abort', onLeave));

    const toResponse = (): ResponseT => ({
      id,
      object: 'response',
      created_at: createdAt,
      conversation_id: record.id,
      output: run.output,
      status: run.status === 'failed' ? 'failed' : 'completed',
      ...(run.error ? { error: run.error } : {}),
      usage: run.usage,
    });
    const answer = async (stream: boolean, requestId: string): Promise<unknown> => {
      // The stream follows the stored events from the first: the request that started the reply
      // and a keyed retry of it (D-30) see the same events, with the same numbers.
      if (stream) return new EventStream(this.store.responses.follow(id, -1), () => ({ saved: !run.unsaved }));
      await done;
      if (run.unsaved) throw internalError(requestId);
      return toResponse();
    };
    return { id, conversationId: record.id, createdAt, answer };
  }

  private detachedLess(appId: string): void {
    const n = (this.detached.get(appId) ?? 1) - 1;
    if (n > 0) this.detached.set(appId, n);
    else this.detached.delete(appId);
  }

  /** Replies of `appId` running with no client (D-34). */
  detachedCount(appId: string): number {
    return this.detached.get(appId) ?? 0;
  }

  /** The store's record of a response of `appId` (404 otherwise: another app's or team's, D-32). */
  private async traceOf(appId: string, id: string): Promise<ResponseTrace> {
    const trace = await this.store.responses.trace(id);
    if (!trace || trace.start.app_id !== appId) throw notFound(`Response ${JSON.stringify(id)}`, 'response_id');
    return trace;
  }

  /** The conversation a response of `appId` belongs to (404 otherwise): the widget API checks its owner. */
  async conversationOf(appId: string, id: string): Promise<string> {
    return (await this.traceOf(appId, id)).start.conversation_id;
  }

  /** D-32: the Response as it is now: `in_progress` with the output so far, then as it ended. */
  async lookup(appId: string, id: string): Promise<LiveResponseT> {
    const trace = await this.traceOf(appId, id);
    const base = { id, object: 'response' as const, created_at: trace.start.created_at, conversation_id: trace.start.conversation_id };
    if (trace.events) {
      const output = outputOf(trace.events);
      const last = trace.events[trace.events.length - 1];
      if (!trace.ended || !last) return { ...base, output, status: 'in_progress' };
      const data = last.data as { status: 'completed' | 'failed'; error?: ResponseErrorT; usage?: UsageT };
      return {
        ...base,
        output,
        status: data.status,
        ...(data.error ? { error: data.error } : {}),
        ...(data.usage ? { usage: data.usage } : {}),
      };
    }
    // D-36: past the events' retention, the conversation holds the response as it was saved.
    const file = await this.store.readConversationFile(trace.start.conversation_id);
    const saved = file.responses.find((r) => r.id === id);
    const output = file.items
      .filter((i) => i.response_id === id && !(i.type === 'message' && i.role === 'user'))
      .map(({ id: _id, created_at: _c, response_id: _r, status: _s, ...item }) => item as OutputItemT);
    if (!saved) return { ...base, output, status: 'failed', error: STOPPED.interrupted };
    return {
      ...base,
      output,
      status: saved.status,
      ...(saved.error ? { error: saved.error } : {}),
      ...(saved.usage ? { usage: saved.usage } : {}),
    };
  }

  /**
   * D-32: the events after `after`, as first sent, then the live ones to the terminal one, numbered
   * from `after + 1` with `id:` lines. Ends early if the client leaves.
   */
  async resume(appId: string, id: string, after: number, signal: AbortSignal): Promise<EventStream> {
    const trace = await this.traceOf(appId, id);
    if (!trace.events) throw expired(id);
    const events = this.store.responses.follow(id, after, signal);
    const guarded = (async function* () {
      try {
        yield* events;
      } catch (err) {
        // Expired between the check and the read: the stream has not started, so the error is answered.
        if (err instanceof ResponseEventsExpired) throw expired(id);
        throw err;
      }
    })();
    return new EventStream(guarded, () => ({ saved: true }), { first: after + 1, ids: true });
  }

  /**
   * D-33: stops a running response (it ends `failed`, code `cancelled`, what it produced kept) and
   * returns it once saved; a finished one is returned unchanged.
   */
  async cancel(appId: string, id: string): Promise<LiveResponseT> {
    const trace = await this.traceOf(appId, id);
    if (!trace.ended && trace.events) {
      const seen = trace.events.length - 1;
      await this.store.responses.requestCancel(id);
      // Waits for the terminal event, wherever the response is produced.
      for await (const _ of this.store.responses.follow(id, seen));
    }
    return this.lookup(appId, id);
  }

  /** D-38: a graceful shutdown, after its grace period: the replies still running end `interrupted`. */
  async interruptAll(): Promise<void> {
    const running = [...this.producing.values()];
    for (const p of running) p.stop.abort(new StopReason(STOPPED.interrupted));
    await Promise.allSettled(running.map((p) => p.done));
  }

  /**
   * D-38: at start-up, the responses the last process left live (a kill -9) are saved `failed` with
   * code `interrupted`, with what their events show they produced; one saved just before the crash
   * gets its terminal event only. Nothing stays `in_progress`.
   */
  async recover(): Promise<number> {
    const unfinished = await this.store.responses.unfinished();
    for (const t of unfinished) {
      const { start } = t;
      const file = await this.store.readConversationFile(start.conversation_id).catch(() => undefined);
      const saved = file?.responses.find((r) => r.id === start.id);
      if (saved) {
        const usage = saved.usage ? { usage: saved.usage } : {};
        await this.store.responses.append(
          start.id,
          saved.status === 'completed'
            ? { event: 'response.completed', data: { id: start.id, status: 'completed', ...usage } }
            : { event: 'response.failed', data: { id: start.id, status: 'failed', error: saved.error!, ...usage } },
        );
        continue;
      }
      const output = outputOf(t.events ?? []);
      const outcome: Outcome = {
        id: start.id,
        status: 'failed',
        error: STOPPED.interrupted,
        usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
        output,
        text: '',
        source: undefined,
      };
      if (await this.store.getConversation(start.conversation_id)) {
        await this.persist(start.app_id, start.conversation_id, outcome, { ...start.input, createdAt: start.created_at }, undefined);
      }
      await this.store.responses.append(start.id, {
        event: 'response.failed',
        data: { id: start.id, status: 'failed', error: STOPPED.interrupted, usage: outcome.usage },
      });
    }
    return unfinished.length;
  }

  /**
   * D-38 across instances: every `ms` while this one runs, the responses an instance left when it died
   * are saved `interrupted` by `recover`, start-up's path (the store hands each to one instance only).
   */
  sweep(ms: number): void {
    this.sweeper = setInterval(() => {
      this.sweeping ??= this.recover()
        .then((n) => n > 0 && this.log.warn({ count: n }, 'responses left running by a stopped instance saved as interrupted'))
        .catch((err: Error) => this.log.warn({ err: err.message }, 'the sweep of interrupted responses failed; it runs again later'))
        .finally(() => (this.sweeping = undefined));
    }, ms);
    this.sweeper.unref();
  }

  /** Stops the sweep, once the one under way (if any) has finished. */
  async stopSweeping(): Promise<void> {
    clearInterval(this.sweeper);
    await this.sweeping;
  }

  private async persist(
    appId: string,
    conversationId: string,
    run: Outcome,
    input: { content: string; metadata: Record<string, unknown> | null; createdAt: number },
    claim: IdempotencyClaim | undefined,
    app?: AppT,
  ): Promise<void> {
    // The title may take a model call: made before the exchange is saved, not in the conversation's turn.
    const first = (await this.store.getConversation(conversationId))!;
    const title =
      app && run.status === 'completed' && first.title === null && Object.keys(first.generated_title).length === 0
        ? await this.title(app, input.content, run)
        : null;
    const at = unixNow();
    const items: ItemT[] = [
      {
        id: newId('message'),
        type: 'message',
        role: 'user',
        content: [{ type: 'text', text: input.content }],
        created_at: input.createdAt,
        response_id: run.id,
      },
    ];
    // D-39 (a D-14 revision): the items of a reply that did not complete say so.
    const status = run.status === 'completed' ? {} : { status: 'incomplete' as const };
    for (const item of run.output) {
      const id = item.type === 'function_call' ? item.call_id! : newId('message');
      items.push({ ...item, id, created_at: at, response_id: run.id, ...status } as ItemT);
    }
    const assistantMessages = run.output.filter((i) => i.type === 'message').length;
    const response: ResponseRecord = {
      id: run.id,
      created_at: input.createdAt,
      status: run.status === 'completed' ? 'completed' : 'failed',
      usage: run.usage,
    };
    if (run.error) {
      response.error = run.error;
      // The code only: no message content at the default level.
      this.log.warn({ response_id: run.id, app_id: appId, code: run.error.code }, 'response failed');
    }
    // Usage first: the tokens were spent whatever happens next (a save that fails and is retried
    // spent them twice), and an exchange once saved is never reported as failed because its usage
    // line could not be written.
    await this.usage.record(appId, 'response', run.id, run.usage);
    await this.store.saveResponse({
      conversationId,
      items,
      response,
      claim,
      // Applied to the record as it is when the exchange lands (a rename may have landed meanwhile).
      apply: (record) => {
        const change: ConversationChange = { message_count: record.message_count + 1 + assistantMessages };
        // D-9: an object replaces the snapshot; omitted or null keeps it.
        if (input.metadata) change.metadata = input.metadata;
        // D-8: titled after the first completed exchange, unless the caller chose a title.
        if (title && record.title === null && Object.keys(record.generated_title).length === 0) change.generated_title = title;
        return change;
      },
    });
    this.events.emit('persisted', { id: run.id, conversation_id: conversationId, status: response.status });
  }

  private async title(app: AppT, firstMessage: string, run: Outcome): Promise<Record<string, string>> {
    const req = { firstMessage, reply: run.text, source: run.source };
    try {
      const t = await this.agent.engine(app).title(req, AbortSignal.timeout(TITLE_TIMEOUT_MS));
      if (t['en-ca'] && t['fr-ca']) return t;
    } catch (err) {
      this.log.warn({ err: (err as Error).message, app_id: app.id }, 'title generation failed; using the embedded one');
    }
    return this.agent.fallbackTitle(req);
  }
}

/** The conversation so far as the model sees it: user and assistant messages, oldest first. */
function historyOf(items: readonly ItemT[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const item of items) {
    if (item.type !== 'message') continue;
    const text = (item.content ?? []).map((p) => p.text ?? '').join('');
    if (item.role === 'user') out.push({ role: 'user', content: text });
    else if (text) out.push({ role: 'assistant', content: text });
  }
  return out.slice(-HISTORY_MESSAGES);
}

/** D-36's error: the look-up still answers, the events are gone. */
function expired(id: string) {
  return apiError(
    'response_events_expired',
    `The events of response ${id} are no longer kept (they stay resumable for a while after the response ends, docs/responses.md); read the response with GET …/responses/${id}.`,
  );
}

type MessageItem = Extract<OutputItemT, { type: 'message' }>;
type CallItem = Extract<OutputItemT, { type: 'function_call' }>;

/** The output items the events describe (§6 rule 4: the same as the response's output). */
function outputOf(events: readonly UnsequencedEvent[]): OutputItemT[] {
  const out: OutputItemT[] = [];
  for (const e of events) {
    const d = e.data as Record<string, unknown> & { output_index: number };
    switch (e.event) {
      case 'response.output_text.delta': {
        const item = (out[d.output_index] ??= { type: 'message', role: 'assistant', content: [{ type: 'text', text: '' }] }) as MessageItem;
        item.content![0]!.text += d.delta as string;
        break;
      }
      case 'response.output_text.done':
        out[d.output_index] = { type: 'message', role: 'assistant', content: [{ type: 'text', text: d.text as string }] };
        break;
      case 'response.function_call.start':
        out[d.output_index] = { type: 'function_call', name: d.name as string, arguments: '', call_id: d.call_id as string };
        break;
      case 'response.function_call_arguments.delta':
        (out[d.output_index] as CallItem).arguments += d.delta as string;
        break;
      case 'response.function_call_arguments.done':
        (out[d.output_index] as CallItem).arguments = d.arguments as string;
        break;
      case 'response.data_spec':
        out[d.output_index] = { type: 'data_spec', data: d.data as Extract<OutputItemT, { type: 'data_spec' }>['data'] };
        break;
    }
  }
  return out.filter((i) => i !== undefined);
}
