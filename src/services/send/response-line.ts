// D-37: the line of messages behind a conversation's running reply, so that each message sees the reply
// before it. Within an instance the line is the shared keyed queue; across instances, the first of a
// line waits for the reply another instance runs, whose end the store tells.
import type { EventEmitter } from 'node:events';
import { RESPONSE_ID_HEADER } from '../../contract/index.ts';
import { ResponseEventsExpired } from '../../core/errors.ts';
import { KeyedQueue } from '../../core/keyed-queue.ts';
import { apiError } from '../../core/api-errors.ts';
import type { Store } from '../../store/types.ts';

/** D-37: messages that may wait in line behind a conversation's running reply; one more gets a 409. */
export const MAX_IN_LINE = 8;

/** D-37: the conversation's reply runs on another instance (begun in the store, not produced here). */
export class RunningElsewhere extends Error {
  constructor(readonly id: string) {
    super(`response ${id} runs on another instance`);
  }
}

export class ResponseLine {
  private readonly queue = new KeyedQueue();

  constructor(
    private readonly store: Store,
    /** Told `waiting` as a message joins a line, `awaiting` as one waits for another instance's reply. */
    private readonly events: EventEmitter,
    /** The response this process produces for the conversation, if any. */
    private readonly runningIn: (conversationId: string) => string | undefined,
  ) {}

  /**
   * Waits for the conversation's running reply (and those in line before) to end; at most MAX_IN_LINE
   * wait, the next one gets a 409 naming the running response. A client that leaves while waiting
   * leaves the line (nothing was begun). Resolves with the function that passes the turn on.
   */
  async enter(conversationId: string, signal: AbortSignal): Promise<() => void> {
    if (this.queue.waiting(conversationId) >= MAX_IN_LINE) {
      const running = this.runningIn(conversationId);
      throw apiError(
        'conversation_busy',
        `Conversation ${conversationId} has ${MAX_IN_LINE} messages waiting for its running reply${running ? ` (response ${running})` : ''}; send this one once it has finished, or cancel it.`,
        { headers: running ? { [RESPONSE_ID_HEADER]: running } : {} },
      );
    }
    const turn = this.queue.enter(conversationId, signal);
    // Tests and tools wait on it (no sleeps): how many messages now wait in the conversation's line.
    this.events.emit('waiting', { conversation_id: conversationId, waiting: this.queue.waiting(conversationId) });
    return turn;
  }

  /**
   * Across instances each keeps its own line, and its first, told the reply runs elsewhere, waits for
   * its end (whichever instance runs it) before it begins on the history it left. Rejects if the
   * client leaves, and with a 409 once it waited `maxMs`, the running reply's maximum duration (D-37:
   * a reply whose producer is stuck never holds the line for ever).
   */
  async awaitElsewhere(conversationId: string, err: RunningElsewhere, signal: AbortSignal, maxMs: number): Promise<void> {
    this.events.emit('awaiting', { conversation_id: conversationId, response_id: err.id });
    const waited = AbortSignal.timeout(maxMs);
    const either = AbortSignal.any([signal, waited]);
    try {
      const trace = await this.store.responses.trace(err.id);
      if (trace && !trace.ended) for await (const _ of this.store.responses.follow(err.id, (trace.events?.length ?? 0) - 1, either));
    } catch (e) {
      if (!(e instanceof ResponseEventsExpired)) throw e;
    }
    if (signal.aborted) throw new Error('client disconnected');
    if (waited.aborted) {
      throw apiError(
        'conversation_busy',
        `Conversation ${conversationId} is still replying (response ${err.id}) past its maximum duration; send this message once it has finished, or cancel it.`,
        { headers: { [RESPONSE_ID_HEADER]: err.id } },
      );
    }
  }
}
