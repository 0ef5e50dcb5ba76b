// D-48: which visitor owns which widget conversation, in its own journal beside the store's
// (`widget/owners.jsonl`), so that a visitor reaches only their own conversations and the REST resource
// stays as the interface shows it. PostgreSQL's twin is src/store/pg/widget-owners.ts.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { WidgetOwners } from '../shared.ts';
import { Journal } from './journal.ts';

export class FileWidgetOwners implements WidgetOwners {
  private readonly owners = new Map<string, string>();

  private constructor(private readonly journal: Journal) {}

  /** Reads `<data dir>/widget/owners.jsonl` (a torn last line was never acknowledged). */
  static async open(dataDir: string, warn?: (message: string) => void): Promise<FileWidgetOwners> {
    const dir = path.join(dataDir, 'widget');
    await fs.mkdir(dir, { recursive: true });
    const owners = new FileWidgetOwners(new Journal(path.join(dir, 'owners.jsonl'), { warn }));
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
