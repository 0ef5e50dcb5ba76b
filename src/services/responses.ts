// Send message (§4.6): runs the agent on a conversation and persists the exchange (D-8, D-9, D-14,
// D-17, D-19, D-24), whether it completed or failed, whatever becomes of the request (D-34). The rest
// of a response's life has its own room: the line of messages (response-line.ts, D-37), the look-up,
// resume and cancel (response-lookup.ts, D-32, D-33), recovery (response-recovery.ts, D-38), the save
// (exchange.ts), the events' reducer (response-fold.ts) and the ways a reply stops (stops.ts).
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { RESPONSE_ID_HEADER, type ItemT, type LiveResponseT, type ResponseT, type SendMessageRequestT } from '../contract/index.ts';
import type { IdempotencyClaim } from '../core/claims.ts';
import { unixNow } from '../core/clock.ts';
import { newId } from '../core/ids.ts';
import type { AppT } from '../core/tenants.ts';
import type { ChatMessage } from '../engines/types.ts';
import { apiError } from '../http/errors.ts';
import type { EventStream } from '../http/reply.ts';
import type { ConversationRecord, Store } from '../store/types.ts';
import type { AgentRuntime } from './agent.ts';
import { ExchangeWriter } from './exchange.ts';
import { ResponseLine, RunningElsewhere } from './response-line.ts';
import { ResponseLookup } from './response-lookup.ts';
import { ResponseRecovery } from './response-recovery.ts';
import { answerOf, ResponseRun } from './response-runner.ts';
import { STOPS, StopReason } from './stops.ts';
import { checkHistory, type StorageQuota } from './quota.ts';
import type { UsageLedger } from '../store/shared.ts';

/** The model sees at most this many earlier messages: enough context, bounded cost. */
const HISTORY_MESSAGES = 40;

