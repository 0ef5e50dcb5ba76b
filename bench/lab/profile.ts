// Profiles Parley under one kind of load: `node --import tsx bench/lab/profile.ts <get|list|create|rename|send|stream|get1> [conversations] [seconds] [--pg]`
// (stream and get1: one request at a time, for latency; --pg: on PostgreSQL, bench/pg.ts, seeded by SQL).
// Seeds a temporary store, runs Parley with --cpu-prof, loads it, then prints where the CPU time went
// (self time by function, and inclusive time of Parley's own functions). The .cpuprofile is kept in
// bench/profiles/ for Chrome DevTools.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startChild } from '../child.ts';
import { type Profile, profileTimes } from './cpu-profile.ts';
import { benchFixtures, seed } from '../data.ts';
import { load, percentile, timed } from '../measure.ts';
import { type BenchPostgres, seedPostgres, startBenchPostgres } from '../pg.ts';

const onPg = process.argv.includes('--pg');
const [op = 'get', countText = '1000', secondsText = '5'] = process.argv.slice(2).filter((a) => a !== '--pg');
const ROOT = path.resolve(import.meta.dirname, '../..');
const APP = 'app_demo';
const AUTH = { authorization: 'Bearer sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3' };
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-profile-'));
const profDir = path.join(ROOT, 'bench', 'profiles');
let pg: BenchPostgres | undefined;
try {
  const fixtures = await benchFixtures(path.join(tmp, 'fixtures'));
  const dataDir = path.join(tmp, 'data');
  let ids: string[];
  let databaseUrl = '';
  if (onPg) {
    pg = await startBenchPostgres();
    databaseUrl = await pg.database('profile');
    ids = await seedPostgres(databaseUrl, APP, Number(countText));
    await fs.mkdir(dataDir, { recursive: true });
  } else ids = await seed(dataDir, APP, Number(countText));
  // One profile per thread (tsx's loader runs in a worker): the main thread's is `CPU.*.<pid>.0.*`.
  const runDir = path.join(profDir, `${op}-${countText}${onPg ? '-pg' : ''}-${Date.now()}`);
  const child = await startChild('parley-server.ts', [dataDir, fixtures], {
    execArgv: ['--cpu-prof', `--cpu-prof-dir=${runDir}`],
    env: { DATABASE_URL: databaseUrl },
  });
  const any = () => ids[Math.floor(Math.random() * ids.length)]!;
  const base = `/v1/apps/${APP}/conversations`;
  const specs = {
    get: { method: 'GET', path: () => `${base}/${any()}` },
    list: { method: 'GET', path: () => `${base}?limit=20&after=${any()}` },
    create: { method: 'POST', path: () => base, body: JSON.stringify({ title: 'Created by the benchmark' }) },
    rename: { method: 'PATCH', path: () => `${base}/${any()}`, body: JSON.stringify({ title: 'Renamed' }) },
    send: { method: 'POST', path: () => `${base}/${any()}`, body: JSON.stringify({ message: { content: 'Hello' }, stream: false }) },
  } as const;
  if (op === 'stream' || op === 'get1') {
    // One request at a time, for as long as asked: where the latency of one request goes.
    const body = op === 'stream' ? JSON.stringify({ message: { content: 'Tell me about the Montreal office.' }, stream: true }) : undefined;
    const first = op === 'stream' ? (l: string) => l.startsWith('event: ') : undefined;
    const firsts: number[] = [];
    const until = performance.now() + Number(secondsText) * 1000;
    while (performance.now() < until) {
      const t = await timed(child.ready.port, op === 'stream' ? 'POST' : 'GET', `${base}/${any()}`, { body, headers: AUTH, first });
      firsts.push(t.firstMs);
    }
    console.log(
      `${op} at ${countText}: ${firsts.length} requests one at a time, first byte/event p50 ${percentile(firsts, 50).toFixed(3)} ms, p90 ${percentile(firsts, 90).toFixed(3)} ms`,
    );
  } else {
    const spec = specs[op as keyof typeof specs];
    if (!spec) throw new Error(`unknown operation ${op}`);
    const r = await load({ port: child.ready.port, headers: AUTH, connections: 10, seconds: Number(secondsText), ...spec });
    console.log(`${op} at ${countText}: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms`);
  }
  await child.stop();
  const main = (await fs.readdir(runDir)).find((f) => f.includes(`.${child.proc.pid}.0.`))!;
  summarise(JSON.parse(await fs.readFile(path.join(runDir, main), 'utf8')) as Profile);
  console.log(`profile: ${path.relative(ROOT, path.join(runDir, main))}`);
} finally {
  await pg?.stop();
  await fs.rm(tmp, { recursive: true, force: true });
}

function summarise(p: Profile): void {
  const { self, selfBy, incl } = profileTimes(p);
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const pct = (t: number) => `${((100 * t) / total).toFixed(1).padStart(5)}%`;
  console.log('\nself time, top 25');
  for (const [k, t] of [...selfBy].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${pct(t)}  ${k}`);
  console.log('\ninclusive time of Parley code and pino, top 25');
  for (const [k, t] of [...incl]
    .filter(([k]) => k.includes('src/') || k.includes('pino'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 25))
    console.log(`  ${pct(t)}  ${k}`);
}
