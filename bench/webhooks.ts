// `npm run bench -- --webhooks`: the webhooks' two figures. Parley as `npm start` runs it (its own process,
// the file store) and a receiver on loopback that answers 204 at once:
// - events delivered a second: conversations created 10 at a time, one endpoint subscribed to
//   conversation.created; from the first create to the receiver's last event (D-85 sends one attempt at
//   a time per endpoint, so this is one endpoint's rate);
// - the latency a send message gains with three endpoints subscribed to every event: sends one at a time,
//   in alternating rounds without and with the endpoints, medians compared (target: under 1 ms).
import { once } from 'node:events';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { APP, KEY, TARGET_JSON } from '../test/support/helpers.ts';
import { type Child, startChild } from './child.ts';
import { percentile } from './measure.ts';

export interface WebhookFigures {
  events: number;
  eventsPerSecond: number;
  createsPerSecond: number;
  rounds: number;
  sendsPerRound: number;
  /** Milliseconds, one send at a time. */
  without: number[];
  with: number[];
}

export const ADMIN = TARGET_JSON.admin as { email: string; password: string };

/** One JSON call that must answer 200 (the benches' own set-up calls). */
export async function call(base: string, method: string, p: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(base + p, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return { body: JSON.parse(text) as Record<string, any>, headers: res.headers };
}

/** Calls to Parley at `origin`: `/v1` with the demo key, `/admin/v1` with a token the demo admin makes. */
export async function clientsOf(origin: string) {
  const v1 = (method: string, p: string, body?: unknown) => call(`${origin}/v1`, method, p, { authorization: `Bearer ${KEY}` }, body);
  const session = await call(`${origin}/admin/v1`, 'POST', '/sessions', {}, ADMIN);
  const cookie = session.headers.get('set-cookie')!.split(';')[0]!;
  const csrf = { cookie, 'x-csrf-token': session.body.csrf_token as string };
  const token = (await call(`${origin}/admin/v1`, 'POST', '/tokens', csrf, { name: 'bench' })).body.token as string;
  const admin = (method: string, p: string, body?: unknown) =>
    call(`${origin}/admin/v1`, method, p, { authorization: `Bearer ${token}` }, body);
  return { v1, admin };
}

type Clients = Awaited<ReturnType<typeof clientsOf>>;

/** A receiver on loopback answering 204 at once; it counts the deliveries to each path apart. */
export interface Receiver {
  /** The URL of a path of its own: `hook('rate')`. */
  hook(name: string): string;
  received(name: string): number;
  /** When the last delivery to `name` arrived (performance.now()). */
  lastAt(name: string): number;
  stop(): void;
}

export async function startReceiver(): Promise<Receiver> {
  const counts = new Map<string, { n: number; at: number }>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const c = counts.get(req.url ?? '') ?? { n: 0, at: 0 };
      counts.set(req.url ?? '', { n: c.n + 1, at: performance.now() });
      res.writeHead(204).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    hook: (name) => `${base}/hook/${name}`,
    received: (name) => counts.get(`/hook/${name}`)?.n ?? 0,
    lastAt: (name) => counts.get(`/hook/${name}`)?.at ?? 0,
    stop: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** Events a second to one endpoint: `events` conversations created 10 at a time, to the receiver's last delivery. */
export async function deliveryRate(
  c: Clients,
  r: Receiver,
  events: number,
): Promise<{ eventsPerSecond: number; createsPerSecond: number }> {
  const created = await c.admin('POST', '/webhook_endpoints', { app_id: APP, url: r.hook('rate'), events: ['conversation.created'] });
  const before = r.received('rate');
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (next < events) {
        next++;
        await c.v1('POST', `/apps/${APP}/conversations`, {});
      }
    }),
  );
  const acknowledged = performance.now();
  for (const bound = Date.now() + 120_000; r.received('rate') - before < events; ) {
    if (Date.now() > bound) throw new Error(`only ${r.received('rate') - before} of ${events} events arrived within 120 s`);
    await new Promise((res) => setTimeout(res, 10));
  }
  await c.admin('DELETE', `/webhook_endpoints/${created.body.id as string}`);
  return { eventsPerSecond: events / ((r.lastAt('rate') - start) / 1000), createsPerSecond: events / ((acknowledged - start) / 1000) };
}

