// A real HTTP receiver of webhooks on 127.0.0.1 (port 0): it records every request (headers and raw
// body) and answers what the test scripts, then 200. Tests wait on `waitFor`, never on time.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: Record<string, string>;
  body: string;
  json: any;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Answers for the next requests, in order; then 200. */
  script(...answers: Answer[]): void;
  /** Resolves once `pred` holds of what was received (checked at each request). */
  waitFor(pred: (r: Received[]) => boolean): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const answers: Answer[] = [];
  const waiters: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      received.push({ headers, body, json });
      const a = answers.shift() ?? { status: 200, body: 'ok' };
      res.writeHead(a.status, a.headers ?? {});
      res.end(a.body ?? '');
      for (const w of waiters.splice(0)) w();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    script: (...a) => answers.push(...a),
    // Tests bound their time with node:test's `timeout`: a webhook that never comes fails the test.
    waitFor: async (pred) => {
      while (!pred(received)) await new Promise<void>((r) => waiters.push(r));
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
