// `npm run bench [-- --quick] [-- --profile] [-- --no-write]`: Parley beside a raw node:http baseline,
// at 1,000 and 100,000 conversations; prints every figure and ratio and writes docs/benchmarks.md.
// Everything runs on loopback, in a temporary folder, and is stopped at the end.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startChild, type Child } from './child.ts';
import { seed } from './data.ts';
import { lineCounter, load, percentile, repeat, timed, type LoadResult } from './measure.ts';

const args = new Set(process.argv.slice(2));
const QUICK = args.has('--quick');
const PROFILE = args.has('--profile');
const WRITE = !args.has('--no-write') && !PROFILE;
const ROOT = path.resolve(import.meta.dirname, '..');

const CFG = QUICK
  ? { small: 1_000, large: 10_000, seconds: 2, warmup: 1, probes: 40, streams: 10, startups: 1, connections: 10 }
  : { small: 1_000, large: 100_000, seconds: 8, warmup: 2, probes: 300, streams: 40, startups: 3, connections: 10 };
/** Events in the baseline SSE stream, and tokens in the fake Ollama reply (one every OLLAMA_GAP_MS). */
const SSE_EVENTS = 200;
const OLLAMA_TOKENS = QUICK ? 100 : 200;
const OLLAMA_GAP_MS = 1;

const APP = 'app_demo';
const KEY = 'sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3';
const AUTH = { authorization: `Bearer ${KEY}` };

const started = Date.now();
const loadBefore = os.loadavg();
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-bench-'));
const live = new Set<Child>();
const figures: Figure[] = [];

interface Figure {
  name: string;
  parley: string;
  baseline?: string;
  ratio?: number;
  target?: string;
  ok?: boolean;
}

function log(text: string): void {
  process.stdout.write(text + '\n');
}

function fmtLoad(r: LoadResult): string {
  return `${Math.round(r.rps).toLocaleString('en-US')} req/s (p50 ${r.p50} ms, p99 ${r.p99} ms)`;
}

function record(f: Figure): void {
  figures.push(f);
  const ratio = f.ratio === undefined ? '' : `  ratio ${f.ratio.toFixed(2)}`;
  const target = f.target === undefined ? '' : `  target ${f.target} ${f.ok ? 'MET' : 'NOT MET'}`;
  log(`  ${f.name}: ${f.parley}${f.baseline ? `  | baseline ${f.baseline}` : ''}${ratio}${target}`);
}

async function start(script: string, argv: string[] = [], env: NodeJS.ProcessEnv = {}, label = script): Promise<Child> {
  const execArgv = PROFILE && script === 'parley-server.ts' ? ['--cpu-prof', `--cpu-prof-dir=${path.join(ROOT, 'bench', 'profiles')}`, `--cpu-prof-name=${label}-${Date.now()}.cpuprofile`] : [];
  const child = await startChild(script, argv, { env, execArgv });
  live.add(child);
  return child;
}

async function stop(child: Child): Promise<void> {
  await child.stop();
  live.delete(child);
}

/** A copy of the fixtures whose plans do not limit the benchmark (D-23 is not what is measured). */
async function benchFixtures(): Promise<string> {
  const dir = path.join(tmp, 'fixtures');
  await fs.mkdir(dir);
  const fixtures = JSON.parse(await fs.readFile(path.join(ROOT, 'fixtures', 'fixtures.json'), 'utf8')) as { plans: Array<{ requests_per_minute: number; requests_per_day: number }> };
  for (const plan of fixtures.plans) {
    plan.requests_per_minute = 1_000_000_000;
    plan.requests_per_day = 1_000_000_000;
  }
  await fs.writeFile(path.join(dir, 'fixtures.json'), JSON.stringify(fixtures));
  return dir;
}

function pick(ids: string[]): () => string {
  return () => ids[Math.floor(Math.random() * ids.length)]!;
}

