// An exchange (a message and its reply) written to the file store, D-28's protocol: an intent line
// durable in the journal before the history file changes, then the `done` line that makes the exchange
// durable with its webhook events (D-84); a failed `done` takes the history's bytes back (D-94).
import type { ItemT } from '../../contract/index.ts';
import type { IdempotencyClaim } from '../../core/claims.ts';
import type { History, ResponseRecord } from '../types.ts';
import type { ClaimLog } from './claims.ts';
import type { ConversationIndex } from './conversations.ts';
import type { HistoryCache } from './history-cache.ts';
import type { Journal } from './journal.ts';
import type { Exchange, FieldsT } from './lines.ts';
import { type OutboxEvent, withEvents } from './webhooks.ts';

/** The parts of the store an exchange's write touches. */
export interface ExchangeParts {
  journal: Journal;
  index: ConversationIndex;
  histories: HistoryCache;
  claims: ClaimLog;
  /** Intents journaled whose `done` is not (a failed write): a compaction keeps them for start-up to settle. */
  openIntents: Map<string, Exchange>;
  /** D-84: the events of a change, once the line that carries them is durable. */
  adopt(events: OutboxEvent[]): void;
  /** After each exchange: a compaction may be due (D-28). */
  appended(): void;
  warn?: (message: string) => void;
}

export class ExchangeWriter {
  constructor(private readonly parts: ExchangeParts) {}

  async write(
    id: string,
    f: FieldsT,
    n: number,
    items: ItemT[],
    response?: ResponseRecord,
    claim?: IdempotencyClaim,
    w: OutboxEvent[] = [],
  ): Promise<void> {
    const p = response?.id ?? items[0]?.id ?? `x_${Date.now()}`;
    // Read first: a damaged history refuses the exchange before anything is written.
    const h = await this.parts.histories.get(id);
    // §4.3: the history is sorted chronologically. An exchange is stamped when its request started but
    // lands when it is saved, so one that started earlier may land later: it takes the last item's time.
    let last = h.items.at(-1)?.created_at ?? 0;
    for (const item of items) last = item.created_at = Math.max(item.created_at, last);
    const part: History = { items, responses: response ? [response] : [] };
    const b = Buffer.byteLength(JSON.stringify(part)) + 1;
    // The claim rides in both journal lines of the exchange: it holds exactly when the exchange does.
    const c = claim ? { k: claim.key, f: claim.fingerprint, at: Date.now() } : undefined;
    const intent = { t: 'intent', id, p, f, n, b, ...(c ? { c } : {}) };
    // The intent is durable before the history changes: after a crash, start-up knows which file to check.
    const where = await this.parts.journal.append(intent);
    const x: Exchange = { id, p, f, n, b, c, where };
    this.parts.openIntents.set(p, x);
    let written: number;
    try {
      written = await h.append(part);
    } catch (err) {
      // Nothing acknowledged: the history is read again from disk when next needed.
      this.parts.histories.forget(id);
      this.parts.openIntents.delete(p);
      throw err;
    }
    try {
      // D-84: the events ride in the line that makes the exchange durable.
      await this.parts.journal.append(withEvents(c ? { t: 'done', id, p, c } : { t: 'done', id, p }, w), () => {
        if (w.length > 0) this.parts.adopt(w);
        this.parts.openIntents.delete(p);
        if (c) this.parts.claims.add({ key: c.k, fingerprint: c.f, at: c.at });
        this.parts.index.add(this.parts.index.changed(this.parts.index.records.get(id)!, f, n, b, where));
      });
    } catch (err) {
      // D-94: the exchange is reported failed, so its line goes too: start-up settles the intent by
      // that line (an exchange found there landed), and a client told it was not saved must never
      // find it later. The intent stays open, for start-up to settle as not landed.
      await h
        .retract(written)
        .catch((e: Error) => this.parts.warn?.(`${h.file}: the exchange ${p} could not be taken back (${e.message})`));
      this.parts.histories.forget(id);
      throw err;
    }
    this.parts.appended();
  }
}
