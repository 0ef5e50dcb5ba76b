// `npm run bench -- --ab <git ref> [--conversations N] [--rounds N] [--seconds S]`: the guard against the
// next regression. The main figures (get, list, rename, send message, create, a stream's first event, a
// raw GET) for the working tree (B) and for a commit (A) side by side, in alternating rounds, as ratios.
// A is a checkout of the commit (`git archive`, so that nothing is registered in the repository) in
// node_modules/.cache/parley-ab/<sha>, kept for the next run, with this tree's node_modules when the
// lockfiles are identical, `npm ci` otherwise.
// Each side seeds its own store with its own code (bench/ab-seed.ts): a commit whose data format
// differs still reads what it is given.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { PARLEY_ENV, startChild, type Child } from './child.ts';
import { AUTH, STREAM_APP } from './data.ts';
import { load, type LoadSpec, percentile, repeat, timed } from './measure.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const APP = 'app_demo';

export interface AbOptions {
  ref: string;
  conversations: number;
  /** Side A's store size, when not `conversations`: `--ab HEAD --conversations 100000 --conversations-a 1000` is 100,000 ÷ 1,000 for the same code. */
  conversationsA?: number;
  rounds: number;
  seconds: number;
  creates: number;
  /** Streams per side per round for the first event (and raw GETs: four times as many). */
  streams: number;
  /** `--only get,list,rename,send,create,first`: some of the figures (the first word of each name). */
  only?: string[];
  /** `--node-b "<flags>"`: Node flags for B's server only (the same code with and without a flag: `--ab HEAD --node-b "--max-semi-space-size=8"`). */
  nodeB?: string[];
  /** `--webhooks`: bench/webhooks.ts's figures instead of the main ones (bench/ab-webhooks.ts). */
  webhooks?: boolean;
  tmp: string;
  log: (line: string) => void;
}

interface Side {
  name: 'A' | 'B';
  child: Child;
  ids: string[];
  streamIds: string[];
}

/** Reads `--ab <ref>` and its options from argv, or undefined when there is no `--ab`. */
export function abArgs(argv: string[]): Omit<AbOptions, 'tmp' | 'log'> | undefined {
  const at = argv.indexOf('--ab');
  if (at < 0) return undefined;
  const ref = argv[at + 1];
  if (!ref || ref.startsWith('--')) throw new Error('--ab needs a git ref: npm run bench -- --ab <ref>');
  const num = (flag: string, fallback: number) => {
    const i = argv.indexOf(flag);
    return i < 0 ? fallback : Number(argv[i + 1]);
  };
  return {
    ref,
    conversations: num('--conversations', 1_000),
    conversationsA: argv.includes('--conversations-a') ? num('--conversations-a', 1_000) : undefined,
    rounds: num('--rounds', 6),
    seconds: num('--seconds', 3),
    creates: num('--creates', 2_000),
    streams: num('--streams', 30),
    only: argv.includes('--only') ? argv[argv.indexOf('--only') + 1]!.split(',') : undefined,
    nodeB: argv.includes('--node-b') ? argv[argv.indexOf('--node-b') + 1]!.split(' ').filter(Boolean) : undefined,
    webhooks: argv.includes('--webhooks'),
  };
}

/** The commit's tree in `dir`, with dependencies. Returns the full sha. */
async function checkout(ref: string, dir: string, log: AbOptions['log']): Promise<string> {
  const sha = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], { cwd: ROOT, encoding: 'utf8' }).trim();
  const ready = path.join(dir, '.ab-ready');
  if (await fs.stat(ready).catch(() => undefined)) {
    log(`A = ${sha.slice(0, 10)} (${ref}), the checkout kept in ${dir}`);
    await fs.copyFile(path.join(ROOT, 'bench', 'ab-seed.ts'), path.join(dir, 'bench', 'ab-seed.ts'));
    return sha;
  }
  await fs.rm(dir, { recursive: true, force: true });
  await fs.mkdir(dir, { recursive: true });
  execFileSync('sh', ['-c', `git archive --format=tar ${sha} | tar -x -C "${dir}"`], { cwd: ROOT, stdio: 'inherit' });
  const lockThere = await fs.readFile(path.join(dir, 'package-lock.json'), 'utf8').catch(() => '');
  const lockHere = await fs.readFile(path.join(ROOT, 'package-lock.json'), 'utf8');
  if (lockThere === lockHere) {
    // Same lockfile, same packages: this tree's node_modules serve (read only) both sides.
    await fs.symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    log(`A = ${sha.slice(0, 10)} (${ref}), checked out in ${dir}, node_modules shared (identical lockfile)`);
  } else {
    log(`A = ${sha.slice(0, 10)} (${ref}), checked out in ${dir}; its lockfile differs: npm ci there`);
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, stdio: 'inherit' });
  }
  // Its own seeding, from this tree's script (older commits have none).
  await fs.copyFile(path.join(ROOT, 'bench', 'ab-seed.ts'), path.join(dir, 'bench', 'ab-seed.ts'));
  await fs.writeFile(ready, '');
  return sha;
}

