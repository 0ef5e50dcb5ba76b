// Memory and disk under the writes D-27…D-29 bound (large metadata, renames, long histories), as
// `npm run bench` runs them, or alone: `node --import tsx bench/bounds.ts [conversations]`.
// - resident memory and start-up time with N conversations whose metadata is the largest allowed
//   (16 KB of `{"a":[{},{},…]}`, the shape that costs most as parsed objects), after start-up and
//   after a load of get, list and rename;
// - journal bytes appended per rename of such a conversation, and per exchange;
// - time of one send message (JSON) against the length of the conversation: long messages
//   (30,000 characters) sent one at a time, the median of 5 sends around 2, 12, 22, 32 and 42 exchanges.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startChild } from './child.ts';
import { AUTH, benchFixtures } from './data.ts';
import { load } from './measure.ts';
import { newId } from '../src/core/ids.ts';
import { FileStore } from '../src/store/file/file-store.ts';
import type { ConversationRecord } from '../src/store/types.ts';

const APP = 'app_demo';
const BASE = `/v1/apps/${APP}/conversations`;

/** 16 KB of compact JSON (D-9's maximum) made of empty objects. */
export function largestMetadata(): Record<string, unknown> {
  const m = { a: [] as unknown[] };
  while (JSON.stringify(m).length < 16_384 - 3) m.a.push({});
  return m;
}

export interface BoundsFigures {
  conversations: number;
  seedMs: number;
  journalBytes: number;
  startupMs: number;
  rssAfterStartup: number;
  rssAfterLoad: number;
  loadRps: { get: number; list: number; rename: number };
  renameJournalBytes: number;
  exchangeJournalBytes: number;
  /** [exchanges so far, ms of the next send, bytes of its history file]. */
  sendByLength: Array<[number, number, number]>;
  /** [exchanges so far, ms to save the next one, items]: the store alone. */
  saveByLength: Array<[number, number, number]>;
}

/** Seeds `n` conversations with the largest metadata, journal only (no history: never used). */
async function seedLarge(dataDir: string, n: number): Promise<string[]> {
  const store = new FileStore({ dataDir });
  await store.open();
  const metadata = largestMetadata();
  const ids: string[] = [];
  try {
    for (let done = 0; done < n; ) {
      const chunk = Math.min(2_000, n - done);
      const seqs = await Promise.all(Array.from({ length: chunk }, () => store.nextSeq()));
      const entries = Array.from({ length: chunk }, (_, i) => {
        const record: ConversationRecord = {
          id: newId('conversation'),
          app_id: APP,
          seq: seqs[i]!,
          created_at: 1_760_000_000,
          external_user_id: `user_${(done + i) % 1000}`,
          title: null,
          generated_title: {},
          metadata,
          deleted_at: null,
          message_count: 0,
        };
        return { record };
      });
      await store.importConversations(entries);
      for (const e of entries) ids.push(e.record.id);
      done += chunk;
    }
  } finally {
    await store.close();
  }
  return ids;
}

/**
 * The store alone (no model, no HTTP): the time to save one exchange of a 30,000-character message
 * and its reply, against the conversation's length; median of 5 around 2, 12, 22, 32 and 42 exchanges.
 */
async function saveByLength(dir: string): Promise<Array<[number, number, number]>> {
  const store = new FileStore({ dataDir: dir });
  await store.open();
  const out: Array<[number, number, number]> = [];
  try {
    const record: ConversationRecord = {
      id: newId('conversation'),
      app_id: APP,
      seq: await store.nextSeq(),
      created_at: 1,
      external_user_id: null,
      title: null,
      generated_title: {},
      metadata: {},
      deleted_at: null,
      message_count: 0,
    };
    await store.putConversation(record);
    const text = 'Tell me more about the opening hours. '.repeat(800).slice(0, 30_000);
    let window: number[] = [];
    for (let i = 0; i < 45; i++) {
      const response = newId('response');
      const items = [
        { id: newId('message'), type: 'message', role: 'user', content: [{ type: 'text', text }], created_at: 1, response_id: response },
        {
          id: newId('message'),
          type: 'message',
          role: 'assistant',
          content: [{ type: 'text', text: text.slice(0, 2_000) }],
          created_at: 1,
          response_id: response,
        },
      ] as never[];
      const current = (await store.getConversation(record.id))!;
      const t = performance.now();
      await store.appendToConversation({ ...current, metadata: {}, message_count: current.message_count + 2 }, items, {
        id: response,
        created_at: 1,
        status: 'completed',
      });
      window.push(performance.now() - t);
      if (i % 10 === 4) {
        out.push([i - 2, window.sort((a, b) => a - b)[2]!, (await store.readHistory(record.id)).items.length]);
      }
      if (i % 5 === 4) window = [];
    }
  } finally {
    await store.close();
  }
  return out;
}

