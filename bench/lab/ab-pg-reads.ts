// A/B of get, list, rename and create on both stores: `node --import tsx bench/lab/ab-pg-reads.ts <otherTreeRoot>
// [conversations] [rounds] [seconds] [ops]` (ops: a comma list of get,list,rename,create; the first three by default).
// Parley from another checkout (A) and from this one (B), each on the file store and on PostgreSQL
// (one embedded PostgreSQL, durable, a database each: bench/pg.ts), the same conversations seeded in
// all four, in interleaved rounds (the order turned each round) at 10 connections, as `npm run bench`
// loads them. Per round and server: requests a second, Parley's CPU per request (its process) and, on
// PostgreSQL, the database server's CPU per request (its processes; one server is loaded at a time).
// Then a counted pass on each PostgreSQL side: the statements per request (pg_stat_statements, BEGIN
// and COMMIT counted) and their execution time. Prints each checkout's PostgreSQL ÷ file store, paired
// by round, and B ÷ A on each store, with the load average at the start and the end. AB_ENV_A and
// AB_ENV_B (`K=V,K=V`) add environment to one side's servers: `AB_ENV_B=DATABASE_POOL_SIZE=4` with this
// checkout on both sides compares two pool sizes.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startChild, type Child } from '../child.ts';
import { type LoadSpec, load, percentile } from '../measure.ts';
import { accounting, seedBoth, startBenchPostgres } from '../pg.ts';

