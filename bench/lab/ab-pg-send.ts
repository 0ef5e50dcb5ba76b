// A/B of send message (or create) on both stores: `node --import tsx bench/lab/ab-pg-send.ts <otherTreeRoot> [conversations] [rounds] [seconds] [send|create]`.
// Parley from another checkout (A) and from this one (B), each on the file store and on PostgreSQL
// (one embedded PostgreSQL, durable, a database each: bench/pg.ts), the same conversations seeded in
// all four, in interleaved rounds (the order turned each round) of non-streamed sends (embedded
// engine, 10 connections), or of creates. Prints each round, then the ratios that compare on a busy machine: each
// checkout's PostgreSQL ÷ file store, paired by round, and B ÷ A on each store.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startChild, type Child } from '../child.ts';
import { load, percentile } from '../measure.ts';
import { seedBoth, startBenchPostgres } from '../pg.ts';

const [other, countText = '2000', roundsText = '5', secondsText = '3', op = 'send'] = process.argv.slice(2);
if (!other || (op !== 'send' && op !== 'create'))
  throw new Error('usage: bench/lab/ab-pg-send.ts <other checkout> [conversations] [rounds] [seconds] [send|create]');
const APP = 'app_demo';
const AUTH = { authorization: 'Bearer sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3' };
const MSG =
  op === 'send'
    ? JSON.stringify({ message: { content: 'What are the opening hours of the Montreal office?' }, stream: false })
    : JSON.stringify({ title: 'Created by the benchmark' });
/** Where the requests go: a random conversation (send), or the app's list (create). */
const target = (ids: string[]) => `/v1/apps/${APP}/conversations${op === 'send' ? `/${ids[Math.floor(Math.random() * ids.length)]}` : ''}`;
const NAMES = ['A file', 'A pg', 'B file', 'B pg'] as const;
type Name = (typeof NAMES)[number];

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-ab-pg-'));
const pg = await startBenchPostgres();
const children: Child[] = [];
try {
  const { fixtures, fileIds, urls, pgIds } = await seedBoth(pg, tmp, APP, Number(countText));
  const script = (tree: 'A' | 'B') => (tree === 'A' ? path.join(path.resolve(other), 'bench', 'parley-server.ts') : 'parley-server.ts');
  const start = async (tree: 'A' | 'B', dir: string, databaseUrl: string) => {
    await fs.mkdir(path.join(tmp, dir), { recursive: true });
    const c = await startChild(script(tree), [path.join(tmp, dir), fixtures], { env: { DATABASE_URL: databaseUrl } });
    children.push(c);
    return c;
  };
  const servers: Record<Name, { c: Child; ids: string[] }> = {
    'A file': { c: await start('A', 'a-file', ''), ids: fileIds },
    'A pg': { c: await start('A', 'a-pg', urls.a), ids: pgIds.a },
    'B file': { c: await start('B', 'b-file', ''), ids: fileIds },
    'B pg': { c: await start('B', 'b-pg', urls.b), ids: pgIds.b },
  };
  const round = (name: Name, seconds: number) => {
    const { c, ids } = servers[name];
    return load({
      port: c.ready.port,
      method: 'POST',
      path: () => target(ids),
      body: MSG,
      headers: AUTH,
      connections: 10,
      seconds,
    });
  };
  for (const name of NAMES) {
    const { c, ids } = servers[name];
    const res = await fetch(`http://127.0.0.1:${c.ready.port}${target(ids)}`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: MSG,
    });
    if (!res.ok) throw new Error(`${name}: a ${op} answered ${res.status} ${await res.text()}`);
    await res.text();
  }
  for (const name of NAMES) await round(name, 1);
  const got = Object.fromEntries(NAMES.map((k) => [k, [] as number[]])) as Record<Name, number[]>;
  for (let r = 0; r < Number(roundsText); r++) {
    // The order turns each round, so that no server always runs after the same one.
    const order = NAMES.map((_, i) => NAMES[(i + r) % NAMES.length]!);
    for (const name of order) got[name].push((await round(name, Number(secondsText))).rps);
    const last = (k: Name) => got[k].at(-1)!;
    console.log(
      `round ${r + 1}: ${NAMES.map((k) => `${k} ${last(k).toFixed(0)}`).join(', ')} req/s; PG ÷ file: A ${(last('A pg') / last('A file')).toFixed(3)}, B ${(last('B pg') / last('B file')).toFixed(3)}`,
    );
  }
  const med = (v: number[]) => percentile(v, 50);
  const paired = (x: Name, y: Name) => med(got[x].map((v, i) => v / got[y][i]!));
  console.log(`median req/s: ${NAMES.map((k) => `${k} ${med(got[k]).toFixed(0)}`).join(', ')}`);
  console.log(
    `PG ÷ file store, paired by round, median: A ${paired('A pg', 'A file').toFixed(3)}, B ${paired('B pg', 'B file').toFixed(3)}; B ÷ A: file store ${paired('B file', 'A file').toFixed(2)}, PostgreSQL ${paired('B pg', 'A pg').toFixed(2)}`,
  );
} finally {
  for (const c of children) await c.stop().catch(() => {});
  await pg.stop();
  await fs.rm(tmp, { recursive: true, force: true });
}
