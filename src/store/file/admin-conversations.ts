// D-73 on the file store: an app's conversations as its team sees them (deleted ones too, read from
// the in-memory index), restore, and the purge of deleted histories (a `set` line with `purged_at`,
// then the history file goes: a crash between the two leaves a file that start-up removes).
import type { KeyedQueue } from '../../core/keyed-queue.ts';
import type { AdminConversations, AdminPageQuery, AdminRecord, ChangeEvents, RestoreResult } from '../types.ts';
import type { ConversationIndex, StoredConversation } from './conversations.ts';
import type { HistoryCache } from './history-cache.ts';
import type { Journal } from './journal.ts';
import { type OutboxEvent, withEvents } from './webhooks.ts';

/** What the file store lends its admin view: its index, journal, turns and histories. */
export interface FileStoreParts {
  index: ConversationIndex;
  journal: Journal;
  turns: KeyedQueue;
  histories: HistoryCache;
  /** Told after lines were appended (the journal may be due for compaction, D-28). */
  appended(): void;
  /** D-176: a restored conversation's kept response files count against its app's quota again. */
  restored(id: string): void;
  /** D-84: what makes a change's events, and the outbox that takes them once their line is durable. */
  changeEvents(): ChangeEvents;
  adopt(events: OutboxEvent[]): void;
}

const view = (r: StoredConversation): AdminRecord => ({ record: r, purgedAt: r.purged_at });
const kept = (r: StoredConversation) => r.deleted_at !== null && r.purged_at === null;

export class FileAdminConversations implements AdminConversations {
  constructor(private readonly s: FileStoreParts) {}

  page(appId: string, q: AdminPageQuery): Promise<{ records: AdminRecord[]; hasMore: boolean } | undefined> {
    const text = q.text?.toLowerCase();
    const keep = (r: StoredConversation) =>
      (q.deleted === 'include' || (r.deleted_at === null) === (q.deleted === 'exclude')) &&
      (text === undefined ||
        !!r.title?.toLowerCase().includes(text) ||
        Object.values(r.generated_title).some((t) => t.toLowerCase().includes(text)) ||
        !!r.external_user_id?.toLowerCase().includes(text));
    const page = this.s.index.page(appId, q, keep);
    return Promise.resolve(page && { records: page.records.map(view), hasMore: page.hasMore });
  }

  get(id: string): Promise<AdminRecord | undefined> {
    const r = this.s.index.records.get(id);
    return Promise.resolve(r && view(r));
  }

  restore(id: string): Promise<RestoreResult> {
    return this.s.turns.run(id, async (): Promise<RestoreResult> => {
      const r = this.s.index.records.get(id);
      if (!r) return { refused: 'missing' };
      if (r.deleted_at === null) return { refused: 'live' };
      if (r.purged_at !== null) return { refused: 'purged' };
      const f = { deleted_at: null };
      const events = this.s.changeEvents();
      // D-84: the restore's event rides in its line.
      const w = events.wants(r.app_id) ? events.restored({ ...r.toJSON(), deleted_at: null }) : [];
      await this.s.journal.append(withEvents({ t: 'set', id, f }, w), () => {
        if (w.length > 0) this.s.adopt(w);
        this.s.index.add(this.s.index.changed(this.s.index.records.get(id)!, f, 0, 0));
        this.s.restored(id);
      });
      this.s.appended();
      return { restored: view(this.s.index.records.get(id)!) };
    });
  }

  async purgeDeleted(deletedBefore: number, now: number): Promise<number> {
    const due: string[] = [];
    for (const r of this.s.index.records.values()) if (kept(r) && r.deleted_at! <= deletedBefore) due.push(r.id);
    let n = 0;
    for (const id of due) if (await this.purge(id, now, (r) => r.deleted_at! <= deletedBefore)) n++;
    return n;
  }

  async trimKept(appId: string, maxBytes: number, now: number): Promise<number> {
    if (this.s.index.keptBytes(appId) <= maxBytes) return 0;
    // Oldest deletion first (then creation order): what goes first is what was deleted longest ago.
    const byAge = this.s.index
      .conversationsOf(appId)
      .filter((r) => kept(r as StoredConversation))
      .sort((a, b) => a.deleted_at! - b.deleted_at! || a.seq - b.seq);
    let n = 0;
    for (const r of byAge) {
      if (this.s.index.keptBytes(appId) <= maxBytes) break;
      if (await this.purge(r.id, now, () => true)) n++;
    }
    return n;
  }

  keptBytes(appId: string): Promise<number> {
    return Promise.resolve(this.s.index.keptBytes(appId));
  }

  /** Purges one conversation's kept history in its turn, if it is still kept and `still` holds. */
  private purge(id: string, now: number, still: (r: StoredConversation) => boolean): Promise<boolean> {
    return this.s.turns.run(id, async () => {
      const r = this.s.index.records.get(id);
      if (!r || !kept(r) || !still(r)) return false;
      const f = { purged_at: now };
      // The line first: once it is durable the history is never served again, whatever befalls the file.
      await this.s.journal.append({ t: 'set', id, f }, () =>
        this.s.index.add(this.s.index.changed(this.s.index.records.get(id)!, f, 0, 0)),
      );
      await this.s.histories.drop(id);
      this.s.appended();
      return true;
    });
  }
}
