// Probe: a stream's first event one request at a time, client-side and server-side (request event →
// first write), with the rate limiter as configured or, with --no-limit, none. Parley and the client
// share this process, so compare runs of the probe with each other, not with `npm run bench`.
// `node --import tsx bench/lab/probe-first.ts [--no-limit]`
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { startParley } from '../../src/app.ts';

const noLimit = process.argv.includes('--no-limit');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'probe-'));
const p = await startParley({
  dataDir: dir,
  port: 0,
  logger: pino({ level: 'silent' }),
  ...(noLimit ? { rateLimiter: { take: () => ({}) } as never } : {}),
});
const server: number[] = [];
p.http.server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
  const t0 = performance.now();
  const w = res.write;
  let done = false;
  const mark = () => {
    if (!done && req.method === 'POST') {
      done = true;
      server.push(performance.now() - t0);
    }
  };
  res.write = function (this: http.ServerResponse, ...a: unknown[]) {
    mark();
    return Reflect.apply(w, this, a);
  } as never;
  const e = res.end;
  res.end = function (this: http.ServerResponse, ...a: unknown[]) {
    mark();
    return Reflect.apply(e, this, a);
  } as never;
});
const AUTH = 'Bearer sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3';
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function req(method: string, url: string, body?: string): Promise<{ first: number; text: string }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = 0;
    const r = http.request(
      { host: '127.0.0.1', port: p.port, method, path: url, agent, headers: { authorization: AUTH, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          if (!first) first = performance.now() - t0;
          text += c;
        });
        res.on('end', () => resolve({ first, text }));
      },
    );
    r.on('error', reject);
    r.end(body);
  });
}
const app = process.argv.includes('--ollama') ? 'app_demo' : 'app_stream';
const ids: string[] = [];
for (let i = 0; i < 300; i++) ids.push(JSON.parse((await req('POST', `/v1/apps/${app}/conversations`, '{}')).text).id);
const body = JSON.stringify({ message: { content: 'Tell me about the Montreal office.' }, stream: true });
const firsts: number[] = [];
const gets: number[] = [];
for (let i = 0; i < 300; i++) {
  firsts.push((await req('POST', `/v1/apps/${app}/conversations/${ids[i]}`, body)).first);
  gets.push((await req('GET', `/v1/apps/${app}/conversations/${ids[(i + 150) % 300]}`)).first);
}
const p50 = (a: number[]) =>
  a
    .slice(50)
    .sort((x, y) => x - y)
    [Math.floor((a.length - 50) / 2)]!.toFixed(3);
console.log(
  `${noLimit ? 'no limiter' : 'limiter'}: stream first p50 ${p50(firsts)} ms, get p50 ${p50(gets)} ms, server-side first write p50 ${p50(server.slice(300))} ms`,
);
await p.close();
fs.rmSync(dir, { recursive: true, force: true });
agent.destroy();
