// CPU per request, A/B: `node --import tsx bench/lab/ab-cpu.ts <otherTreeRoot> [op=get|list|rename|create|send] [conversations=1000] [rounds=5] [requests=20000]`.
// Throughput on this shared 2-core machine moves by ±10 % from round to round; the server's own CPU
// time per request (process.cpuUsage over a fixed number of requests) moves far less, so it shows a
// change of a few percent. Runs the raw baseline, Parley from another checkout (A) and from this one
// (B) on the same data, in interleaved rounds, and prints µs of server CPU per request.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startChild, type Child } from '../child.ts';
import { benchFixtures, seed } from '../data.ts';
import { load, percentile } from '../measure.ts';

const [other, op = 'get', countText = '1000', roundsText = '5', requestsText = '20000'] = process.argv.slice(2);
const APP = 'app_demo';
const AUTH = { authorization: 'Bearer sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3' };
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-abcpu-'));
try {
  const fixtures = await benchFixtures(path.join(tmp, 'fixtures'));
  const ids = await seed(path.join(tmp, 'a'), APP, Number(countText));
  await fs.cp(path.join(tmp, 'a'), path.join(tmp, 'b'), { recursive: true });
  const any = () => ids[Math.floor(Math.random() * ids.length)]!;
  const base = `/v1/apps/${APP}/conversations`;
  const message = JSON.stringify({ message: { content: 'What are the opening hours of the Montreal office?' }, stream: false });
  const specs: Record<string, { method: 'GET' | 'POST' | 'PATCH'; raw: string; path: () => string; body?: string }> = {
    get: { method: 'GET', raw: '/get', path: () => `${base}/${any()}` },
    list: { method: 'GET', raw: '/list', path: () => `${base}?limit=20&after=${any()}` },
    rename: { method: 'PATCH', raw: '/post', path: () => `${base}/${any()}`, body: JSON.stringify({ title: 'Renamed by the benchmark' }) },
    create: { method: 'POST', raw: '/post', path: () => base, body: JSON.stringify({ title: 'Created by the benchmark' }) },
    // The embedded engine, JSON: a whole exchange (begin, events, save) per request.
    send: { method: 'POST', raw: '/message', path: () => `${base}/${any()}`, body: message },
  };
  const spec = specs[op];
  if (!spec) throw new Error(`unknown operation ${op} (${Object.keys(specs).join(', ')})`);
  const raw = await startChild('baseline-server.ts');
  const a = await startChild(path.join(path.resolve(other!), 'bench', 'parley-server.ts'), [path.join(tmp, 'a'), fixtures]);
  const b = await startChild('parley-server.ts', [path.join(tmp, 'b'), fixtures]);
  const servers: Record<string, { c: Child; path: () => string }> = {
    raw: { c: raw, path: () => spec.raw },
    A: { c: a, path: spec.path },
    B: { c: b, path: spec.path },
  };
  const cpu = async (c: Child) => (await c.ask<{ cpuUs: number }>('stats')).cpuUs;
  const got: Record<string, number[]> = { raw: [], A: [], B: [] };
  for (const s of Object.values(servers))
    await load({ port: s.c.ready.port, method: spec.method, path: s.path, body: spec.body, headers: AUTH, connections: 10, seconds: 1 });
  for (let r = 0; r < Number(roundsText); r++) {
    for (const [name, s] of Object.entries(servers)) {
      const before = await cpu(s.c);
      const res = await load({
        port: s.c.ready.port,
        method: spec.method,
        path: s.path,
        body: spec.body,
        headers: AUTH,
        connections: 10,
        seconds: 0,
        amount: Number(requestsText),
      });
      got[name]!.push((await cpu(s.c)) - before) / 1;
      got[name]![got[name]!.length - 1]! /= res.requests;
    }
    console.log(
      `round ${r + 1}: µs of CPU per ${op}: raw ${got.raw!.at(-1)!.toFixed(1)}  A ${got.A!.at(-1)!.toFixed(1)}  B ${got.B!.at(-1)!.toFixed(1)}`,
    );
  }
  const med = (v: number[]) => percentile(v, 50);
  console.log(
    `median µs/request: raw ${med(got.raw!).toFixed(1)}  A ${med(got.A!).toFixed(1)}  B ${med(got.B!).toFixed(1)}; B ÷ A ${(med(got.B!) / med(got.A!)).toFixed(3)}; raw ÷ A ${(med(got.raw!) / med(got.A!)).toFixed(2)}, raw ÷ B ${(med(got.raw!) / med(got.B!)).toFixed(2)}`,
  );
  for (const s of Object.values(servers)) await s.c.stop();
} finally {
  await fs.rm(tmp, { recursive: true, force: true });
}
