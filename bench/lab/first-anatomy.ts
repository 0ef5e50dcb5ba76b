// The first event of a streamed send, step by step, in the benchmark's own layout: Parley in a process
// of its own on the file store (300 conversations seeded, as `npm run bench -- --ab` seeds them), the
// durable-begin floor (D-161) in another, and the client here, one request at a time, floor and
// Parley in alternating rounds. Both servers are marked inside by bench/lab/first-marks.ts (their code
// unchanged); each request's time splits into its way to the server (sent → request event, on the
// monotonic clock both processes share), the server's work (→ its first write) and the way back.
// `node --import tsx bench/lab/first-anatomy.ts [rounds=6] [streams=30]`
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { type Child, PARLEY_ENV, startChild } from '../child.ts';
import { AUTH, benchFixtures, seed, STREAM_APP } from '../data.ts';
import { percentile } from '../measure.ts';

const rounds = Number(process.argv[2] ?? 6);
const streams = Number(process.argv[3] ?? 30);
const MARKS = ['--import', path.join(import.meta.dirname, 'first-marks.ts')];
const body = JSON.stringify({ message: { content: 'Tell me about the Montreal office.' }, stream: true });
const med = (v: number[]) => percentile(v, 50);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** One request, read to its end: when it was sent and when its first event came, on the monotonic clock (ns). */
function exchange(port: number, method: string, url: string, text?: string): Promise<{ sent: bigint; first: bigint }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> =
      text === undefined ? {} : { ...AUTH, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) };
    const sent = process.hrtime.bigint();
    let first = 0n;
    const req = http.request({ host: '127.0.0.1', port, method, path: url, headers, agent }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (first === 0n && chunk.includes('event: ')) first = process.hrtime.bigint();
      });
      res.on('end', () => (res.statusCode === 200 ? resolve({ sent, first }) : reject(new Error(`${method} ${url}: ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(text);
  });
}

interface Marks {
  requests: number;
  rows: Array<{ step: string; ms: number; n: number }>;
  arrivals: string[];
  firstWrites: number[];
}

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'first-anatomy-'));
const fixtures = await benchFixtures(path.join(tmp, 'fixtures'));
const dataDir = path.join(tmp, 'data');
const ids = await seed(dataDir, STREAM_APP, 300);
const raw = await startChild('baseline-server.ts', [tmp], { execArgv: MARKS });
const parley = await startChild('parley-server.ts', [dataDir, fixtures], { env: PARLEY_ENV, execArgv: MARKS });
try {
  const floor = () => exchange(raw.ready.port, 'GET', '/sse-durable?n=20');
  const send = () =>
    exchange(parley.ready.port, 'POST', `/v1/apps/${STREAM_APP}/conversations/${ids[Math.floor(Math.random() * ids.length)]}`, body);
  for (let i = 0; i < 20; i++) await floor();
  for (let i = 0; i < 20; i++) await send();
  for (const c of [raw, parley]) c.proc.send({ type: 'reset' });
  const seen = { floor: [] as Array<{ sent: bigint; first: bigint }>, parley: [] as Array<{ sent: bigint; first: bigint }> };
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const f: number[] = [];
    const p: number[] = [];
    for (let i = 0; i < streams; i++) seen.floor.push(await floor());
    for (let i = 0; i < streams; i++) seen.parley.push(await send());
    for (const x of seen.floor.slice(-streams)) f.push(Number(x.first - x.sent) / 1e6);
    for (const x of seen.parley.slice(-streams)) p.push(Number(x.first - x.sent) / 1e6);
    ratios.push(med(p) / med(f));
  }
  const split = async (c: Child, runs: Array<{ sent: bigint; first: bigint }>) => {
    const m = await c.ask<Marks>('marks');
    const way = runs.map((x, i) => Number(BigInt(m.arrivals[i]!) - x.sent) / 1e6);
    const back = runs.map((x, i) => Number(x.first - x.sent) / 1e6 - way[i]! - m.firstWrites[i]!);
    const total = runs.map((x) => Number(x.first - x.sent) / 1e6);
    return {
      m,
      line: `${med(total).toFixed(3)} ms = ${med(way).toFixed(3)} to the server + ${med(m.firstWrites).toFixed(3)} in it + ${med(back).toFixed(3)} back (medians)`,
    };
  };
  const f = await split(raw, seen.floor);
  const p = await split(parley, seen.parley);
  const load = os.loadavg().map((l) => l.toFixed(1));
  console.log(
    `${rounds} rounds of ${streams} streams each, ${os.cpus().length} cores, Node ${process.version}, load average ${load.join(' ')}`,
  );
  console.log(`\n| step of Parley's first event (${p.m.requests} requests) | median ms from the request event |`);
  console.log('|---|---|');
  for (const row of p.m.rows) console.log(`| ${row.step}${row.n < p.m.requests ? ` (${row.n} of them)` : ''} | ${row.ms.toFixed(3)} |`);
  console.log(`\nParley's first event at the client: ${p.line}`);
  console.log(`the durable-begin floor's:           ${f.line}`);
  console.log(
    `Parley ÷ floor, the median of the rounds' ratios: ${med(ratios).toFixed(2)} (rounds ${ratios.map((x) => x.toFixed(2)).join(' ')})`,
  );
} finally {
  agent.destroy();
  await parley.stop();
  await raw.stop();
  await fs.rm(tmp, { recursive: true, force: true });
}