async function seedSide(tree: string, dir: string, conversations: number) {
  const out = path.join(dir, 'seeded.json');
  execFileSync(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), path.join(tree, 'bench', 'ab-seed.ts'), dir, String(conversations), out],
    {
      stdio: 'inherit',
    },
  );
  return JSON.parse(await fs.readFile(out, 'utf8')) as { fixtures: string; dataDir: string; ids: string[]; streamIds: string[] };
}

const med = (v: number[]) => percentile(v, 50);
const pick = (ids: string[]) => () => ids[Math.floor(Math.random() * ids.length)]!;

/** Side A's tree: the commit checked out, kept between runs, one per commit (a later run skips the checkout and npm ci). */
export async function checkoutA(ref: string, log: AbOptions['log']): Promise<{ sha: string; treeA: string }> {
  const sha0 = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], { cwd: ROOT, encoding: 'utf8' }).trim();
  const treeA = path.join(ROOT, 'node_modules', '.cache', 'parley-ab', sha0);
  return { sha: await checkout(ref, treeA, log), treeA };
}

export async function runAb(o: AbOptions): Promise<void> {
  const { log } = o;
  const { sha, treeA } = await checkoutA(o.ref, log);
  log(
    `seeding ${(o.conversationsA ?? o.conversations).toLocaleString('en-US')} and ${o.conversations.toLocaleString('en-US')} conversations (+ 300 for streams), each side with its own code`,
  );
  const seededA = await seedSide(treeA, path.join(o.tmp, 'side-a'), o.conversationsA ?? o.conversations);
  const seededB = await seedSide(ROOT, path.join(o.tmp, 'side-b'), o.conversations);
  const raw = await startChild('baseline-server.ts');
  const a: Side = {
    name: 'A',
    child: await startChild(path.join(treeA, 'bench', 'parley-server.ts'), [seededA.dataDir, seededA.fixtures], { env: PARLEY_ENV }),
    ids: seededA.ids,
    streamIds: seededA.streamIds,
  };
  const b: Side = {
    name: 'B',
    child: await startChild('parley-server.ts', [seededB.dataDir, seededB.fixtures], { env: PARLEY_ENV, execArgv: o.nodeB }),
    ids: seededB.ids,
    streamIds: seededB.streamIds,
  };
  const rows: string[][] = [];
  try {
    const base = `/v1/apps/${APP}/conversations`;
    const msg = JSON.stringify({ message: { content: 'What are the opening hours of the Montreal office?' }, stream: false });
    const ops: Array<{
      name: string;
      raw: Omit<LoadSpec, 'port' | 'connections' | 'seconds'>;
      side: (s: Side) => Omit<LoadSpec, 'port' | 'connections' | 'seconds'>;
    }> = [
      {
        name: 'get conversation',
        raw: { method: 'GET', path: () => '/get' },
        side: (s) => ({
          method: 'GET',
          path: (
            (any) => () =>
              `${base}/${any()}`
          )(pick(s.ids)),
        }),
      },
      {
        name: 'list (limit 20, cursor)',
        raw: { method: 'GET', path: () => '/list' },
        side: (s) => ({
          method: 'GET',
          path: (
            (any) => () =>
              `${base}?limit=20&after=${any()}`
          )(pick(s.ids)),
        }),
      },
      {
        name: 'rename (durable)',
        raw: { method: 'PATCH', path: () => '/post', body: JSON.stringify({ title: 'Renamed by the benchmark' }) },
        side: (s) => ({
          method: 'PATCH',
          path: (
            (any) => () =>
              `${base}/${any()}`
          )(pick(s.ids)),
          body: JSON.stringify({ title: 'Renamed by the benchmark' }),
        }),
      },
      {
        name: 'send message (embedded, JSON)',
        raw: { method: 'POST', path: () => '/message', body: msg },
        side: (s) => ({
          method: 'POST',
          path: (
            (any) => () =>
              `${base}/${any()}`
          )(pick(s.ids)),
          body: msg,
        }),
      },
      // Last, because it grows the stores; by count, so that both grow alike.
      {
        name: 'create (durable)',
        raw: { method: 'POST', path: () => '/post', body: JSON.stringify({ title: 'Created by the benchmark' }) },
        side: () => ({ method: 'POST', path: () => base, body: JSON.stringify({ title: 'Created by the benchmark' }), amount: o.creates }),
      },
    ];
    log(
      `throughput, 10 connections, ${o.rounds} rounds of ${o.seconds} s (creates: ${o.creates.toLocaleString('en-US')} a round), the order of A, B and raw rotating`,
    );
    const wanted = (name: string) => !o.only || o.only.includes(name.split(' ')[0]!);
    for (const op of ops.filter((x) => wanted(x.name))) {
      const spec = (port: number, s: Omit<LoadSpec, 'port' | 'connections' | 'seconds'>, headers = true): LoadSpec => ({
        port,
        connections: 10,
        seconds: o.seconds,
        ...(headers ? { headers: AUTH } : {}),
        ...s,
      });
      const specs = {
        A: spec(a.child.ready.port, op.side(a)),
        B: spec(b.child.ready.port, op.side(b)),
        raw: spec(raw.ready.port, { ...op.raw, path: op.raw.path, amount: undefined }, false),
      };
      for (const s of Object.values(specs)) await load({ ...s, seconds: 1, amount: s.amount ? Math.ceil(s.amount / 4) : undefined });
      const got = { A: [] as number[], B: [] as number[], raw: [] as number[] };
      // Server CPU per request too: on a loaded machine it moves far less than throughput does.
      const cpu = { A: [] as number[], B: [] as number[], raw: [] as number[] };
      const children = { A: a.child, B: b.child, raw };
      const cpuOf = async (c: Child) => (await c.ask<{ cpuUs: number }>('stats')).cpuUs;
      for (let r = 0; r < o.rounds; r++) {
        for (const k of ORDERS[r % ORDERS.length]!) {
          const before = await cpuOf(children[k]);
          const res = await load(specs[k]);
          cpu[k].push(((await cpuOf(children[k])) - before) / res.requests);
          got[k].push(res.rps);
        }
      }
      const paired = got.B.map((v, i) => v / got.A[i]!);
      log(
        `  ${op.name}: A ${fmt(med(got.A))}, B ${fmt(med(got.B))}, raw ${fmt(med(got.raw))} req/s; B ÷ A per round ${paired.map((x) => x.toFixed(2)).join(' ')}; CPU µs per request A ${med(cpu.A).toFixed(0)}, B ${med(cpu.B).toFixed(0)}`,
      );
      rows.push([
        op.name,
        `${fmt(med(got.A))} req/s`,
        `${fmt(med(got.B))} req/s`,
        med(paired).toFixed(2),
        (med(got.A) / med(got.raw)).toFixed(2),
        (med(got.B) / med(got.raw)).toFixed(2),
        `${med(cpu.A).toFixed(0)} → ${med(cpu.B).toFixed(0)} µs (${(med(cpu.B) / med(cpu.A)).toFixed(2)}; raw ${med(cpu.raw).toFixed(0)})`,
      ]);
    }
    if (wanted('first')) rows.push(...(await firstEvent(o, raw, a, b)));
  } finally {
    await Promise.all([raw.stop(), a.child.stop(), b.child.stop()]);
  }
  const sizes =
    o.conversationsA === undefined
      ? `${o.conversations.toLocaleString('en-US')} conversations`
      : `A on ${o.conversationsA.toLocaleString('en-US')} conversations, B on ${o.conversations.toLocaleString('en-US')}`;
  log(`\nA = ${o.ref} (${sha.slice(0, 10)}), B = the working tree; ${sizes}, file store`);
  log('| figure | A | B | B ÷ A (median of rounds) | A ÷ raw | B ÷ raw | server CPU per request, A → B (B ÷ A) |');
  log('|---|---|---|---|---|---|---|');
  for (const r of rows) log(`| ${r.join(' | ')} |`);
}

