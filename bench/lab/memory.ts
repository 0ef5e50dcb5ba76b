// Where Parley's resident memory goes with many conversations:
// `node --import tsx bench/lab/memory.ts [conversations] [seconds per load] [--requests N] [-- node flags for Parley]`
// (--requests: each load by count instead, N gets, lists and renames and N/20 sends, so that runs on a
// busy machine allocate as much as on a quiet one).
// Seeds a temporary store, starts Parley as the benchmark does, then prints RSS, heap and V8's old
// space (allocated / live) after start-up and after each load (get, list, rename, send). Old space
// far above its live part is garbage V8 has not collected yet: the heap grows by a factor of the live
// size between major GCs (up to 4× with the default heap limit), which is what the peak follows.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startChild } from '../child.ts';
import { benchFixtures, seed } from '../data.ts';
import { load } from '../measure.ts';

const sep = process.argv.indexOf('--');
const args = sep === -1 ? process.argv.slice(2) : process.argv.slice(2, sep);
const nodeFlags = sep === -1 ? [] : process.argv.slice(sep + 1);
const byCount = args.indexOf('--requests');
const requests = byCount === -1 ? 0 : Number(args.splice(byCount, 2)[1]);
const [countText = '100000', secondsText = '4'] = args;
const APP = 'app_demo';
const AUTH = { authorization: 'Bearer sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3' };
const MB = (n: number | undefined) => `${Math.round((n ?? NaN) / 2 ** 20)} MB`;
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-memory-'));
try {
  const fixtures = await benchFixtures(path.join(tmp, 'fixtures'));
  const dataDir = path.join(tmp, 'data');
  const ids = await seed(dataDir, APP, Number(countText));
  const child = await startChild('parley-server.ts', [dataDir, fixtures], { execArgv: nodeFlags, env: { LOG_LEVEL: 'silent' } });
  const show = async (when: string) => {
    const s = await child.ask<Record<string, number>>('stats');
    console.log(
      `${when.padEnd(28)} rss ${MB(s.rss)}, heap ${MB(s.heapUsed)} used of ${MB(s.heapTotal)}, old space ${MB(s.oldSpaceUsed)} used of ${MB(s.oldSpaceSize)}, external ${MB(s.external)}`,
    );
  };
  console.log(
    `${ids.length.toLocaleString('en-US')} conversations, Node ${process.version}, Parley flags: ${nodeFlags.join(' ') || '(none)'}`,
  );
  await show('after start-up');
  const any = () => ids[Math.floor(Math.random() * ids.length)]!;
  const base = `/v1/apps/${APP}/conversations`;
  const loads = [
    ['get', 'GET', () => `${base}/${any()}`, undefined],
    ['list', 'GET', () => `${base}?limit=20&after=${any()}`, undefined],
    ['rename', 'PATCH', () => `${base}/${any()}`, JSON.stringify({ title: 'Renamed by the benchmark' })],
    ['send', 'POST', () => `${base}/${any()}`, JSON.stringify({ message: { content: 'Hello' }, stream: false })],
  ] as const;
  for (const [name, method, p, body] of loads) {
    const amount = requests && (name === 'send' ? Math.ceil(requests / 20) : requests);
    const r = await load({
      port: child.ready.port,
      method,
      path: p,
      body,
      headers: AUTH,
      connections: 10,
      seconds: Number(secondsText),
      amount,
    });
    await show(`after ${name} (${Math.round(r.rps)} req/s)`);
  }
  await child.stop();
} finally {
  await fs.rm(tmp, { recursive: true, force: true });
}