/** One round: `sends` send messages one at a time without endpoints, then as many with three subscribed to every event. */
export async function sendRound(c: Clients, r: Receiver, sends: number, without: number[], withThree: number[]): Promise<void> {
  const timedSends = async (into: number[]) => {
    const conv = (await c.v1('POST', `/apps/${APP}/conversations`, {})).body.id as string;
    for (let i = 0; i < sends; i++) {
      const t = performance.now();
      await c.v1('POST', `/apps/${APP}/conversations/${conv}`, { message: { content: 'What are the API rate limits?' }, stream: false });
      into.push(performance.now() - t);
    }
  };
  await timedSends(without);
  const ids: string[] = [];
  for (let e = 0; e < 3; e++)
    ids.push((await c.admin('POST', '/webhook_endpoints', { app_id: APP, url: r.hook('all'), events: ['*'] })).body.id);
  await timedSends(withThree);
  for (const id of ids) await c.admin('DELETE', `/webhook_endpoints/${id}`);
}

/** Parley as `npm start` runs it on the file store, from the checkout at `tree` (this one by default). */
export function startWebhooksParley(dataDir: string, fixturesDir: string, tree?: string): Promise<Child> {
  return startChild(tree ? path.join(tree, 'bench', 'parley-server.ts') : 'parley-server.ts', [dataDir, fixturesDir], {
    env: { PARLEY_MODEL: '', OLLAMA_HOST: '', LOG_LEVEL: 'silent', DATABASE_URL: '' },
  });
}

export async function measureWebhooks(fixturesDir: string, tmp: string, quick: boolean, log: (l: string) => void): Promise<WebhookFigures> {
  const receiver = await startReceiver();
  const dataDir = path.join(tmp, 'webhooks-data');
  await fs.mkdir(dataDir, { recursive: true });
  let parley: Child | undefined;
  try {
    parley = await startWebhooksParley(dataDir, fixturesDir);
    const clients = await clientsOf(`http://127.0.0.1:${parley.ready.port}`);
    const events = quick ? 300 : 2000;
    const rate = await deliveryRate(clients, receiver, events);
    log(
      `  ${events} events: ${rate.eventsPerSecond.toFixed(0)} delivered a second (creates acknowledged at ${rate.createsPerSecond.toFixed(0)} a second)`,
    );
    const rounds = quick ? 3 : 8;
    const sendsPerRound = quick ? 30 : 100;
    const figures: WebhookFigures = { events, ...rate, rounds, sendsPerRound, without: [], with: [] };
    for (let r = 0; r < rounds; r++) {
      await sendRound(clients, receiver, sendsPerRound, figures.without, figures.with);
      log(
        `  round ${r + 1}/${rounds}: send p50 ${percentile(figures.without, 50).toFixed(2)} ms without, ${percentile(figures.with, 50).toFixed(2)} ms with 3 endpoints`,
      );
    }
    return figures;
  } finally {
    await parley?.stop();
    receiver.stop();
  }
}

export function webhooksMarkdown(f: WebhookFigures, when: string, machine: string): string {
  const p50 = (v: number[]) => percentile(v, 50);
  const added = p50(f.with) - p50(f.without);
  return [
    `Run ${when}, ${machine}. Parley on the file store in its own process, a receiver on loopback answering 204.`,
    '',
    '| figure | value | target |',
    '|---|---|---|',
    `| events delivered a second to one endpoint (${f.events.toLocaleString('en-US')} conversations created 10 at a time) | ${f.eventsPerSecond.toFixed(0)} (creates acknowledged: ${f.createsPerSecond.toFixed(0)} a second) | |`,
    `| send message p50, one at a time, no endpoint | ${p50(f.without).toFixed(2)} ms | |`,
    `| send message p50 with three endpoints subscribed to every event | ${p50(f.with).toFixed(2)} ms | |`,
    `| latency added at the median (${f.rounds} alternating rounds of ${f.sendsPerRound}) | ${added.toFixed(2)} ms | under 1 ms${added < 1 ? ': met' : ': NOT met'} |`,
  ].join('\n');
}
