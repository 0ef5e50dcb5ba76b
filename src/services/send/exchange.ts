// Saving an exchange (D-8, D-9, D-14, D-24, D-39): the user's message and the reply's output land in
// the conversation in one step of the store, with the response's record and the Idempotency-Key claim,
// whether the reply completed or not; the usage is recorded first.
import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { ItemT } from '../../contract/index.ts';
import type { IdempotencyClaim } from '../../core/claims.ts';
import { unixNow } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { AppT } from '../../core/tenants.ts';
import type { ConversationChange, ConversationRecord, ResponseRecord, SaveBase, Store } from '../../store/types.ts';
import type { AgentRuntime } from '../agent.ts';
import type { ResponseRun } from './response-runner.ts';
import type { UsageEntry, UsageLedger } from '../../store/shared.ts';

/** Generating a title must not hold the response for long. */
const TITLE_TIMEOUT_MS = 30_000;

/** What a finished run leaves, to be saved (a live run, or one rebuilt from its events at start-up). */
export type Outcome = Pick<ResponseRun, 'id' | 'status' | 'error' | 'usage' | 'output' | 'text' | 'source'>;

/** The user's side of the exchange, as the request gave it. */
export interface ExchangeInput {
  content: string;
  metadata: Record<string, unknown> | null;
  createdAt: number;
}

export class ExchangeWriter {
  constructor(
    private readonly store: Store,
    private readonly agent: AgentRuntime,
    private readonly usage: UsageLedger,
    private readonly log: Logger,
    /** Told `persisted` (response id, conversation, status) once a response is durable. */
    private readonly events: EventEmitter,
  ) {}

  /** Saves the exchange; `app` (a live run) lets a first completed exchange title its conversation (D-8). */
  async save(
    appId: string,
    conversationId: string,
    run: Outcome,
    input: ExchangeInput,
    claim: IdempotencyClaim | undefined,
    app?: AppT,
    /** D-104: the record as read before the reply (the save may start from it). */
    base?: SaveBase,
  ): Promise<void> {
    // The title may take a model call: made before the exchange is saved, not in the conversation's turn.
    const first = base?.record ?? (await this.store.getConversation(conversationId))!;
    const title =
      app && run.status === 'completed' && first.title === null && Object.keys(first.generated_title).length === 0
        ? await this.title(app, input.content, run)
        : null;
    const items = itemsOf(run, input);
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
    // Applied to the record as it is when the exchange lands (a rename may have landed meanwhile).
    const apply = (record: ConversationRecord): ConversationChange => {
      const change: ConversationChange = { message_count: record.message_count + 1 + assistantMessages };
      // D-9: an object replaces the snapshot; omitted or null keeps it.
      if (input.metadata) change.metadata = input.metadata;
      // D-8: titled after the first completed exchange, unless the caller chose a title.
      if (title && record.title === null && Object.keys(record.generated_title).length === 0) change.generated_title = title;
      return change;
    };
    // Usage first, or with the exchange: the tokens were spent whatever happens next (a save that
    // fails and is retried spent them twice; one dropped as saved elsewhere keeps its usage row), and
    // an exchange once saved is never reported as failed because its usage line could not be written.
    const step = (usage?: UsageEntry) => this.store.saveResponse({ conversationId, items, response, claim, base, usage, apply });
    if (this.store.savesUsage && this.usage.recordWith) await this.usage.recordWith(appId, run.id, run.usage, step);
    else {
      await this.usage.record(appId, 'response', run.id, run.usage);
      await step();
    }
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

/** D-14: the user's message, then every output item with its id, time and response id. */
function itemsOf(run: Outcome, input: ExchangeInput): ItemT[] {
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
  return items;
}