async function warmAndLoad(spec: Parameters<typeof load>[0]): Promise<LoadResult> {
  await load({ ...spec, seconds: CFG.warmup });
  return load(spec);
}

const ratioOf = (a: number, b: number) => (b === 0 ? NaN : a / b);
const atLeast = (r: number, t: number) => r >= t;
const ms = (v: number) => `${v.toFixed(2)} ms`;

// ---------------------------------------------------------------------------------------------------
// Baseline
// ---------------------------------------------------------------------------------------------------

interface Baseline {
  get: LoadResult;
  list: LoadResult;
  post: LoadResult;
  message: LoadResult;
  getIdleP50: number;
  sseFirstP50: number;
  sseEventsPerSec: number;
}

async function measureBaseline(): Promise<Baseline> {
  log('raw node:http baseline');
  const b = await start('baseline-server.ts');
  const port = b.ready.port;
  const c = CFG.connections;
  const s = CFG.seconds;
  const get = await warmAndLoad({ port, method: 'GET', path: () => '/get', connections: c, seconds: s });
  log(`  GET (conversation-sized body): ${fmtLoad(get)}`);
  const list = await warmAndLoad({ port, method: 'GET', path: () => '/list', connections: c, seconds: s });
  log(`  GET (list-sized body): ${fmtLoad(list)}`);
  const post = await warmAndLoad({ port, method: 'POST', path: () => '/post', body: JSON.stringify({ title: 'bench' }), connections: c, seconds: s });
  log(`  JSON POST: ${fmtLoad(post)}`);
  const message = await warmAndLoad({ port, method: 'POST', path: () => '/message', body: JSON.stringify({ message: { content: 'Hello' }, stream: false }), connections: c, seconds: s });
  log(`  JSON POST (response-sized body): ${fmtLoad(message)}`);
  const idle = await repeat(CFG.probes, 20, () => timed(port, 'GET', '/get'));
  const getIdleP50 = percentile(idle.map((t) => t.totalMs), 50);
  log(`  GET latency, one request at a time: p50 ${ms(getIdleP50)}`);
  const sse = await repeat(CFG.streams, 3, () => timed(port, 'GET', `/sse?n=${SSE_EVENTS}`, { count: lineCounter((l) => l.startsWith('event: ')) }));
  const sseFirstP50 = percentile(sse.map((t) => t.firstMs), 50);
  const sseEventsPerSec = percentile(sse.map((t) => t.units / (t.totalMs / 1000)), 50);
  log(`  SSE: first event p50 ${ms(sseFirstP50)}, ${Math.round(sseEventsPerSec).toLocaleString('en-US')} events/s`);
  await stop(b);
  return { get, list, post, message, getIdleP50, sseFirstP50, sseEventsPerSec };
}

// ---------------------------------------------------------------------------------------------------
// Parley at one scale
// ---------------------------------------------------------------------------------------------------

interface Scale {
  count: number;
  get: LoadResult;
  list: LoadResult;
  create: LoadResult;
  rename: LoadResult;
  send?: LoadResult;
  streamFirstP50?: number;
  streamEventsPerSec?: number;
  rssAfterLoad: number;
  startups: Array<{ processToReadyMs: number; openMs: number; spawnToReadyMs: number; rss: number }>;
}

/** Whether this branch serves send message yet (the agent slice may not be merged). */
async function sendMessageAvailable(port: number, conv: string): Promise<boolean> {
  const t = await timed(port, 'POST', `/v1/apps/${APP}/conversations/${conv}`, { body: JSON.stringify({ message: { content: 'Hello' }, stream: false }), headers: AUTH }).catch(
    (err: Error) => err,
  );
  return !(t instanceof Error);
}

