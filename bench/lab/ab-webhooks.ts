// The latency three webhook endpoints add to a send, A/B: `node --import tsx bench/lab/ab-webhooks.ts
// <otherTreeRoot> [rounds=6] [sends=60] [--receiver-apart | --receiver-raw] [--disabled]`.
// Parley from another checkout (A) and from this one (B), each in its own process on the file store,
// measured as `npm run bench -- --webhooks` does (sends one at a time, without and with three endpoints
// subscribed to every event, a receiver answering 204), in alternating rounds A, B, B, A, … so that the
// machine's other work lands on both. Prints, per side, the median latency without and with the
// endpoints, the server's CPU per send (process.cpuUsage: every thread of the process) and its main
// thread's alone (/proc/<pid>/task/<pid>/schedstat, Linux), without and with them. `--receiver-apart`
// runs the receiver in a process of its own instead of this one, `--receiver-raw` one there that answers
// without an HTTP parser (bench/lab/raw-receiver.ts); `--disabled` disables the three endpoints: their events
// are made and recorded, nothing is sent.
import { once } from 'node:events';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { APP } from '../../test/support/helpers.ts';
import { type Child, startChild } from '../child.ts';
import { benchFixtures } from '../data.ts';
import { percentile } from '../measure.ts';
import { clientsOf } from '../webhooks.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const raw = process.argv.includes('--receiver-raw');
const apart = raw || process.argv.includes('--receiver-apart');
const disabled = process.argv.includes('--disabled');
const [other, roundsText = '6', sendsText = '60'] = args;

