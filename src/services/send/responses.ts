// Send message (§4.6): runs the agent on a conversation and persists the exchange (D-8, D-9, D-14,
// D-17, D-19, D-24), whether it completed or failed, whatever becomes of the request (D-34). The rest
// of a response's life has its own room: the line of messages (response-line.ts, D-37), the look-up,
// resume and cancel (response-lookup.ts, D-32, D-33), recovery (response-recovery.ts, D-38), the save
// (exchange.ts), a save while the store is out of reach (outage-saves.ts, D-91), the events' reducer
// (response-fold.ts) and the ways a reply stops (stops.ts).
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import {
  RESPONSE_ID_HEADER,
  type ItemT,
  type LiveResponseT,
  type ResponseT,
  type SendMessageRequestT,
  type UnsequencedEvent,
} from '../../contract/index.ts';
import type { IdempotencyClaim } from '../../core/claims.ts';
import type { Scenario } from '../../core/scenario.ts';
import { unixNow } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { AppT } from '../../core/tenants.ts';
import type { ChatMessage } from '../../engines/types.ts';
import { apiError } from '../../core/api-errors.ts';
import type { EventStream } from '../../core/answers.ts';
import { TERMINAL_EVENTS, type ConversationRecord, type Store } from '../../store/types.ts';
import type { AgentRuntime } from '../agent.ts';
import { ExchangeWriter } from './exchange.ts';
import { ResponseLine, RunningElsewhere } from './response-line.ts';
import { ResponseLookup } from './response-lookup.ts';
import { OutageSaves } from './outage-saves.ts';
import { ResponseRecovery } from './response-recovery.ts';
import { responseOf } from './response-resource.ts';
import { answerOf, createdEvent, ResponseRun } from './response-runner.ts';
import { KeptEvents } from './kept-events.ts';
import { LiveEvents } from './live-events.ts';
import { STOPS, StopReason } from './stops.ts';
import { checkHistory, type StorageQuota } from '../quota.ts';
import type { UsageLedger } from '../../store/shared.ts';

/** The key of an app's detached replies, or its widget's (D-92). */
function detachedPool(appId: string, widget: boolean): string {
  return widget ? `widget\0${appId}` : appId;
}

/** The model sees at most this many earlier messages: enough context, bounded cost. */
const HISTORY_MESSAGES = 40;
export interface StartedResponse {
  id: string;
  conversationId: string;
  createdAt: number;
  /** The answer to send message: the events from the first (a stream), or the Response once it ended (JSON). */
  answer(stream: boolean, requestId: string): Promise<unknown>;
}

