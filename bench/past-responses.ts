// A long history of responses, written directly (not through the API), for the start-up figures of
// `npm run bench` and the proof of D-93 (test/proof/response-growth.test.ts), in the response log's
// layout (src/store/file/response-files.ts): `past` responses in the past index (a line each in
// `responses/past/<day>/<xx>.jsonl`, ended two days ago), and `hour` responses ended within D-36's
// hour, each with its file in `events/<xx>/` and its line in the hour's index (`ended/<minute>.jsonl`).
// Start-up reads the hour's index only.
import fs from 'node:fs/promises';
import path from 'node:path';
import { startChild } from './child.ts';

export interface SeededResponses {
  /** Bytes of the past index's lines written, and of the hour's files. */
  indexBytes: number;
  hourBytes: number;
  /** A few ids of each kind, with their conversation, for look-ups. */
  pastSample: { id: string; conversation: string }[];
  hourSample: { id: string; conversation: string }[];
}

/** Ids shaped as the service makes them (D-7: a prefix and 24 hex digits), `a…` past, `b…` of the hour. */
const id = (prefix: string, kind: 'p' | 'h', n: number) => `${prefix}${kind === 'p' ? 'a' : 'b'}${n.toString(16).padStart(23, '0')}`;

/** Sharded by the id's last two characters, as the response log does (past-index.ts `shard`). */
const shard = (rid: string) => rid.slice(-2);

/** Writes the history into `<dataDir>/responses` (the folder must not hold one yet). */
export async function seedPastResponses(dataDir: string, app: string, past: number, hour: number): Promise<SeededResponses> {
  const dir = path.join(dataDir, 'responses');
  await fs.mkdir(dataDir, { recursive: true });
  await fs.mkdir(dir);
  const at = Math.floor(Date.now() / 1000) - 7 * 86_400;
  const pastEnd = Date.now() - 2 * 86_400_000;
  const day = path.join(dir, 'past', String(Math.floor(pastEnd / 86_400_000)));
  await fs.mkdir(day, { recursive: true });
  let indexBytes = 0;
  for (let n = 0; n < past; n += 100_000) {
    const shards = new Map<string, string[]>();
    for (let k = n; k < Math.min(past, n + 100_000); k++) {
      const rid = id('resp_', 'p', k);
      const lines = shards.get(shard(rid)) ?? [];
      lines.push(`${JSON.stringify({ id: rid, a: app, c: id('conv_', 'p', k), at: at + k, end: pastEnd })}\n`);
      shards.set(shard(rid), lines);
    }
    for (const [name, lines] of shards) {
      const chunk = lines.join('');
      indexBytes += Buffer.byteLength(chunk);
      await fs.appendFile(path.join(day, `${name}.jsonl`), chunk);
    }
  }
  let hourBytes = 0;
  const hourEnd = Date.now() - 10 * 60_000;
  const ended: string[] = [];
  for (let k = 0; k < hour; k++) {
    const rid = id('resp_', 'h', k);
    const start = {
      id: rid,
      app_id: app,
      conversation_id: id('conv_', 'h', k),
      created_at: at,
      input: { content: 'Hello', metadata: null },
    };
    const events = [
      { event: 'response.created', data: { id: rid, object: 'response', status: 'in_progress' } },
      { event: 'response.output_text.delta', data: { delta: 'Hello there.', output_index: 0, content_index: 0 } },
      { event: 'response.completed', data: { id: rid, status: 'completed' } },
    ];
    const text = [start, ...events].map((l) => `${JSON.stringify(l)}\n`).join('');
    const b = Buffer.byteLength(text);
    hourBytes += b;
    await fs.mkdir(path.join(dir, 'events', shard(rid)), { recursive: true });
    await fs.writeFile(path.join(dir, 'events', shard(rid), `${rid}.jsonl`), text);
    ended.push(`${JSON.stringify({ id: rid, a: app, c: start.conversation_id, at, end: hourEnd, b })}\n`);
  }
  await fs.mkdir(path.join(dir, 'ended'));
  await fs.writeFile(path.join(dir, 'ended', `${Math.floor(hourEnd / 60_000)}.jsonl`), ended.join(''));
  const sample = (kind: 'p' | 'h', count: number) =>
    [0, Math.floor(count / 2), count - 1]
      .filter((k) => k >= 0)
      .map((k) => ({ id: id('resp_', kind, k), conversation: id('conv_', kind, k) }));
  return { indexBytes, hourBytes, pastSample: sample('p', past), hourSample: sample('h', hour) };
}

export interface PastStartup {
  past: number;
  hour: number;
  /** The median of the starts after a first one (which warms the page cache for the data just written). */
  laterMs: number;
  laterRss: number;
}

/** Start-up of a server over `past` responses of history (process start → listening). */
export async function measurePastStartup(
  tmp: string,
  fixturesDir: string,
  past: number,
  hour: number,
  rounds: number,
): Promise<PastStartup> {
  const dataDir = path.join(tmp, 'data-past');
  await seedPastResponses(dataDir, 'app_demo', past, hour);
  const once = async () => {
    const child = await startChild('parley-server.ts', [dataDir, fixturesDir]);
    const ready = { ms: child.ready.processToReadyMs as number, rss: child.ready.rss as number };
    await child.stop();
    return ready;
  };
  await once();
  const later: { ms: number; rss: number }[] = [];
  for (let i = 0; i < rounds; i++) later.push(await once());
  later.sort((a, b) => a.ms - b.ms);
  const mid = later[Math.floor(later.length / 2)]!;
  return { past, hour, laterMs: mid.ms, laterRss: mid.rss };
}