async function receiverHere(): Promise<{ url: string; received: () => number; stop: () => void }> {
  let n = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      n++;
      res.writeHead(204).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received: () => n,
    stop: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

interface Side extends Awaited<ReturnType<typeof clientsOf>> {
  name: string;
  child: Child;
  lat: { without: number[]; with: number[] };
  cpu: { without: number[]; with: number[] };
  main: { without: number[]; with: number[] };
}

async function side(name: string, root: string, dataDir: string, fixtures: string): Promise<Side> {
  await fs.mkdir(dataDir, { recursive: true });
  const child = await startChild(path.join(root, 'bench', 'parley-server.ts'), [dataDir, fixtures], {
    env: { PARLEY_MODEL: '', OLLAMA_HOST: '', LOG_LEVEL: 'silent', DATABASE_URL: '' },
  });
  const { v1, admin } = await clientsOf(`http://127.0.0.1:${child.ready.port}`);
  return { name, child, v1, admin, lat: { without: [], with: [] }, cpu: { without: [], with: [] }, main: { without: [], with: [] } };
}

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-abwh-'));
const sides: Side[] = [];
let stopReceiver = () => {};
let receiverChild: Child | undefined;
try {
  const fixtures = await benchFixtures(path.join(tmp, 'fixtures'));
  let hook: string;
  if (apart) {
    receiverChild = await startChild(raw ? 'lab/raw-receiver.ts' : 'lab/receiver-server.ts');
    hook = `http://127.0.0.1:${receiverChild.ready.port}/hook`;
  } else {
    const r = await receiverHere();
    hook = r.url;
    stopReceiver = r.stop;
  }
  sides.push(await side('A', path.resolve(other!), path.join(tmp, 'a'), fixtures));
  sides.push(await side('B', path.resolve(import.meta.dirname, '../..'), path.join(tmp, 'b'), fixtures));
  const sends = Number(sendsText);
  // CPU on the main thread alone, from the kernel's scheduler (ns on CPU): what a request waits behind.
  const mainCpuUs = async (s: Side) =>
    Number((await fs.readFile(`/proc/${s.child.proc.pid}/task/${s.child.proc.pid}/schedstat`, 'utf8')).split(' ')[0]) / 1000;
  const statsOf = async (s: Side) => ({ cpuUs: (await s.child.ask<{ cpuUs: number }>('stats')).cpuUs, mainUs: await mainCpuUs(s) });
  const run = async (s: Side, kind: 'without' | 'with') => {
    const conv = (await s.v1('POST', `/apps/${APP}/conversations`, {})).body.id as string;
    const before = await statsOf(s);
    for (let i = 0; i < sends; i++) {
      const t = performance.now();
      await s.v1('POST', `/apps/${APP}/conversations/${conv}`, { message: { content: 'What are the API rate limits?' }, stream: false });
      s.lat[kind].push(performance.now() - t);
    }
    // The deliveries of the last sends finish after their answers: wait for them before reading the CPU.
    await new Promise((r) => setTimeout(r, kind === 'with' ? 200 : 0));
    const after = await statsOf(s);
    s.cpu[kind].push((after.cpuUs - before.cpuUs) / sends);
    s.main[kind].push((after.mainUs - before.mainUs) / sends);
  };
  // Warm-up: one short round each, not counted.
  for (const s of sides) {
    const ids: string[] = [];
    for (let e = 0; e < 3; e++) ids.push((await s.admin('POST', '/webhook_endpoints', { app_id: APP, url: hook, events: ['*'] })).body.id);
    for (let i = 0; i < 20; i++) await s.v1('POST', `/apps/${APP}/conversations`, {});
    for (const id of ids) await s.admin('DELETE', `/webhook_endpoints/${id}`);
  }
  const p50 = (v: number[]) => percentile(v, 50);
  for (let r = 0; r < Number(roundsText); r++) {
    const order = r % 2 === 0 ? sides : [...sides].reverse();
    for (const s of order) {
      const n = { without: s.lat.without.length, with: s.lat.with.length };
      await run(s, 'without');
      const ids: string[] = [];
      for (let e = 0; e < 3; e++)
        ids.push((await s.admin('POST', '/webhook_endpoints', { app_id: APP, url: hook, events: ['*'] })).body.id);
      // Disabled, the endpoints still have their events made and recorded (as skipped, D-86): the send's own share.
      if (disabled) for (const id of ids) await s.admin('POST', `/webhook_endpoints/${id}`, { enabled: false });
      await run(s, 'with');
      for (const id of ids) await s.admin('DELETE', `/webhook_endpoints/${id}`);
      const added = p50(s.lat.with.slice(n.with)) - p50(s.lat.without.slice(n.without));
      console.log(
        `round ${r + 1} ${s.name}: p50 ${p50(s.lat.without.slice(n.without)).toFixed(2)} → ${p50(s.lat.with.slice(n.with)).toFixed(2)} ms (+${added.toFixed(2)}), CPU/send ${(s.cpu.without.at(-1)! / 1000).toFixed(2)} → ${(s.cpu.with.at(-1)! / 1000).toFixed(2)} ms, main thread CPU/send ${(s.main.without.at(-1)! / 1000).toFixed(2)} → ${(s.main.with.at(-1)! / 1000).toFixed(2)} ms`,
      );
    }
  }
  console.log(
    `load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  for (const s of sides)
    console.log(
      `${s.name}: latency p50 ${p50(s.lat.without).toFixed(2)} → ${p50(s.lat.with).toFixed(2)} ms, added ${(p50(s.lat.with) - p50(s.lat.without)).toFixed(2)} ms; ` +
        `server CPU per send ${(p50(s.cpu.without) / 1000).toFixed(2)} → ${(p50(s.cpu.with) / 1000).toFixed(2)} ms, added ${((p50(s.cpu.with) - p50(s.cpu.without)) / 1000).toFixed(2)} ms; ` +
        `main thread CPU per send ${(p50(s.main.without) / 1000).toFixed(2)} → ${(p50(s.main.with) / 1000).toFixed(2)} ms, added ${((p50(s.main.with) - p50(s.main.without)) / 1000).toFixed(2)} ms`,
    );
} finally {
  for (const s of sides) await s.child.stop();
  await receiverChild?.stop();
  stopReceiver();
  await fs.rm(tmp, { recursive: true, force: true });
}