export interface StartedResponse {
  id: string;
  conversationId: string;
  createdAt: number;
  /** The answer to send message: the events from the first (a stream), or the Response once it ended (JSON). */
  answer(stream: boolean, requestId: string): Promise<unknown>;
}

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
  /**
   * Emits `persisted` (response id, status) once a response is durable, `waiting` as a message joins a
   * line and `awaiting` as one waits for another instance's reply (D-37).
   */
  readonly events = new EventEmitter();
  private readonly producing = new Map<string, Producing>();
  /** D-34: per app, the replies running with no client. */
  private readonly detached = new Map<string, number>();
  private readonly line: ResponseLine;
  private readonly lookups: ResponseLookup;
  private readonly exchanges: ExchangeWriter;
  private readonly recovery: ResponseRecovery;

  constructor(
    private readonly store: Store,
    private readonly agent: AgentRuntime,
    usage: UsageLedger,
    private readonly log: Logger,
    /** D-27: the plans' storage quotas (none: unlimited). */
    private readonly quota?: StorageQuota,
  ) {
    this.exchanges = new ExchangeWriter(store, agent, usage, log, this.events);
    this.line = new ResponseLine(store, this.events, (conversationId) => this.runningIn(conversationId));
    this.lookups = new ResponseLookup(store);
    this.recovery = new ResponseRecovery(store, this.exchanges, log);
  }

  /**
   * Begins a response (D-35: in the store, before anything is sent; D-37: after the conversation's
   * running reply, in line) and runs it to its end whatever becomes of the request (D-34).
   */
  async start(
    app: AppT,
    record: ConversationRecord,
    body: SendMessageRequestT,
    requestSignal: AbortSignal,
    claim?: IdempotencyClaim,
  ): Promise<StartedResponse> {
    const leave = await this.line.enter(record.id, requestSignal);
    try {
      for (;;) {
        try {
          return await this.begin(app, record, body, requestSignal, claim, leave);
        } catch (err) {
          if (!(err instanceof RunningElsewhere)) throw err;
          await this.line.awaitElsewhere(record.id, err, requestSignal);
        }
      }
    } catch (err) {
      leave();
      throw err;
    }
  }

  private async begin(
    app: AppT,
    record: ConversationRecord,
    body: SendMessageRequestT,
    requestSignal: AbortSignal,
    claim: IdempotencyClaim | undefined,
    leave: () => void,
  ): Promise<StartedResponse> {
    const id = newId('response');
    const createdAt = unixNow();
    const content = body.message.content;
    // D-9: an object replaces the snapshot; omitted or null keeps it.
    const metadata = body.metadata ?? record.metadata;
    const file = await this.store.readHistory(record.id);
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
        { headers: { [RESPONSE_ID_HEADER]: begun.running } },
      );
    }
    const stop = new AbortController();
    const input = { content, metadata: body.metadata ?? null, createdAt };
    const run: ResponseRun = new ResponseRun({
      id,
      kind: 'response',
      conversationId: record.id,
      engine,
      request: this.agent.request(app, 'response', tools, messages, metadata, false),
      tools,
      signal: stop.signal,
      onUnexpected: (err) => this.log.error({ err, response_id: id }, 'response failed unexpectedly'),
      finish: (r) => this.exchanges.save(app.id, record.id, r, input, claim, app),
    });
    const done = this.produce(app, record.id, run, stop, requestSignal, leave);
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
    // The stream follows the stored events from the first: the request that started the reply and a
    // keyed retry of it (D-30) see the same events, with the same numbers.
    const from = { events: () => this.store.responses.follow(id, -1), ended: () => done };
    return { id, conversationId: record.id, createdAt, answer: (stream, requestId) => answerOf(run, stream, toResponse, requestId, from) };
  }

  /**
   * Runs `run` to its end, appending each event to the store, within its app's maximum duration (D-34),
   * stopped by a cancel asked of any instance (D-33); a client that leaves detaches it, up to the app's
   * cap (D-34). Resolves once the terminal event is appended, and passes the conversation's turn on.
   */
  private produce(
    app: AppT,
    conversationId: string,
    run: ResponseRun,
    stop: AbortController,
    requestSignal: AbortSignal,
    leave: () => void,
  ): Promise<void> {
    const id = run.id;
    // D-34: a reply runs to its end, within its app's maximum duration.
    const timer = setTimeout(() => stop.abort(new StopReason(STOPS.timeout)), app.responses.max_duration_seconds * 1000);
    timer.unref();
    // D-33: a cancel asked of any instance reaches the one producing it through the store.
    const unsubscribe = this.store.responses.onCancelRequest(id, () => stop.abort(new StopReason(STOPS.cancelled)));
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
    this.producing.set(id, { run, appId: app.id, conversationId, stop, done });
    // Past the app's cap of detached replies, a client that leaves stops the reply as D-19 first said.
    const onLeave = () => {
      if (!this.producing.has(id)) return;
      const n = this.detached.get(app.id) ?? 0;
      if (n >= app.responses.max_detached) {
        stop.abort(new StopReason(STOPS.disconnected));
        return;
      }
      detached = true;
      this.detached.set(app.id, n + 1);
    };
    if (requestSignal.aborted) onLeave();
    else requestSignal.addEventListener('abort', onLeave, { once: true });
    void done.finally(() => requestSignal.removeEventListener('abort', onLeave));
    return done;
  }

  /** The response this process produces for `conversationId`, if any. */
  private runningIn(conversationId: string): string | undefined {
    for (const [id, p] of this.producing) if (p.conversationId === conversationId) return id;
    return undefined;
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

  /** The conversation a response of `appId` belongs to (404 otherwise): the widget API checks its owner. */
  async conversationOf(appId: string, id: string): Promise<string> {
    return (await this.lookups.traceOf(appId, id)).start.conversation_id;
  }

  /** D-32: the Response as it is now (response-lookup.ts). */
  lookup(appId: string, id: string): Promise<LiveResponseT> {
    return this.lookups.lookup(appId, id);
  }

  /** D-32: the events after `after`, then the live ones (response-lookup.ts). */
  resume(appId: string, id: string, after: number, signal: AbortSignal): Promise<EventStream> {
    return this.lookups.resume(appId, id, after, signal);
  }

  /** D-33: stops a running response and returns it once saved (response-lookup.ts). */
  cancel(appId: string, id: string): Promise<LiveResponseT> {
    return this.lookups.cancel(appId, id);
  }

  /** D-38: a graceful shutdown, after its grace period: the replies still running end `interrupted`. */
  async interruptAll(): Promise<void> {
    const running = [...this.producing.values()];
    for (const p of running) p.stop.abort(new StopReason(STOPS.interrupted));
    await Promise.allSettled(running.map((p) => p.done));
  }

  /** D-38: at start-up, the responses the last process left live are saved `interrupted` (response-recovery.ts). */
  recover(): Promise<number> {
    return this.recovery.recover();
  }

  /** D-38 across instances: `recover` every `ms` while this one runs. */
  sweep(ms: number): void {
    this.recovery.sweep(ms);
  }

  /** Stops the sweep, once the one under way (if any) has finished. */
  stopSweeping(): Promise<void> {
    return this.recovery.stopSweeping();
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