const [other, countText = '1000', roundsText = '5', secondsText = '3', opsText = 'get,list,rename'] = process.argv.slice(2);
if (!other) throw new Error('usage: bench/lab/ab-pg-reads.ts <other checkout> [conversations] [rounds] [seconds] [get,list,rename,create]');
const APP = 'app_demo';
const AUTH = { authorization: 'Bearer sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3' };
const NAMES = ['A file', 'A pg', 'B file', 'B pg'] as const;
type Name = (typeof NAMES)[number];
const OPS = opsText.split(',') as Op[];
type Op = 'get' | 'list' | 'rename' | 'create';
const loadavg = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-ab-pg-reads-'));
const pg = await startBenchPostgres();
const children: Child[] = [];
try {
  console.log(`load average at the start: ${loadavg()}`);
  const n = Number(countText);
  const { fixtures, fileIds, urls, pgIds } = await seedBoth(pg, tmp, APP, n);
  const script = (tree: 'A' | 'B') => (tree === 'A' ? path.join(path.resolve(other), 'bench', 'parley-server.ts') : 'parley-server.ts');
  const extra = (text = '') =>
    Object.fromEntries(
      text
        .split(',')
        .filter(Boolean)
        .map((kv) => kv.split('=', 2) as [string, string]),
    );
  const start = async (tree: 'A' | 'B', dir: string, databaseUrl: string) => {
    await fs.mkdir(path.join(tmp, dir), { recursive: true });
    const env = { ...extra(process.env[`AB_ENV_${tree}`]), DATABASE_URL: databaseUrl };
    const c = await startChild(script(tree), [path.join(tmp, dir), fixtures], { env });
    children.push(c);
    return c;
  };
  const servers: Record<Name, { c: Child; ids: string[]; url?: string }> = {
    'A file': { c: await start('A', 'a-file', ''), ids: fileIds },
    'A pg': { c: await start('A', 'a-pg', urls.a), ids: pgIds.a, url: urls.a },
    'B file': { c: await start('B', 'b-file', ''), ids: fileIds },
    'B pg': { c: await start('B', 'b-pg', urls.b), ids: pgIds.b, url: urls.b },
  };
  const spec = (name: Name, op: Op): LoadSpec => {
    const { c, ids } = servers[name];
    const any = () => ids[Math.floor(Math.random() * ids.length)]!;
    const base = `/v1/apps/${APP}/conversations`;
    const port = c.ready.port;
    const common = { port, headers: AUTH, connections: 10, seconds: 0 };
    if (op === 'get') return { ...common, method: 'GET', path: () => `${base}/${any()}` };
    if (op === 'list') return { ...common, method: 'GET', path: () => `${base}?limit=20&after=${any()}` };
    // Creates grow the stores, each side's alike (as many seconds on each).
    if (op === 'create')
      return { ...common, method: 'POST', path: () => base, body: JSON.stringify({ title: 'Created by the benchmark' }) };
    return { ...common, method: 'PATCH', path: () => `${base}/${any()}`, body: JSON.stringify({ title: 'Renamed' }) };
  };
  const cpu = async (name: Name) => (await servers[name].c.ask<{ cpuUs: number }>('stats')).cpuUs;
  /** One round of `op` on `name`: req/s, Parley's CPU µs per request, PostgreSQL's (0 for the file store). */
  const round = async (name: Name, op: Op, seconds: number) => {
    const [p0, d0] = [await cpu(name), await pg.cpuUs()];
    const r = await load({ ...spec(name, op), seconds });
    const [p1, d1] = [await cpu(name), await pg.cpuUs()];
    return { rps: r.rps, parley: (p1 - p0) / r.requests, db: name.endsWith('pg') ? (d1 - d0) / r.requests : 0 };
  };
  for (const op of OPS) for (const name of NAMES) await round(name, op, 1);
  const med = (v: number[]) => percentile(v, 50);
  for (const op of OPS) {
    console.log(`\n${op}, ${n} conversations, ${roundsText} rounds of ${secondsText} s (load average ${loadavg()})`);
    const got = Object.fromEntries(NAMES.map((k) => [k, [] as { rps: number; parley: number; db: number }[]])) as Record<
      Name,
      { rps: number; parley: number; db: number }[]
    >;
    for (let r = 0; r < Number(roundsText); r++) {
      const order = NAMES.map((_, i) => NAMES[(i + r) % NAMES.length]!);
      for (const name of order) got[name].push(await round(name, op, Number(secondsText)));
      const last = (k: Name) => got[k].at(-1)!.rps;
      console.log(
        `  round ${r + 1}: ${NAMES.map((k) => `${k} ${last(k).toFixed(0)}`).join(', ')} req/s; PG ÷ file: A ${(last('A pg') / last('A file')).toFixed(3)}, B ${(last('B pg') / last('B file')).toFixed(3)} (load ${loadavg()})`,
      );
    }
    const paired = (x: Name, y: Name) => med(got[x].map((v, i) => v.rps / got[y][i]!.rps));
    console.log(
      `  median req/s: ${NAMES.map((k) => `${k} ${med(got[k].map((v) => v.rps)).toFixed(0)}`).join(', ')}\n` +
        `  CPU µs per request, Parley (PostgreSQL): ${NAMES.map((k) => `${k} ${med(got[k].map((v) => v.parley)).toFixed(0)}${k.endsWith('pg') ? ` (${med(got[k].map((v) => v.db)).toFixed(0)})` : ''}`).join(', ')}\n` +
        `  PG ÷ file store, paired by round, median: A ${paired('A pg', 'A file').toFixed(3)}, B ${paired('B pg', 'B file').toFixed(3)}; B ÷ A: file store ${paired('B file', 'A file').toFixed(2)}, PostgreSQL ${paired('B pg', 'A pg').toFixed(2)}`,
    );
  }
  // The counted pass: what each PostgreSQL side runs per request.
  const COUNT = 500;
  for (const name of ['A pg', 'B pg'] as const) {
    for (const op of OPS) {
      const stats = await accounting(pg.adminUrl, servers[name].url!);
      await load({ ...spec(name, op), amount: COUNT });
      // pg_stat_statements counts BEGIN but not the COMMIT that ends it: one per BEGIN, as bench/stores.ts counts.
      const statements = (await stats.read()).filter((x) => !/^(commit|end)$/i.test(x.query));
      const begins = statements.filter((x) => /^begin\b/i.test(x.query)).reduce((s, x) => s + x.calls, 0);
      const calls = statements.reduce((s, x) => s + x.calls, 0) + begins;
      const exec = statements.reduce((s, x) => s + x.totalMs, 0);
      console.log(
        `\n${name} ${op}: ${(calls / COUNT).toFixed(2)} statements per request, ${((exec / COUNT) * 1000).toFixed(0)} µs of execution`,
      );
      for (const s of [...statements].sort((a, b) => b.calls - a.calls))
        console.log(`  ${(s.calls / COUNT).toFixed(2)}×  ${((s.totalMs / s.calls) * 1000).toFixed(0)} µs  ${s.query.slice(0, 140)}`);
    }
  }
  console.log(`\nload average at the end: ${loadavg()}`);
} finally {
  for (const c of children) await c.stop().catch(() => {});
  await pg.stop();
  await fs.rm(tmp, { recursive: true, force: true });
}