/** Who a reply is for, beside its app and conversation. */
export interface StartOptions {
  /** The request's Idempotency-Key, saved with the exchange (D-30). */
  claim?: IdempotencyClaim;
  /** A widget visitor's, within the widget's share of the quota and its own cap of detached replies (D-92). */
  widget?: boolean;
  /** D-120: the request's scenario, whose model directives shape the reply's events. */
  scenario?: Scenario;
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

/** How a reply is produced: its events as its answer reads them, and its save. */
interface Production {
  live: LiveEvents;
  save: (run: ResponseRun) => Promise<void>;
}

export class ResponseService {
  /**
   * Emits `persisted` (response id, status) once a response is durable, `waiting` as a message joins a
   * line and `awaiting` as one waits for another instance's reply (D-37).
   */
  readonly events = new EventEmitter();
  private readonly producing = new Map<string, Producing>();
  /** D-34: per app, the replies running with no client; D-92: its widget's apart. */
  private readonly detached = new Map<string, number>();
  private readonly line: ResponseLine;
  private readonly lookups: ResponseLookup;
  private readonly exchanges: ExchangeWriter;
  private readonly recovery: ResponseRecovery;
  /** D-91: the saves of replies the store's outage stopped (outage-saves.ts). */
  private readonly saves: OutageSaves;

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
    this.saves = new OutageSaves(store, log);
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
    how: StartOptions = {},
  ): Promise<StartedResponse> {
    const leave = await this.line.enter(record.id, requestSignal);
    try {
      for (;;) {
        try {
          return await this.begin(app, record, body, requestSignal, how, leave);
        } catch (err) {
          if (!(err instanceof RunningElsewhere)) throw err;
          await this.line.awaitElsewhere(record.id, err, requestSignal, app.responses.max_duration_seconds * 1000);
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
    { claim, widget = false, scenario }: StartOptions,
    leave: () => void,
  ): Promise<StartedResponse> {
    const id = newId('response');
    const createdAt = unixNow();
    const content = body.message.content;
    // D-9: an object replaces the snapshot; omitted or null keeps it.
    const metadata = body.metadata ?? record.metadata;
    // D-104: read at once (with the record, for the save to start from).
    const read = await this.store.readForReply(record.id, app.id);
    // D-29: a conversation's history is bounded; D-27: so is what an app stores. Refused before the
    // run, so nothing is spent or saved.
    checkHistory(record.id, read.bytes, this.quota?.historyBytes(app.id));
    this.quota?.admit(app.id, 0, widget)(read.storedBytes);
    const messages: ChatMessage[] = [...historyOf(read.items), { role: 'user', content }];
    const tools = this.agent.tools(app, 'response');
    const engine = this.agent.engine(app);
    // D-35 revised: `response.created` kept with the begin, so it goes out once the begin is durable.
    const begun = await this.store.responses.begin(
      { id, app_id: app.id, conversation_id: record.id, created_at: createdAt, input: { content, metadata: body.metadata ?? null } },
      createdEvent({ id, kind: 'response', conversationId: record.id }),
    );
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
    const save = (r: ResponseRun) => this.exchanges.save(app.id, record.id, r, input, claim, app, read.base);
    const live = new LiveEvents();
    const run: ResponseRun = new ResponseRun({
      id,
      kind: 'response',
      conversationId: record.id,
      engine,
      request: this.agent.request(app, 'response', tools, messages, metadata, false),
      tools,
      signal: stop.signal,
      scenario,
      onUnexpected: (err) => this.log.error({ err, response_id: id }, 'response failed unexpectedly'),
      finish: (r) => this.saves.finish(r, stop.signal, save),
    });
    const done = this.produce(app, record.id, run, stop, requestSignal, leave, widget, { live, save });
    const head = { id, created_at: createdAt, conversation_id: record.id };
    const toResponse = (): ResponseT =>
      responseOf(head, run.output, { status: run.status === 'failed' ? 'failed' : 'completed', error: run.error, usage: run.usage });
    // The answer reads the events as this process hands them out (live-events.ts): the request that
    // started the reply and a keyed retry of it (D-30) see the same events, with the same numbers as
    // in the store, and the terminal one also while the store is out of reach (D-91).
    const from = { events: () => this.answerEvents(id, live), ended: () => done };
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
    widget: boolean,
    { live, save }: Production,
  ): Promise<void> {
    const id = run.id;
    // D-34: a reply runs to its end, within its app's maximum duration.
    const timer = setTimeout(() => stop.abort(new StopReason(STOPS.timeout)), app.responses.max_duration_seconds * 1000);
    timer.unref();
    // D-33: a cancel asked of any instance reaches the one producing it through the store.
    const unsubscribe = this.store.responses.onCancelRequest(id, () => stop.abort(new StopReason(STOPS.cancelled)));
    let detached = false;
    // D-92: the widget's replies have a cap of their own, so that visitors cannot fill the team's.
    const pool = detachedPool(app.id, widget);
    const max = widget && app.widget ? app.widget.limits.max_detached : app.responses.max_detached;
    // D-100: appended without waiting for each to be kept; the answer gets each once kept, in order.
    const kept = new KeptEvents({
      append: (e) => this.store.responses.append(id, e),
      live,
      unavailable: (err) => this.store.isUnavailable(err),
      onUnavailable: () => stop.abort(new StopReason(STOPS.storeUnavailable)),
    });
    const done = (async () => {
      try {
        // The run's first event, `response.created`, was kept with the begin (D-35 revised).
        let begun = true;
        for await (const e of run.events()) {
          kept.check();
          if (begun) {
            begun = false;
            kept.kept(e);
            continue;
          }
          const terminal = TERMINAL_EVENTS.has(e.event);
          if (terminal && run.error === STOPS.storeUnavailable) {
            // D-91: the client is told now; the exchange is saved, then this event appended, once the store is back.
            await kept.settled();
            live.add(e, true);
            this.saves.saveWhenBack(id, () => save(run), e);
            break;
          }
          kept.add(e, terminal);
        }
        await kept.settled();
      } catch (err) {
        this.log.error({ err, response_id: id }, 'response events not kept');
      } finally {
        // Stopped with no terminal event (another instance took the reply over): the answer reads the rest from the store.
        live.abandon();
        clearTimeout(timer);
        unsubscribe();
        this.producing.delete(id);
        if (detached) this.detachedLess(pool);
        leave();
      }
    })();
    this.producing.set(id, { run, appId: app.id, conversationId, stop, done });
    // Past the cap of detached replies, a client that leaves stops the reply as D-19 first said.
    const onLeave = () => {
      if (!this.producing.has(id)) return;
      const n = this.detached.get(pool) ?? 0;
      if (n >= max) {
        stop.abort(new StopReason(STOPS.disconnected));
        return;
      }
      detached = true;
      this.detached.set(pool, n + 1);
    };
    if (requestSignal.aborted) onLeave();
    else requestSignal.addEventListener('abort', onLeave, { once: true });
    void done.finally(() => requestSignal.removeEventListener('abort', onLeave));
    return done;
  }

  /** The answer's events: this process's (live-events.ts), then the store's if another instance took the reply over. */
  private async *answerEvents(id: string, live: LiveEvents): AsyncGenerator<UnsequencedEvent> {
    let n = 0;
    for await (const e of live.follow()) {
      yield e;
      n++;
    }
    if (live.abandoned) yield* this.store.responses.follow(id, n - 1);
  }

  /** The response this process produces for `conversationId`, if any. */
  private runningIn(conversationId: string): string | undefined {
    for (const [id, p] of this.producing) if (p.conversationId === conversationId) return id;
    return undefined;
  }

  private detachedLess(pool: string): void {
    const n = (this.detached.get(pool) ?? 1) - 1;
    if (n > 0) this.detached.set(pool, n);
    else this.detached.delete(pool);
  }

  /** Replies of `appId` running with no client (D-34), its widget's apart (D-92). */
  detachedCount(appId: string, widget = false): number {
    return this.detached.get(detachedPool(appId, widget)) ?? 0;
  }

  /** The conversation a response of `appId` belongs to (404 otherwise): the widget API checks its owner. */
  async conversationOf(appId: string, id: string): Promise<string> {
    return (await this.lookups.traceOf(appId, id)).start.conversation_id;
  }

  /** D-32: the Response as it is now (response-lookup.ts); `asExpired`: as past its events' hour (D-36, D-124). */
  lookup(appId: string, id: string, asExpired = false): Promise<LiveResponseT> {
    return this.lookups.lookup(appId, id, asExpired);
  }

  /** D-32: the events after `after`, then the live ones (response-lookup.ts); `asExpired`: 410 (D-36, D-124). */
  resume(appId: string, id: string, after: number, signal: AbortSignal, asExpired = false): Promise<EventStream> {
    return this.lookups.resume(appId, id, after, signal, asExpired);
  }

  /** D-33: stops a running response and returns it once saved (response-lookup.ts). */
  cancel(appId: string, id: string): Promise<LiveResponseT> {
    return this.lookups.cancel(appId, id);
  }

  /** D-38: a graceful shutdown, after its grace period: the replies still running end `interrupted`. */
  async interruptAll(): Promise<void> {
    this.saves.stop();
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
