// Test helper: HTTP requests exactly as written (raw path, any bytes as body, any header), and a
// snapshot of the data directory's bytes and of what the store holds, to prove that a rejected
// request changed nothing.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import type { Store } from '../../src/store/types.ts';
import { walk } from './list-walk.ts';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/** `path` goes on the wire as given (no URL normalisation, unlike fetch). */
export function rawRequest(
  port: number,
  method: string,
  path: string,
  opts: { headers?: Record<string, string | string[]>; body?: string | Buffer } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: opts.headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode!, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/**
 * What a rejected request must leave unchanged: the bytes of every file in the data directory (the
 * conversation journal, each conversation file, usage, idempotency segments, the rate-limit journal),
 * and what the store shows in memory for these apps (records, counters, conversation files).
 * `counted`: the request went to send message or completion, which count before validating (D-4),
 * so a 400 or 404 there legitimately appends to the rate-limit journal: that one file is left out.
 * The key-use journal is always left out: it records, in the background, the earlier accepted
 * requests' keys (D-70), whenever its flush comes.
 */
export async function snapshot(
  server: { store: Store; dataDir: string },
  appIds: readonly string[],
  opts: { counted?: boolean } = {},
): Promise<string> {
  const disk: Array<[string, string]> = [];
  for (const entry of await fs.readdir(server.dataDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.relative(server.dataDir, path.join(entry.parentPath, entry.name));
    if ((opts.counted && file === 'ratelimits.jsonl') || file === path.join('control', 'key-use.jsonl')) continue;
    disk.push([
      file,
      createHash('sha256')
        .update(await fs.readFile(path.join(server.dataDir, file)))
        .digest('hex'),
    ]);
  }
  disk.sort(([a], [b]) => (a < b ? -1 : 1));
  const memory: unknown[] = [];
  for (const app of appIds) {
    const records = await walk(server.store, app, { limit: 100 });
    const files = [];
    for (const r of records) files.push(await server.store.readHistory(r.id));
    memory.push({ app, records, counters: await server.store.appCounters(app), bytes: await server.store.storedBytes(app), files });
  }
  return JSON.stringify({ disk, memory }, null, 1);
}
