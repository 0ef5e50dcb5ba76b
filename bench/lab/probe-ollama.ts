// Probe: where the Ollama proxy's time to first token goes. Marks (ms after the request event, p50
// of 80 requests) at each step inside Parley, which runs in this process with the client; the fake
// Ollama runs in a child. `node --import tsx bench/lab/probe-ollama.ts`
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { startParley } from '../../src/app.ts';
import { patientFetch } from '../../src/engines/ollama-fetch.ts';
import { startChild } from '../child.ts';
import { RateLimitService } from '../../src/pipeline/rate-limit.ts';
import { ConversationService } from '../../src/services/conversations.ts';

const origTake = RateLimitService.prototype.take;
RateLimitService.prototype.take = function (this: RateLimitService, app) {
  mark('take begin');
  const r = origTake.call(this, app);
  mark('take end');
  return r;
};
const origFind = ConversationService.prototype.find;
ConversationService.prototype.find = function (this: ConversationService, ...a: any[]) {
  mark('find (body parsed)');
  return (origFind as any).apply(this, a);
} as never;
const fake = await startChild('fake-ollama.ts', ['20', '1']);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'probe-'));
const marks: Record<string, number[]> = {};
let t0 = 0;
let seen = new Set<string>();
const mark = (name: string) => {
  if (seen.has(name)) return;
  seen.add(name);
  (marks[name] ??= []).push(performance.now() - t0);
};
const base = patientFetch();
const ollamaFetch = (async (input: any, init: any) => {
  mark('fetch called');
  const r = await base(input, init);
  mark('fetch resolved');
  return r;
}) as typeof fetch;
const p = await startParley({
  dataDir: dir,
  port: 0,
  logger: pino({ level: 'silent' }),
  model: 'ollama:bench',
  ollamaHost: `http://127.0.0.1:${fake.ready.port}`,
  ollamaFetch,
} as never);
p.http.server.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
  t0 = performance.now();
  seen = new Set();
  const w = res.write;
  let n = 0;
  res.write = function (this: http.ServerResponse, ...a: unknown[]) {
    n++;
    if (n === 1) mark('created written');
    if (String(a[0]).includes('output_text.delta')) mark('first delta written');
    return Reflect.apply(w, this, a);
  } as never;
});
const idem = p.idempotency as any;
const origRun = idem.run.bind(idem);
idem.run = (ctx: unknown, next: () => Promise<unknown>) => {
  mark('idempotency run');
  return origRun(ctx, () => {
    mark('handler');
    return next();
  });
};
const rs = p.responses as any;
const origStart = rs.start.bind(rs);
rs.start = async (...a: unknown[]) => {
  mark('start begin');
  const r = await origStart(...a);
  mark('start end');
  const ev = r.run.events.bind(r.run);
  r.run.events = () => {
    mark('events()');
    return ev();
  };
  return r;
};
const AUTH = 'Bearer sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3';
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function req(method: string, url: string, body?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const r = http.request(
      { host: '127.0.0.1', port: p.port, method, path: url, agent, headers: { authorization: AUTH, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          if (text === '' && method === 'POST' && url.split('/').length > 5) mark('client first data');
          text += c;
        });
        res.on('end', () => resolve(text));
      },
    );
    r.on('error', reject);
    r.end(body);
  });
}
const app = 'app_stream';
const ids: string[] = [];
for (let i = 0; i < 100; i++) ids.push(JSON.parse(await req('POST', `/v1/apps/${app}/conversations`, '{}')).id);
for (const k of Object.keys(marks)) delete marks[k];
const body = JSON.stringify({ message: { content: 'Hello' }, stream: true });
for (let i = 0; i < 100; i++) await req('POST', `/v1/apps/${app}/conversations/${ids[i]}`, body);
const p50 = (a: number[]) =>
  a
    .slice(20)
    .sort((x, y) => x - y)
    [Math.floor((a.length - 20) / 2)]!.toFixed(3);
for (const [k, v] of Object.entries(marks)) console.log(k.padEnd(22), p50(v), `(${v.length})`);
await p.close();
await fake.stop();
fs.rmSync(dir, { recursive: true, force: true });
agent.destroy();