async function measureScale(count: number, fixturesDir: string, label: string): Promise<Scale> {
  const dataDir = path.join(tmp, `data-${count}`);
  const t0 = performance.now();
  const ids = await seed(dataDir, APP, count, (n) => {
    if (n % 20_000 === 0 || n === count) process.stdout.write(`\r  seeding ${n.toLocaleString('en-US')} / ${count.toLocaleString('en-US')}`);
  });
  log(`\r  seeded ${count.toLocaleString('en-US')} conversations of 4 items through FileStore in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const startups: Scale['startups'] = [];
  for (let i = 0; i < CFG.startups - 1; i++) {
    const p = await start('parley-server.ts', [dataDir, fixturesDir], {}, `${label}-startup`);
    startups.push({ processToReadyMs: p.ready.processToReadyMs as number, openMs: p.ready.openMs as number, spawnToReadyMs: p.spawnToReadyMs, rss: p.ready.rss as number });
    await stop(p);
  }
  const p = await start('parley-server.ts', [dataDir, fixturesDir], {}, label);
  startups.push({ processToReadyMs: p.ready.processToReadyMs as number, openMs: p.ready.openMs as number, spawnToReadyMs: p.spawnToReadyMs, rss: p.ready.rss as number });
  const port = p.ready.port;
  const c = CFG.connections;
  const s = CFG.seconds;
  const any = pick(ids);
  const base = `/v1/apps/${APP}/conversations`;

  const get = await warmAndLoad({ port, method: 'GET', path: () => `${base}/${any()}`, headers: AUTH, connections: c, seconds: s });
  log(`  get conversation (any of ${count.toLocaleString('en-US')}): ${fmtLoad(get)}`);
  const list = await warmAndLoad({ port, method: 'GET', path: () => `${base}?limit=20&after=${any()}`, headers: AUTH, connections: c, seconds: s });
  log(`  list (limit 20, after a cursor): ${fmtLoad(list)}`);
  const rename = await warmAndLoad({ port, method: 'PATCH', path: () => `${base}/${any()}`, body: JSON.stringify({ title: 'Renamed by the benchmark' }), headers: AUTH, connections: c, seconds: s });
  log(`  rename: ${fmtLoad(rename)}`);

  let send: LoadResult | undefined;
  let streamFirstP50: number | undefined;
  let streamEventsPerSec: number | undefined;
  if (await sendMessageAvailable(port, ids[0]!)) {
    const msg = JSON.stringify({ message: { content: 'What are the opening hours of the Montreal office?' }, stream: false });
    send = await warmAndLoad({ port, method: 'POST', path: () => `${base}/${any()}`, body: msg, headers: AUTH, connections: c, seconds: s });
    log(`  send message (embedded engine, JSON): ${fmtLoad(send)}`);
    const streamBody = JSON.stringify({ message: { content: 'Tell me about the Montreal office.' }, stream: true });
    const streams = await repeat(CFG.streams, 3, () => timed(port, 'POST', `${base}/${any()}`, { body: streamBody, headers: AUTH, count: lineCounter((l) => l.startsWith('event: ')) }));
    streamFirstP50 = percentile(streams.map((t) => t.firstMs), 50);
    streamEventsPerSec = percentile(streams.map((t) => t.units / (t.totalMs / 1000)), 50);
    log(`  stream: first event p50 ${ms(streamFirstP50)}, ${Math.round(streamEventsPerSec).toLocaleString('en-US')} events/s (median ${percentile(streams.map((t) => t.units), 50)} events)`);
  } else {
    log('  send message and streams: not served on this branch yet (skipped)');
  }

  // Last, because it adds conversations.
  const create = await warmAndLoad({ port, method: 'POST', path: () => base, body: JSON.stringify({ title: 'Created by the benchmark' }), headers: AUTH, connections: c, seconds: s });
  log(`  create (durable before its 200): ${fmtLoad(create)}`);

  const stats = await p.ask<{ rss: number }>('stats');
  log(`  resident memory after the load: ${(stats.rss / 2 ** 20).toFixed(0)} MB`);
  await stop(p);
  return { count, get, list, create, rename, send, streamFirstP50, streamEventsPerSec, rssAfterLoad: stats.rss, startups };
}

// ---------------------------------------------------------------------------------------------------
// Ollama proxy overhead
// ---------------------------------------------------------------------------------------------------

interface Proxy {
  directFirstP50: number;
  parleyFirstP50: number;
  directRate: number;
  parleyRate: number;
}

async function measureOllama(fixturesDir: string): Promise<Proxy | undefined> {
  log(`Ollama proxy (fake Ollama on loopback: ${OLLAMA_TOKENS} tokens, one every ${OLLAMA_GAP_MS} ms)`);
  const ollama = await start('fake-ollama.ts', [String(OLLAMA_TOKENS), String(OLLAMA_GAP_MS)]);
  const oport = ollama.ready.port;
  const chat = JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'Hello' }], stream: true });
  const isToken = (l: string) => l.includes('"done":false');
  const direct = await repeat(CFG.streams, 3, () => timed(oport, 'POST', '/api/chat', { body: chat, count: lineCounter(isToken) }));
  const directFirstP50 = percentile(direct.map((t) => t.firstMs), 50);
  const directRate = percentile(direct.map((t) => (t.units - 1) / (t.unitSpanMs / 1000)), 50);
  log(`  direct: first token p50 ${ms(directFirstP50)}, ${Math.round(directRate).toLocaleString('en-US')} tokens/s`);

  const dataDir = path.join(tmp, 'data-ollama');
  const ids = await seed(dataDir, APP, 200);
  const p = await start('parley-server.ts', [dataDir, fixturesDir], { PARLEY_MODEL: 'ollama:bench', OLLAMA_HOST: `http://127.0.0.1:${oport}` }, 'ollama');
  let result: Proxy | undefined;
  try {
    if (!(await sendMessageAvailable(p.ready.port, ids[0]!))) {
      log('  through Parley: send message is not served on this branch yet (skipped)');
    } else {
      const any = pick(ids);
      const body = JSON.stringify({ message: { content: 'Hello' }, stream: true });
      const isDelta = (l: string) => l === 'event: response.output_text.delta';
      const via = await repeat(CFG.streams, 3, () =>
        timed(p.ready.port, 'POST', `/v1/apps/${APP}/conversations/${any()}`, { body, headers: AUTH, count: lineCounter(isDelta) }),
      );
      const parleyFirstP50 = percentile(via.map((t) => t.firstMs), 50);
      const parleyRate = percentile(via.map((t) => (t.units - 1) / (t.unitSpanMs / 1000)), 50);
      log(`  through Parley: first token p50 ${ms(parleyFirstP50)}, ${Math.round(parleyRate).toLocaleString('en-US')} tokens/s (median ${percentile(via.map((t) => t.units), 50)} deltas)`);
      result = { directFirstP50, parleyFirstP50, directRate, parleyRate };
    }
  } finally {
    await stop(p);
    await stop(ollama);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------

function rps(r: LoadResult): string {
  return `${Math.round(r.rps).toLocaleString('en-US')} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms`;
}

function report(base: Baseline, small: Scale, large: Scale, proxy: Proxy | undefined): void {
  const L = large.count.toLocaleString('en-US');
  const S = small.count.toLocaleString('en-US');
  log('\nfigures and ratios');
  for (const sc of [small, large]) {
    const n = sc.count.toLocaleString('en-US');
    const g = ratioOf(sc.get.rps, base.get.rps);
    record({ name: `get conversation, ${n} conversations`, parley: rps(sc.get), baseline: rps(base.get), ratio: g, target: '≥ 0.6', ok: atLeast(g, 0.6) });
    record({ name: `list (limit 20, cursor), ${n}`, parley: rps(sc.list), baseline: rps(base.list), ratio: ratioOf(sc.list.rps, base.list.rps) });
    const c = ratioOf(sc.create.rps, base.post.rps);
    record({ name: `create (durable), ${n}`, parley: rps(sc.create), baseline: rps(base.post), ratio: c, target: '≥ 0.1', ok: atLeast(c, 0.1) });
    record({ name: `rename, ${n}`, parley: rps(sc.rename), baseline: rps(base.post), ratio: ratioOf(sc.rename.rps, base.post.rps) });
    if (sc.send) record({ name: `send message (embedded, JSON), ${n}`, parley: rps(sc.send), baseline: rps(base.message), ratio: ratioOf(sc.send.rps, base.message.rps) });
  }
  const lg = ratioOf(large.list.rps, large.get.rps);
  record({ name: `list ÷ get at ${L}`, parley: `${Math.round(large.list.rps)} ÷ ${Math.round(large.get.rps)}`, ratio: lg, target: '≥ 0.5', ok: atLeast(lg, 0.5) });
  const cr = ratioOf(large.create.rps, small.create.rps);
  record({ name: `create at ${L} ÷ at ${S}`, parley: `${Math.round(large.create.rps)} ÷ ${Math.round(small.create.rps)}`, ratio: cr, target: '≥ 0.9', ok: atLeast(cr, 0.9) });
  const rr = ratioOf(large.rename.rps, small.rename.rps);
  record({ name: `rename at ${L} ÷ at ${S}`, parley: `${Math.round(large.rename.rps)} ÷ ${Math.round(small.rename.rps)}`, ratio: rr, target: '≥ 0.9', ok: atLeast(rr, 0.9) });
  if (large.send && small.send) {
    const sr = ratioOf(large.send.rps, small.send.rps);
    record({ name: `send message at ${L} ÷ at ${S}`, parley: `${Math.round(large.send.rps)} ÷ ${Math.round(small.send.rps)}`, ratio: sr, target: '≥ 0.9', ok: atLeast(sr, 0.9) });
  } else {
    record({ name: `send message at ${L} ÷ at ${S}`, parley: 'not measured (send message not on this branch)', target: '≥ 0.9', ok: false });
  }
  if (large.streamFirstP50 !== undefined && large.streamEventsPerSec !== undefined) {
    const tr = ratioOf(large.streamFirstP50, base.getIdleP50);
    record({ name: 'stream: time to first event p50 ÷ raw GET p50', parley: ms(large.streamFirstP50), baseline: ms(base.getIdleP50), ratio: tr, target: '≤ 2', ok: tr <= 2 });
    record({
      name: 'stream: events/s (one stream)',
      parley: `${Math.round(large.streamEventsPerSec).toLocaleString('en-US')} events/s`,
      baseline: `${Math.round(base.sseEventsPerSec).toLocaleString('en-US')} events/s`,
      ratio: ratioOf(large.streamEventsPerSec, base.sseEventsPerSec),
    });
  } else {
    record({ name: 'stream: time to first event p50 ÷ raw GET p50', parley: 'not measured (streams not on this branch)', baseline: ms(base.getIdleP50), target: '≤ 2', ok: false });
  }
  if (proxy) {
    const added = proxy.parleyFirstP50 - proxy.directFirstP50;
    record({ name: 'Ollama proxy: added time to first token p50', parley: ms(proxy.parleyFirstP50), baseline: ms(proxy.directFirstP50), target: '≤ 2 ms', ok: added <= 2, ratio: undefined });
    figures.at(-1)!.parley = `${ms(added)} added (${ms(proxy.parleyFirstP50)} through Parley)`;
    const rate = ratioOf(proxy.parleyRate, proxy.directRate);
    record({ name: 'Ollama proxy: token rate through Parley ÷ direct', parley: `${Math.round(proxy.parleyRate)} tokens/s`, baseline: `${Math.round(proxy.directRate)} tokens/s`, ratio: rate, target: '≥ 0.9', ok: atLeast(rate, 0.9) });
  } else {
    record({ name: 'Ollama proxy', parley: 'not measured (Ollama engine not on this branch)', target: 'added TTFT ≤ 2 ms, rate ≥ 0.9', ok: false });
  }
  const startup = percentile(large.startups.map((s) => s.processToReadyMs), 50);
  const openMs = percentile(large.startups.map((s) => s.openMs), 50);
  record({ name: `start-up with ${L} conversations (process start → listening, median)`, parley: `${ms(startup)} (of which store open + listen ${ms(openMs)})`, target: '≤ 2 s', ok: startup <= 2000 });
  const rss = Math.max(large.rssAfterLoad, ...large.startups.map((s) => s.rss));
  record({ name: `resident memory with ${L} conversations (after the load)`, parley: `${(rss / 2 ** 20).toFixed(0)} MB`, target: '≤ 300 MB', ok: rss <= 300 * 2 ** 20 });
}

async function writeDoc(): Promise<void> {
  const cpu = os.cpus();
  const lines = [
    '<!-- bench:begin (written by `npm run bench`; edit outside these markers) -->',
    `Run ${new Date(started).toISOString()}${QUICK ? ' (**--quick**: 10,000 instead of 100,000 conversations, short runs)' : ''}, ` +
      `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, Node ${process.version}, ${os.platform()} ${os.release()}. ` +
      `Load average before / after: ${loadBefore.map((v) => v.toFixed(1)).join(' ')} / ${os.loadavg().map((v) => v.toFixed(1)).join(' ')}` +
      ` (above ~0.5 the machine was busy with other work and the figures are disturbed). ` +
      `${CFG.connections} connections, ${CFG.seconds} s per load after ${CFG.warmup} s of warm-up; total run ${((Date.now() - started) / 1000).toFixed(0)} s.`,
    '',
    '| figure | Parley | baseline | ratio | target | met |',
    '|---|---|---|---|---|---|',
    ...figures.map((f) => `| ${f.name} | ${f.parley} | ${f.baseline ?? ''} | ${f.ratio === undefined || Number.isNaN(f.ratio) ? '' : f.ratio.toFixed(2)} | ${f.target ?? ''} | ${f.target === undefined ? '' : f.ok ? 'yes' : '**no**'} |`),
    '<!-- bench:end -->',
  ];
  const file = path.join(ROOT, 'docs', 'benchmarks.md');
  let doc: string;
  try {
    doc = await fs.readFile(file, 'utf8');
  } catch {
    doc = '# Benchmarks\n\n<!-- bench:begin -->\n<!-- bench:end -->\n';
  }
  const begin = doc.indexOf('<!-- bench:begin');
  const end = doc.indexOf('<!-- bench:end -->');
  doc = begin === -1 || end === -1 ? `${doc}\n${lines.join('\n')}\n` : doc.slice(0, begin) + lines.join('\n') + doc.slice(end + '<!-- bench:end -->'.length);
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, doc);
  log(`\nwrote ${path.relative(process.cwd(), file)}`);
}

try {
  log(`Parley benchmark${QUICK ? ' (quick)' : ''}: ${os.cpus().length} cores, Node ${process.version}, load average ${loadBefore.map((v) => v.toFixed(1)).join(' ')}, data in ${tmp}`);
  const fixturesDir = await benchFixtures();
  const base = await measureBaseline();
  log(`Parley with ${CFG.small.toLocaleString('en-US')} conversations`);
  const small = await measureScale(CFG.small, fixturesDir, 'small');
  log(`Parley with ${CFG.large.toLocaleString('en-US')} conversations`);
  const large = await measureScale(CFG.large, fixturesDir, 'large');
  for (const s of large.startups) log(`  start-up: ${ms(s.processToReadyMs)} process start → listening (store open + listen ${ms(s.openMs)}), RSS ${(s.rss / 2 ** 20).toFixed(0)} MB`);
  const proxy = await measureOllama(fixturesDir);
  report(base, small, large, proxy);
  if (WRITE) await writeDoc();
  log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
} finally {
  await Promise.all([...live].map((c) => c.stop()));
  await fs.rm(tmp, { recursive: true, force: true });
}
