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

/** `rule`: the answer to each request that no scripted answer is left for (else 200). */
export async function startReceiver(rule?: (r: Received) => Answer): Promise<Receiver> {
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
      const a = answers.shift() ?? rule?.({ headers, body, json }) ?? { status: 200, body: 'ok' };
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

/** Signs the demo admin in at `origin` and returns a personal access token (the fixtures' password, README). */
export async function demoAdminToken(origin: string): Promise<string> {
  const s = await fetch(`${origin}/admin/v1/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@demo.example', password: 'parley-demo-admin' }),
  });
  if (s.status !== 200) throw new Error(`sign-in answered ${s.status}: ${await s.text()}`);
  const session = (await s.json()) as { csrf_token: string };
  const t = await fetch(`${origin}/admin/v1/tokens`, {
    method: 'POST',
    headers: {
      cookie: s.headers.get('set-cookie')!.split(';')[0]!,
      'x-csrf-token': session.csrf_token,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ name: 'webhooks' }),
  });
  return ((await t.json()) as { token: string }).token;
}

/** Creates an endpoint of `app` at `origin` with `token`; returns its id. */
export async function createEndpoint(origin: string, token: string, url: string, events: string[], app: string): Promise<string> {
  const r = await fetch(`${origin}/admin/v1/webhook_endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ app_id: app, url, events }),
  });
  const body = (await r.json()) as { id: string };
  if (r.status !== 200) throw new Error(`creating an endpoint answered ${r.status}: ${JSON.stringify(body)}`);
  return body.id;
}
