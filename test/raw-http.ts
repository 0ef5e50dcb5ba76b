// Test helper: HTTP requests exactly as written (raw path, any bytes as body, any header), and a
// snapshot of what the store holds, to prove that a rejected request changed nothing.
import http from 'node:http';
import type { Store } from '../src/store/types.ts';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/** `path` goes on the wire as given (no URL normalisation, unlike fetch). */
export function rawRequest(port: number, method: string, path: string, opts: { headers?: Record<string, string | string[]>; body?: string | Buffer } = {}): Promise<RawResponse> {
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

/** Everything the store would show for these apps: records, counters and each conversation file. */
export async function snapshot(store: Store, appIds: readonly string[]): Promise<string> {
  const out: unknown[] = [];
  for (const app of appIds) {
    const records = store.conversationsOf(app);
    const files = [];
    for (const r of records) files.push(await store.readConversationFile(r.id));
    out.push({ app, records, counters: store.appCounters(app), files });
  }
  return JSON.stringify(out);
}
