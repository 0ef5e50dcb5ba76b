// The benchmark's data: conversations of 4 items shaped like the ones Parley writes (D-14), and seeding
// through the store's bulk path (FileStore.importConversations), never over HTTP.
import fs from 'node:fs/promises';
import path from 'node:path';
import { newId } from '../src/core/ids.ts';
import { FileStore } from '../src/store/file/file-store.ts';
import type { History, ConversationRecord } from '../src/store/types.ts';

/** The fixtures' demo secret key, as the benchmark's requests send it. */
export const AUTH = { authorization: 'Bearer sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3' };

/** The app whose conversations the stream and proxy figures use (plain answers, no tools). */
export const STREAM_APP = 'app_stream';

const USER_TEXT = 'What are the opening hours of the Montreal office, and can I book a visit next week?';
const ASSISTANT_TEXT =
  'The Montreal office is open from 9:00 to 17:00, Monday to Friday. You can book a visit through the front desk; next week has free slots on Tuesday and Thursday.';

/** One conversation of 4 items (two exchanges) and its two responses. */
export function sampleConversation(appId: string, seq: number, n: number): { record: ConversationRecord; file: History } {
  const createdAt = 1_760_000_000 + Math.floor(n / 10);
  const record: ConversationRecord = {
    id: newId('conversation'),
    app_id: appId,
    seq,
    created_at: createdAt,
    external_user_id: `user_${n % 1000}`,
    title: null,
    generated_title: { 'en-ca': 'Montreal office hours', 'fr-ca': 'Heures du bureau de Montréal' },
    metadata: { plan: 'pro', locale: 'en-CA' },
    deleted_at: null,
    message_count: 4,
  };
  const items: History['items'] = [];
  const responses: History['responses'] = [];
  for (let turn = 0; turn < 2; turn++) {
    const responseId = newId('response');
    items.push({
      id: newId('message'),
      type: 'message',
      role: 'user',
      content: [{ type: 'text', text: USER_TEXT }],
      created_at: createdAt,
      response_id: responseId,
    });
    items.push({
      id: newId('message'),
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: ASSISTANT_TEXT }],
      created_at: createdAt,
      response_id: responseId,
    });
    responses.push({
      id: responseId,
      created_at: createdAt,
      status: 'completed',
      usage: { input_tokens: 21, output_tokens: 38, total_tokens: 59 },
    });
  }
  return { record, file: { items, responses } };
}

/**
 * Brings `dataDir` to `total` conversations of `appId` (it may already hold some) and returns the ids
 * of all of them, oldest first. Imports in chunks so that memory stays bounded.
 */
export async function seed(dataDir: string, appId: string, total: number, onProgress?: (done: number) => void): Promise<string[]> {
  const store = new FileStore({ dataDir });
  await store.open();
  try {
    const ids = store.conversationsOf(appId).map((r) => r.id);
    const CHUNK = 5_000;
    while (ids.length < total) {
      const n = Math.min(CHUNK, total - ids.length);
      const seqs = await Promise.all(Array.from({ length: n }, () => store.nextSeq()));
      const entries = Array.from({ length: n }, (_, i) => sampleConversation(appId, seqs[i]!, ids.length + i));
      await store.importConversations(entries);
      for (const e of entries) ids.push(e.record.id);
      onProgress?.(ids.length);
    }
    return ids;
  } finally {
    await store.close();
  }
}

/**
 * A copy of the project's fixtures (knowledge bases and forms included) in `dir`, with the plans'
 * rate limits and storage quotas raised (D-23 and D-27 are not what the benchmark measures) and STREAM_APP set for long streams.
 */
export async function benchFixtures(dir: string): Promise<string> {
  await fs.cp(path.resolve(import.meta.dirname, '..', 'fixtures'), dir, { recursive: true });
  const file = path.join(dir, 'fixtures.json');
  const fixtures = JSON.parse(await fs.readFile(file, 'utf8')) as {
    plans: Array<{ requests_per_minute: number; requests_per_day: number; storage_bytes?: number }>;
    apps: Array<{ id: string; agent: Record<string, unknown> }>;
  };
  for (const plan of fixtures.plans) {
    plan.requests_per_minute = 1_000_000_000;
    plan.requests_per_day = 1_000_000_000;
    // Nor the storage quota (D-27): 100,000 conversations of 16 KB metadata are 1.6 GB.
    plan.storage_bytes = 2 ** 50;
  }
  // The stream app answers one character per delta with no pause: streams long enough to time.
  const stream = fixtures.apps.find((a) => a.id === STREAM_APP);
  if (stream) stream.agent.testing = { latency_ms: 0, chunk_chars: 1 };
  await fs.writeFile(file, JSON.stringify(fixtures));
  return dir;
}
