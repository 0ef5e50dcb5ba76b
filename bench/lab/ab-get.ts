// A/B of get conversation: `node --import tsx bench/lab/ab-get.ts <otherTreeRoot> [conversations] [rounds] [seconds]`.
// Runs the raw baseline, Parley from another checkout (A) and Parley from this one (B) on the same
// data, in interleaved rounds, and prints each round and the medians (get req/s and the ratio to raw).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startChild } from '../child.ts';
import { benchFixtures, seed } from '../data.ts';
import { load, percentile, timed } from '../measure.ts';

const [other, countText = '1000', roundsText = '3', secondsText = '3'] = process.argv.slice(2);
const APP = 'app_demo';
const AUTH = { authorization: 'Bearer sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3' };
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-ab-'));
try {
  const fixtures = await benchFixtures(path.join(tmp, 'fixtures'));
  const ids = await seed(path.join(tmp, 'a'), APP, Number(countText));
  await fs.cp(path.join(tmp, 'a'), path.join(tmp, 'b'), { recursive: true });
  const raw = await startChild('baseline-server.ts');
  const a = await startChild(path.join(path.resolve(other!), 'bench', 'parley-server.ts'), [path.join(tmp, 'a'), fixtures]);
  const b = await startChild('parley-server.ts', [path.join(tmp, 'b'), fixtures]);
  const any = () => ids[Math.floor(Math.random() * ids.length)]!;
  const servers = {
    raw: { c: raw, path: () => '/get' },
    A: { c: a, path: () => `/v1/apps/${APP}/conversations/${any()}` },
    B: { c: b, path: () => `/v1/apps/${APP}/conversations/${any()}` },
  };
  const got: Record<string, number[]> = { raw: [], A: [], B: [] };
  for (const s of Object.values(servers))
    await load({ port: s.c.ready.port, method: 'GET', path: s.path, headers: AUTH, connections: 10, seconds: 1 });
  for (let r = 0; r < Number(roundsText); r++) {
    for (const [name, s] of Object.entries(servers)) {
      const res = await load({
        port: s.c.ready.port,
        method: 'GET',
        path: s.path,
        headers: AUTH,
        connections: 10,
        seconds: Number(secondsText),
      });
      got[name]!.push(res.rps);
    }
    console.log(
      `round ${r + 1}: raw ${got.raw!.at(-1)!.toFixed(0)}  A ${got.A!.at(-1)!.toFixed(0)} (${(got.A!.at(-1)! / got.raw!.at(-1)!).toFixed(2)})  B ${got.B!.at(-1)!.toFixed(0)} (${(got.B!.at(-1)! / got.raw!.at(-1)!).toFixed(2)})`,
    );
  }
  const med = (v: number[]) => percentile(v, 50);
  // Paired by round (A and B measured seconds apart), this is steadier than the ratio of medians on a busy machine.
  console.log(
    `B ÷ A per round: ${got.B!.map((b, i) => (b / got.A![i]!).toFixed(2)).join(' ')}; median ${percentile(
      got.B!.map((b, i) => b / got.A![i]!),
      50,
    ).toFixed(2)}`,
  );
  console.log(
    `median: raw ${med(got.raw!).toFixed(0)}  A ${med(got.A!).toFixed(0)} (${(med(got.A!) / med(got.raw!)).toFixed(2)})  B ${med(got.B!).toFixed(0)} (${(med(got.B!) / med(got.raw!)).toFixed(2)})`,
  );
  // One at a time: p50 latency of get.
  for (const [name, s] of Object.entries(servers)) {
    const t: number[] = [];
    for (let i = 0; i < 400; i++) t.push((await timed(s.c.ready.port, 'GET', s.path(), { headers: AUTH })).totalMs);
    console.log(`${name} one-at-a-time p50 ${percentile(t.slice(50), 50).toFixed(3)} ms`);
  }
  for (const s of Object.values(servers)) await s.c.stop();
} finally {
  await fs.rm(tmp, { recursive: true, force: true });
}