/** Every order of the three in turn: none of them is always measured first, or last, after the others' load. */
const ORDERS = [
  ['A', 'B', 'raw'],
  ['B', 'raw', 'A'],
  ['raw', 'A', 'B'],
  ['B', 'A', 'raw'],
  ['A', 'raw', 'B'],
  ['raw', 'B', 'A'],
] as const;

const fmt = (v: number) => Math.round(v).toLocaleString('en-US');

/** A stream's first event one request at a time, A and B in alternating rounds with raw GETs between them. */
async function firstEvent(o: AbOptions, raw: Child, a: Side, b: Side): Promise<string[][]> {
  const body = JSON.stringify({ message: { content: 'Tell me about the Montreal office.' }, stream: true });
  const isEvent = (l: string) => l.startsWith('event: ');
  const stream = (s: Side) => {
    const any = pick(s.streamIds);
    return () =>
      timed(s.child.ready.port, 'POST', `/v1/apps/${STREAM_APP}/conversations/${any()}`, { body, headers: AUTH, first: isEvent });
  };
  const rawGet = () => timed(raw.ready.port, 'GET', '/get');
  // D-161: the floor of a durable first event, the baseline's stream after a start record fdatasynced.
  const durable = () => timed(raw.ready.port, 'GET', '/sse-durable?n=20', { first: isEvent });
  await repeat(0, 20, rawGet);
  await repeat(0, 5, durable);
  await repeat(0, 5, stream(a));
  await repeat(0, 5, stream(b));
  const t = { A: [] as number[], B: [] as number[], raw: [] as number[], durable: [] as number[] };
  const perRound = { A: [] as number[], B: [] as number[], durable: [] as number[] };
  for (let r = 0; r < o.rounds; r++) {
    const order = r % 2 === 0 ? [a, b] : [b, a];
    t.raw.push(...(await repeat(o.streams * 2, 0, rawGet)).map((x) => x.totalMs));
    const floor = (await repeat(o.streams, 0, durable)).map((x) => x.firstMs);
    t.durable.push(...floor);
    perRound.durable.push(med(floor));
    for (const s of order) {
      const firsts = (await repeat(o.streams, 0, stream(s))).map((x) => x.firstMs);
      t[s.name].push(...firsts);
      perRound[s.name].push(med(firsts));
    }
    t.raw.push(...(await repeat(o.streams * 2, 0, rawGet)).map((x) => x.totalMs));
  }
  const paired = perRound.B.map((v, i) => v / perRound.A[i]!);
  const overFloor = (side: 'A' | 'B') => med(perRound[side].map((v, i) => v / perRound.durable[i]!)).toFixed(2);
  const rawP50 = med(t.raw);
  o.log(
    `  first SSE event p50: A ${med(t.A).toFixed(2)} ms, B ${med(t.B).toFixed(2)} ms, raw GET p50 ${rawP50.toFixed(2)} ms, durable-begin floor ${med(t.durable).toFixed(2)} ms; B ÷ A per round ${paired.map((x) => x.toFixed(2)).join(' ')}`,
  );
  return [
    [
      'first SSE event p50 (latency: lower is better; ratios to a raw GET p50)',
      `${med(t.A).toFixed(2)} ms`,
      `${med(t.B).toFixed(2)} ms`,
      med(paired).toFixed(2),
      (med(t.A) / rawP50).toFixed(2),
      (med(t.B) / rawP50).toFixed(2),
      '',
    ],
    ['raw GET p50, one at a time', `${rawP50.toFixed(2)} ms`, '', '', '', '', ''],
    [
      "first SSE event p50 ÷ the durable-begin floor's (D-161; median of rounds' ratios, in the A ÷ raw and B ÷ raw columns)",
      `${med(t.durable).toFixed(2)} ms (floor)`,
      '',
      '',
      overFloor('A'),
      overFloor('B'),
      '',
    ],
  ];
}
