// The file store's bulk path (seeding, imports: src/store/port/file-port.ts): many new conversations
// with their histories, written apart from the per-change path of file-store.ts.
import path from 'node:path';
import { SAFE_ID } from '../record.ts';
import type { ConversationRecord, History } from '../types.ts';
import type { ConversationIndex } from './conversations.ts';
import { syncDir, writeDurably } from './durable.ts';
import type { HistoryCache } from './history-cache.ts';
import type { Journal } from './journal.ts';

/** What of the store an import writes to. */
export interface ImportTarget {
  index: ConversationIndex;
  journal: Journal;
  histories: HistoryCache;
}

/**
 * Many new conversations with their histories, at the cost of one fsync per file instead of a write
 * and a folder sync each. Every file is written temp → fsync → rename, the folders are synced once,
 * and only then are the records appended to the journal in one group commit, which is the commit
 * point: a crash before it leaves at most files that no record points to. Resolves once everything is
 * durable; nothing is indexed before.
 */
export async function importInto(
  { index, journal, histories }: ImportTarget,
  entries: ReadonlyArray<{ record: ConversationRecord; file?: History }>,
  concurrency: number,
): Promise<void> {
  const ids = new Set<string>();
  for (const { record } of entries) {
    if (!SAFE_ID.test(record.id)) throw new Error(`importConversations: ${JSON.stringify(record.id)} cannot name a file`);
    if (index.records.has(record.id) || ids.has(record.id))
      throw new Error(`importConversations: conversation ${record.id} already exists`);
    ids.add(record.id);
  }
  const dirs = new Set<string>();
  const sizes = new Map<string, number>();
  let next = 0;
  const worker = async () => {
    while (next < entries.length) {
      const { record, file } = entries[next++]!;
      // A conversation without history has no file, as one created and never used.
      if (!file) continue;
      const target = histories.path(record.id);
      dirs.add(path.dirname(target));
      const text = `${JSON.stringify(file)}\n`;
      sizes.set(record.id, Buffer.byteLength(text));
      await writeDurably(target, text);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, entries.length) }, worker));
  await Promise.all([...dirs].map(syncDir));
  await Promise.all(
    entries.map(({ record }) => {
      const b = sizes.get(record.id) ?? 0;
      // D-73: a deleted conversation imported with its history keeps it; without one it reads as purged.
      const kept = b > 0 && record.deleted_at !== null ? { purged_at: null } : {};
      return journal.append(b > 0 ? { t: 'conv', v: record, b, ...kept } : { t: 'conv', v: record }, (where) =>
        index.add(index.fromRecord(record, where, b, b > 0 ? null : undefined)),
      );
    }),
  );
}
