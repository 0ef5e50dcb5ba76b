// D-48: which visitor owns which widget conversation, in its own journal beside the store's, so that a
// visitor reaches only their own conversations and the REST resource stays as the interface shows it.
// With DATABASE_URL, src/store/pg/widget-owners.ts keeps them instead (docs/postgres.md).
import fs from 'node:fs/promises';
import path from 'node:path';
import { Journal } from '../store/journal.ts';
import type { WidgetOwners } from '../store/shared.ts';

export type { WidgetOwners };

export class VisitorConversations implements WidgetOwners {
  private readonly owners = new Map<string, string>();

  private constructor(private readonly journal: Journal) {}

  /** Reads `<data dir>/widget/owners.jsonl` (a torn last line was never acknowledged). */
  static async open(dataDir: string, warn?: (message: string) => void): Promise<VisitorConversations> {
    const dir = path.join(dataDir, 'widget');
    await fs.mkdir(dir, { recursive: true });
    const owners = new VisitorConversations(new Journal(path.join(dir, 'owners.jsonl'), { warn }));
    await owners.journal.open((e) => {
      const { c, v } = (e ?? {}) as { c?: unknown; v?: unknown };
      if (typeof c === 'string' && typeof v === 'string') owners.owners.set(c, v);
    });
    return owners;
  }

  /** Durable (fsynced) when it resolves; the widget learns the conversation's id only after it. */
  async claim(conversationId: string, visitorId: string): Promise<void> {
    await this.journal.append({ c: conversationId, v: visitorId });
    this.owners.set(conversationId, visitorId);
  }

  async ownerOf(conversationId: string): Promise<string | undefined> {
    return this.owners.get(conversationId);
  }

  close(): Promise<void> {
    return this.journal.close();
  }
}
