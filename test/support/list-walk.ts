// Reads a store's lists as the API does: one page at a time (Store.listConversations), never whole.
import type { ConversationRecord, Store } from '../../src/store/types.ts';

/** Every live conversation of an app (or of one user), walked page by page in creation order (or backwards). */
export async function walk(
  store: Pick<Store, 'listConversations'>,
  appId: string,
  opts: { externalUserId?: string; direction?: 'up' | 'down'; limit?: number } = {},
): Promise<ConversationRecord[]> {
  const out: ConversationRecord[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await store.listConversations(appId, {
      externalUserId: opts.externalUserId,
      direction: opts.direction ?? 'up',
      cursor,
      limit: opts.limit ?? 7,
    });
    if (!page) throw new Error(`the cursor ${cursor} is not a conversation of ${appId}`);
    out.push(...page.records);
    if (!page.hasMore) return out;
    cursor = page.records.at(-1)!.id;
  }
}

/** The ids of `walk`. */
export async function walkIds(...args: Parameters<typeof walk>): Promise<string[]> {
  return (await walk(...args)).map((r) => r.id);
}
