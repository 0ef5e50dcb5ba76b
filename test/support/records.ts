// The store records tests build by hand: one conversation record, one exchange and its save, so that
// each test states only the fields it is about.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ItemT } from '../../src/contract/index.ts';
import type { ConversationRecord, ResponseSave } from '../../src/store/types.ts';

/** A live conversation of app_demo with nothing in it yet; `over` sets what the test is about. */
export function record(id: string, over: Partial<ConversationRecord> = {}): ConversationRecord {
  return {
    id,
    app_id: 'app_demo',
    seq: 1,
    created_at: 1_700_000_000,
    external_user_id: null,
    title: null,
    generated_title: {},
    metadata: {},
    deleted_at: null,
    message_count: 0,
    ...over,
  };
}

/** Response `p`'s items: the user's `hi` and the assistant's `hello`. */
export const exchange = (p: string, createdAt = 1): ItemT[] =>
  [
    { id: `msg_u${p}`, type: 'message', role: 'user', content: [{ type: 'text', text: 'hi' }], created_at: createdAt, response_id: p },
    {
      id: `msg_a${p}`,
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'hello' }],
      created_at: createdAt,
      response_id: p,
    },
  ] as unknown as ItemT[];

/** The save of response `p` of conversation `id`: its exchange, two messages more, and `claim` when given. */
export const save = (id: string, p: string, claim?: ResponseSave['claim'], createdAt = 1): ResponseSave => ({
  conversationId: id,
  items: exchange(p, createdAt),
  response: { id: p, created_at: createdAt, status: 'completed', usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3 } as never },
  apply: (r) => ({ ...r, message_count: r.message_count + 2 }),
  claim,
});

/**
 * Writes conversation `id`'s history in the earlier release's format (D-29): one JSON document,
 * `<id>.json`, holding response `p`'s exchange and its completed response.
 */
export async function legacyHistory(dataDir: string, id: string, p: string): Promise<void> {
  const dir = path.join(dataDir, 'conversations', id.slice(-2));
  await fs.mkdir(dir, { recursive: true });
  await fs.writeFile(
    path.join(dir, `${id}.json`),
    JSON.stringify({ items: exchange(p), responses: [{ id: p, created_at: 1, status: 'completed' }] }),
  );
}
