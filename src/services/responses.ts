// Send message (§4.6): runs the agent on a conversation and persists the exchange (D-8, D-9, D-14,
// D-17, D-19, D-24), whether it completed or failed.
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { LIMITS, type ItemT, type ResponseT, type SendMessageRequestT } from '../contract/index.ts';
import { apiError } from '../http/errors.ts';
import type { ChatMessage } from '../model/types.ts';
import type { AppT } from '../store/fixtures.ts';
import type { ConversationChange, ConversationRecord, IdempotencyClaim, ResponseRecord, Store } from '../store/types.ts';
import type { AgentRuntime } from './agent.ts';
import { newId, unixNow } from '../store/ids.ts';
import type { StorageQuota } from './quota.ts';
import { ResponseRun } from './response-runner.ts';
import type { UsageLedger } from './usage.ts';

/** The model sees at most this many earlier messages: enough context, bounded cost. */
export const HISTORY_MESSAGES = 40;
/** Generating a title must not hold the response for long. */
const TITLE_TIMEOUT_MS = 30_000;

export interface StartedResponse {
  run: ResponseRun;
  createdAt: number;
  conversationId: string;
  toResponse(): ResponseT;
}

export class ResponseService {
  /** Emits `persisted` (response id, status) once a response is durable: tests and tools wait on it. */
  readonly events = new EventEmitter();
  constructor(
    private readonly store: Store,
    private readonly agent: AgentRuntime,
    private readonly usage: UsageLedger,
    private readonly log: Logger,
    /** D-27: the plans' storage quotas (none: unlimited). */
    private readonly quota?: StorageQuota,
  ) {}

  /** Reads the history and prepares the run; nothing is written until the run finishes. */
  async start(app: AppT, record: ConversationRecord, body: SendMessageRequestT, signal: AbortSignal, claim?: IdempotencyClaim): Promise<StartedResponse> {
    const id = newId('response');
    const createdAt = unixNow();
    const content = body.message.content;
    // D-9: an object replaces the snapshot; omitted or null keeps it.
    const metadata = body.metadata ?? record.metadata;
    const file = await this.store.readConversationFile(record.id);
    // D-29: a conversation's history is bounded; D-27: so is what an app stores. Refused before the
    // run, so nothing is spent or saved.
    if (file.bytes >= LIMITS.conversationBytes) {
      throw apiError(
        'conversation_too_large',
        `Conversation ${JSON.stringify(record.id)} has reached the limit of ${LIMITS.conversationBytes / 2 ** 20} MiB of stored history; start a new conversation (this one can still be read).`,
        { param: 'conversation_id' },
      );
    }
    this.quota?.check(app.id, 0);
    const messages: ChatMessage[] = [...historyOf(file.items), { role: 'user', content }];
    const tools = this.agent.tools(app, 'response');
    const engine = this.agent.engine(app);
    const run: ResponseRun = new ResponseRun({
      id,
      kind: 'response',
      conversationId: record.id,
      engine,
      request: this.agent.request(app, 'response', tools, messages, metadata, false),
      tools,
      signal,
      onUnexpected: (err) => this.log.error({ err, response_id: id }, 'response failed unexpectedly'),
      finish: (r) => this.persist(app, record.id, r, { content, metadata: body.metadata ?? null, createdAt }, claim),
    });
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
    return { run, createdAt, conversationId: record.id, toResponse };
  }

  private async persist(
    app: AppT,
    conversationId: string,
    run: ResponseRun,
    input: { content: string; metadata: Record<string, unknown> | null; createdAt: number },
    claim: IdempotencyClaim | undefined,
  ): Promise<void> {
    // The title may take a model call: made before the exchange is saved, not in the conversation's turn.
    const first = this.store.getConversation(conversationId)!;
    const title =
      run.status === 'completed' && first.title === null && Object.keys(first.generated_title).length === 0
        ? await this.title(app, input.content, run)
        : null;
    const at = unixNow();
    const items: ItemT[] = [
      { id: newId('message'), type: 'message', role: 'user', content: [{ type: 'text', text: input.content }], created_at: input.createdAt, response_id: run.id },
    ];
    for (const item of run.output) {
      const id = item.type === 'function_call' ? item.call_id! : newId('message');
      items.push({ ...item, id, created_at: at, response_id: run.id } as ItemT);
    }
    const assistantMessages = run.output.filter((i) => i.type === 'message').length;
    const response: ResponseRecord = { id: run.id, created_at: input.createdAt, status: run.status === 'completed' ? 'completed' : 'failed', usage: run.usage };
    if (run.error) {
      response.error = run.error;
      // The code only: no message content at the default level.
      this.log.warn({ response_id: run.id, app_id: app.id, code: run.error.code }, 'response failed');
    }
    // Usage first: the tokens were spent whatever happens next (a save that fails and is retried
    // spent them twice), and an exchange once saved is never reported as failed because its usage
    // line could not be written.
    await this.usage.record(app.id, 'response', run.id, run.usage);
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

  private async title(app: AppT, firstMessage: string, run: ResponseRun): Promise<Record<string, string>> {
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
export function historyOf(items: readonly ItemT[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const item of items) {
    if (item.type !== 'message') continue;
    const text = (item.content ?? []).map((p) => p.text ?? '').join('');
    if (item.role === 'user') out.push({ role: 'user', content: text });
    else if (text) out.push({ role: 'assistant', content: text });
  }
  return out.slice(-HISTORY_MESSAGES);
}
