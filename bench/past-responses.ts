// A long history of responses, written directly (not through the API), for the start-up figures of
// `npm run bench` and the proof of D-93 (test/proof/response-growth.test.ts): `past` responses as the
// earlier release's index lists them (a line each in `responses/index.jsonl`), and `hour` responses
// ended within D-36's hour, each with its file. Start-up moves that layout once (response-files.ts);
// from then on it reads the hour's index only.
import fs from 'node:fs/promises';
import path from 'node:path';
import { startChild } from './child.ts';

export interface SeededResponses {
  /** Bytes of the index lines written, and of the hour's files. */
  indexBytes: number;
  hourBytes: number;
  /** A few ids of each kind, with their conversation, for look-ups. */
  pastSample: { id: string; conversation: string }[];
  hourSample: { id: string; conversation: string }[];
}

/** Ids shaped as the service makes them (D-7: a prefix and 24 hex digits), `a…` past, `b…` of the hour. */
const id = (prefix: string, kind: 'p' | 'h', n: number) => `${prefix}${kind === 'p' ? 'a' : 'b'}${n.toString(16).padStart(23, '0')}`;

/** Writes the history into `<dataDir>/responses` (the folder must not hold one yet). */
export async function seedPastResponses(dataDir: string, app: string, past: number, hour: number): Promise<SeededResponses> {
  const dir = path.join(dataDir, 'responses');
  await fs.mkdir(dir, { recursive: true });
  const at = Math.floor(Date.now() / 1000) - 7 * 86_400;
  let indexBytes = 0;
  const fh = await fs.open(path.join(dir, 'index.jsonl'), 'wx');
  try {
    for (let n = 0; n < past; n += 10_000) {
      let chunk = '';
      for (let k = n; k < Math.min(past, n + 10_000); k++) {
        chunk += `${JSON.stringify({ id: id('resp_', 'p', k), a: app, c: id('conv_', 'p', k), at: at + k })}\n`;
      }
      indexBytes += Buffer.byteLength(chunk);
      await fh.write(chunk);
    }
  } finally {
    await fh.close();
  }
  let hourBytes = 0;
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
    hourBytes += Buffer.byteLength(text);
    await fs.writeFile(path.join(dir, `${rid}.jsonl`), text);
  }
  const sample = (kind: 'p' | 'h', count: number) =>
    [0, Math.floor(count / 2), count - 1]
      .filter((k) => k >= 0)
      .map((k) => ({ id: id('resp_', kind, k), conversation: id('conv_', kind, k) }));
  return { indexBytes, hourBytes, pastSample: sample('p', past), hourSample: sample('h', hour) };
}

export interface PastStartup {
  past: number;
  hour: number;
  indexBytes: number;
  /** The first start, which moves the earlier layout once; then the median of the later ones. */
  firstMs: number;
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
  const seeded = await seedPastResponses(dataDir, 'app_demo', past, hour);
  const once = async () => {
    const child = await startChild('parley-server.ts', [dataDir, fixturesDir]);
    const ready = { ms: child.ready.processToReadyMs as number, rss: child.ready.rss as number };
    await child.stop();
    return ready;
  };
  const first = await once();
  const later: { ms: number; rss: number }[] = [];
  for (let i = 0; i < rounds; i++) later.push(await once());
  later.sort((a, b) => a.ms - b.ms);
  const mid = later[Math.floor(later.length / 2)]!;
  return { past, hour, indexBytes: seeded.indexBytes, firstMs: first.ms, laterMs: mid.ms, laterRss: mid.rss };
}
