// D-28: the file store's journal compacted while running: one `conv` line per conversation, the claims
// still honoured and the exchanges not yet completed, written beside the journal while requests go on,
// then swapped in (Journal.rewrite); what memory points into the journal is moved with it.
import { CLAIM_TTL_MS, type KeptClaim } from '../../core/claims.ts';
import type { ConversationRecord } from '../types.ts';
import type { ClaimLog } from './claims.ts';
import { type ConversationIndex, EMPTY_META, type MetaRef, type StoredConversation } from './conversations.ts';
import type { Journal } from './journal.ts';
import type { LineAt } from './journal-io.ts';
import type { Exchange } from './lines.ts';
import type { FileStoreOptions } from './options.ts';

/** What of the store a compaction reads and rewrites. */
export interface CompactionTarget {
  journal: Journal;
  index: ConversationIndex;
  claims: ClaimLog;
  /** The store's open intents (FileStore's): a compaction keeps their lines. */
  openIntents: ReadonlyMap<string, Exchange>;
  /** D-84: resolves once the outbox holds the events of every line so far (a compaction drops those lines). */
  outboxSettled(): Promise<void>;
}

/**
 * D-28: whether a journal of `bytes` is due a compaction: once it passes `factor` × its live bytes plus
 * `slackBytes` (FileStoreOptions.compaction). Never below what the last compaction wrote (as Redis
 * rewrites its AOF): an estimate that falls short cannot make compactions follow one another.
 */
export function compactionDue(bytes: number, liveBytes: number, compactedBytes: number, c: FileStoreOptions['compaction']): boolean {
  const factor = c?.factor ?? 2;
  const slack = c?.slackBytes ?? 4 * 2 ** 20;
  return bytes > factor * Math.max(liveBytes, compactedBytes) + slack;
}

/** D-28: when the file store's journal is compacted (at start-up and while running), and one compaction at a time. */
export class Compactor {
  private compacting: Promise<void> | undefined;
  /** The journal's size right after the last compaction. */
  private compactedBytes = 0;

  constructor(
    private readonly target: CompactionTarget,
    private readonly opts: Pick<FileStoreOptions, 'compaction' | 'holdCompaction' | 'onCompactionError'>,
  ) {}

  due(): boolean {
    return compactionDue(this.target.journal.bytes, this.target.index.liveBytes, this.compactedBytes, this.opts.compaction);
  }

  /** Compaction while running, once the journal passes its multiple of the live records. */
  ifDue(): void {
    if (this.compacting || !this.due()) return;
    this.compacting = this.run()
      .catch((err: Error) => this.opts.onCompactionError?.(err))
      .finally(() => {
        this.compacting = undefined;
      });
  }

  /** Waits for the compaction under way, if any. */
  async idle(): Promise<void> {
    while (this.compacting) await this.compacting;
  }

  async run(): Promise<void> {
    const { journal, index, claims, openIntents } = this.target;
    // D-84: the events of the lines a compaction drops are in the outbox before the new file takes their place.
    await compactJournal(journal, index, claims, openIntents, () => this.target.outboxSettled().then(this.opts.holdCompaction));
    this.compactedBytes = journal.bytes;
  }
}

/**
 * Rewrites the journal as one `conv` line per conversation (purged ones without metadata), the
 * claims still honoured and the intents not yet completed, while requests go on (Journal.rewrite).
 */
export async function compactJournal(
  journal: Journal,
  index: ConversationIndex,
  claimLog: ClaimLog,
  openIntents: ReadonlyMap<string, Exchange>,
  hold?: () => Promise<void>,
): Promise<void> {
  let heads: StoredConversation[] = [];
  let claims: KeptClaim[] = [];
  let intents: Exchange[] = [];
  const moved = new Map<MetaRef, LineAt>();
  const movedIntents = new Map<Exchange, LineAt>();
  await journal.rewrite(
    () => {
      heads = [...index.records.values()];
      claims = claimLog.since(Date.now() - CLAIM_TTL_MS);
      intents = [...openIntents.values()];
    },
    async (out) => {
      for (let i = 0; i < heads.length; i++) {
        const h = heads[i]!;
        const v: ConversationRecord = { ...h.toJSON() };
        // D-73: a deleted conversation says whether its history is kept (null) or when it was purged.
        if (h.purged_at !== null) v.metadata = {};
        const line = {
          t: 'conv',
          v,
          ...(h.file_bytes > 0 ? { b: h.file_bytes } : {}),
          ...(h.deleted_at !== null ? { purged_at: h.purged_at } : {}),
        };
        const where = await out(JSON.stringify(line));
        if (h.meta.text === null && h.purged_at === null) moved.set(h.meta, where);
        // Requests go on between batches.
        if (i % 512 === 511) await new Promise((r) => setImmediate(r));
      }
      for (const c of claims) await out(JSON.stringify({ t: 'claim', c: { k: c.key, f: c.fingerprint, at: c.at } }));
      for (const x of intents) movedIntents.set(x, await out(journal.readAt(x.where)));
    },
    (cut, start) => {
      const move = (w: LineAt, to: LineAt | undefined) => {
        if (w.at >= cut) w.at = w.at - cut + start;
        else if (to) Object.assign(w, { at: to.at, len: to.len });
      };
      for (const h of index.records.values()) {
        if (h.meta.text !== null) continue;
        if (h.meta.at < cut && !moved.has(h.meta)) {
          // Purged before the snapshot: its metadata is never served again (D-73).
          h.meta = EMPTY_META;
          continue;
        }
        move(h.meta, moved.get(h.meta));
      }
      for (const x of openIntents.values()) move(x.where, movedIntents.get(x));
    },
    hold,
  );
}