export async function measureBounds(n: number, seconds: number, log: (line: string) => void): Promise<BoundsFigures> {
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-bounds-'));
  try {
    const fixtures = await benchFixtures(path.join(tmp, 'fixtures'));
    const dataDir = path.join(tmp, 'data');
    const t0 = performance.now();
    const ids = await seedLarge(dataDir, n);
    const seedMs = performance.now() - t0;
    const journal = path.join(dataDir, 'conversations.jsonl');
    const journalBytes = (await fs.stat(journal)).size;
    log(
      `  seeded ${n.toLocaleString('en-US')} conversations with 16 KB metadata in ${(seedMs / 1000).toFixed(1)} s (journal ${(journalBytes / 2 ** 20).toFixed(0)} MB)`,
    );
    const child = await startChild('parley-server.ts', [dataDir, fixtures], {
      env: { LOG_LEVEL: 'silent', PARLEY_MODEL: '', OLLAMA_HOST: '' },
      timeoutMs: 600_000,
    });
    try {
      const port = child.ready.port;
      const startupMs = Number(child.ready.processToReadyMs);
      const rssAfterStartup = Number(child.ready.rss);
      log(`  start-up ${(startupMs / 1000).toFixed(2)} s, rss ${(rssAfterStartup / 2 ** 20).toFixed(0)} MB`);
      const any = () => ids[Math.floor(Math.random() * ids.length)]!;
      const rps = async (method: 'GET' | 'PATCH', p: () => string, body?: string) =>
        (await load({ port, method, path: p, body, headers: AUTH, connections: 10, seconds })).rps;
      const renameBody = JSON.stringify({ title: 'Renamed by the benchmark' });
      const loadRps = {
        get: await rps('GET', () => `${BASE}/${any()}`),
        list: await rps('GET', () => `${BASE}?limit=20&after=${any()}`),
        rename: await rps('PATCH', () => `${BASE}/${any()}`, renameBody),
      };
      const rssAfterLoad = (await child.ask<{ rss: number }>('stats')).rss;
      log(
        `  after get ${Math.round(loadRps.get)}, list ${Math.round(loadRps.list)}, rename ${Math.round(loadRps.rename)} req/s: rss ${(rssAfterLoad / 2 ** 20).toFixed(0)} MB`,
      );

      const request = async (method: string, p: string, body: string) => {
        const t = performance.now();
        const res = await fetch(`http://127.0.0.1:${port}${p}`, { method, headers: { ...AUTH, 'content-type': 'application/json' }, body });
        const text = await res.text();
        if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
        return { ms: performance.now() - t, body: text };
      };
      // Journal bytes of one rename and one exchange of a conversation with 16 KB of metadata.
      const id = ids[0]!;
      const size = async () => (await fs.stat(journal)).size;
      let before = await size();
      const renames = 50;
      for (let i = 0; i < renames; i++) await request('PATCH', `${BASE}/${id}`, JSON.stringify({ title: `Title ${i}` }));
      const renameJournalBytes = ((await size()) - before) / renames;
      const send = (conv: string, content: string) =>
        request('POST', `${BASE}/${conv}`, JSON.stringify({ message: { content }, stream: false }));
      before = await size();
      await send(id, 'Hello');
      const exchangeJournalBytes = (await size()) - before;
      log(`  journal bytes per rename ${renameJournalBytes.toFixed(0)}, per exchange ${exchangeJournalBytes}`);

      // Send time against the conversation's length (long messages, one at a time).
      const created = JSON.parse((await request('POST', BASE, '{}')).body) as { id: string };
      const history = path.join(dataDir, 'conversations', created.id.slice(-2), `${created.id}.jsonl`);
      const long = 'Tell me more about the opening hours. '.repeat(800).slice(0, 30_000);
      const sendByLength: BoundsFigures['sendByLength'] = [];
      let window: number[] = [];
      for (let i = 0; i < 45; i++) {
        window.push((await send(created.id, `${i} ${long}`)).ms);
        // The median of 5 sends around 0, 10, 20, 30 and 40 exchanges (one send is noisy).
        if (window.length === 5 && i % 10 === 4) {
          const bytes = (
            await fs
              .stat(history)
              .catch(() => fs.stat(history.slice(0, -1)))
              .catch(() => ({ size: 0 }))
          ).size;
          sendByLength.push([i - 2, window.sort((a, b) => a - b)[2]!, bytes]);
        }
        if (i % 10 === 4) window = [];
        if (i % 10 === 9) window = [];
      }
      log(
        `  send message by conversation length: ${sendByLength.map(([n, ms, b]) => `${n} exchanges ${ms.toFixed(1)} ms (${(b / 2 ** 20).toFixed(1)} MB)`).join(', ')}`,
      );
      const saves = await saveByLength(path.join(tmp, 'save'));
      log(`  saving one exchange (store alone): ${saves.map(([x, t]) => `${x} exchanges ${t.toFixed(1)} ms`).join(', ')}`);
      return {
        saveByLength: saves,
        conversations: n,
        seedMs,
        journalBytes,
        startupMs,
        rssAfterStartup,
        rssAfterLoad,
        loadRps,
        renameJournalBytes,
        exchangeJournalBytes,
        sendByLength,
      };
    } finally {
      await child.stop();
    }
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const n = Number(process.argv[2] ?? 100_000);
  console.log(`bounds: ${n.toLocaleString('en-US')} conversations, Node ${process.version}`);
  console.log(JSON.stringify(await measureBounds(n, Number(process.argv[3] ?? 3), (l) => console.log(l))));
}
