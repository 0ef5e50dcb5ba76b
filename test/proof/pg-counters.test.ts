// The PostgreSQL counters without a serialization point (src/store/pg/app-stats.ts, rate-counts.ts;
// D-101, D-102), on a real PostgreSQL, two instances (each its own pool) creating and counting at once:
// the storage quota (D-27) is never passed, though most creates ran on the shared path; D-23's limits
// admit exactly the plan's requests; D-24's counters and the stored bytes are exact after.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import postgres from 'postgres';
import { LIMITS } from '../../src/contract/index.ts';
import { StorageQuota } from '../../src/services/quota.ts';
import { QUOTA_LOCK_CLASS, RECORD_MAX } from '../../src/store/pg/app-stats.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { PgRateCounts } from '../../src/store/pg/rate-counts.ts';
import { until } from '../support/live-reply.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { record } from '../support/records.ts';

usePostgres();

/** Metadata of the largest size D-9 allows: a record of exactly RECORD_MAX bytes in the quota. */
const BIG = { k: 'x'.repeat(LIMITS.metadataBytes - Buffer.byteLength('{"k":""}')) };

test('D-27, D-101, D-23, D-24: creates at once on two instances never pass the quota nor the minute limit; counters exact after', async () => {
  const url = await freshDatabase();
  const stores = [new PgStore({ url, max: 10 }), new PgStore({ url, max: 10 })];
  const counts = stores.map((s) => new PgRateCounts(s.sql, 'plan'));
  await Promise.all(stores.map((s) => s.open()));
  await Promise.all(counts.map((c) => c.open()));
  try {
    const [{ n }] = await stores[0]!.sql<[{ n: string }]>`SELECT current_setting('max_connections') AS n`;
    // The margin is every connection's largest create: a quota of the margin and 10 more such creates
    // admits exactly that many, the first ones on the shared path, the last ones on the exact one.
    const fits = Number(n) + 10;
    assert.equal(RECORD_MAX, 256 + Buffer.byteLength(JSON.stringify(BIG)));
    const quota = new StorageQuota(stores[0]!, {
      apps: new Map([['app_demo', { plan: 'p' }]]),
      plans: new Map([['p', { storage_bytes: fits * RECORD_MAX }]]),
    } as never);
    const perMinute = fits + 25;
    const attempts = fits + 45;
    const results = await Promise.allSettled(
      Array.from({ length: attempts }, async (_, i) => {
        const store = stores[i % 2]!;
        // As the pipeline does: the request counts (D-23, D-110), then the create checks the quota.
        const c = await counts[i % 2]!.take('app_demo', perMinute, 1_000_000);
        if (!c.taken) return 'limited' as const;
        const r = record(`conv_c${String(i).padStart(3, '0')}`, {
          seq: await store.nextSeq(),
          external_user_id: `u${i % 7}`,
          metadata: BIG,
        });
        await store.putConversation(r, undefined, quota.admit('app_demo', RECORD_MAX));
        return r;
      }),
    );
    const made = results.flatMap((r) => (r.status === 'fulfilled' && r.value !== 'limited' ? [r.value] : []));
    const limited = results.filter((r) => r.status === 'fulfilled' && r.value === 'limited').length;
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as { code?: string }] : []));
    assert.equal(attempts - limited, perMinute, 'the minute limit admitted exactly its requests');
    assert.equal(made.length, fits, 'the quota admitted exactly what fits');
    assert.equal(refused.length, perMinute - fits);
    assert.ok(
      refused.every((e) => e.code === 'storage_quota_exceeded'),
      'the others get storage_quota_exceeded',
    );
    const users = new Set(made.map((r) => r.external_user_id)).size;
    for (const store of stores) {
      assert.deepEqual(await store.appCounters('app_demo'), { conversations: fits, messages: 0, users });
      assert.equal(await store.storedBytes('app_demo'), fits * RECORD_MAX);
    }
    const [w] = await stores[1]!.sql<[{ counts: number[]; day_count: number }]>`
      SELECT counts, day_count FROM rate_windows WHERE scope = 'plan' AND key = 'app_demo'`;
    assert.equal(
      w.counts.reduce((t, x) => t + x, 0),
      perMinute,
      'the buckets hold every counted request',
    );
    assert.equal(w.day_count, perMinute);
    const slots = await stores[0]!.sql`SELECT slot FROM app_stats WHERE app_id = 'app_demo'`;
    assert.ok(slots.length > 1, `the counters were written to ${slots.length} slot(s): creates did not take turns on one row`);
    // A create that does not fit, once the app is full, still gets the refusal with the stored bytes.
    const last = record('conv_last', { seq: await stores[0]!.nextSeq() });
    await assert.rejects(stores[0]!.putConversation(last, undefined, quota.admit('app_demo', 258)), { code: 'storage_quota_exceeded' });
  } finally {
    await Promise.all(counts.map((c) => c.close()));
    await Promise.all(stores.map((s) => s.close()));
  }
});

test('D-23, D-102: the day limit across two pools admits exactly its count; a refusal says when a slot frees, within the minute; a slot given back is taken once', async () => {
  const url = await freshDatabase();
  const pools = [postgres(url, { max: 6, onnotice: () => {} }), postgres(url, { max: 6, onnotice: () => {} })];
  const store = new PgStore({ url, max: 2 });
  await store.open(); // migrates
  const counts = pools.map((p) => new PgRateCounts(p, 'plan'));
  try {
    const byDay = await Promise.all(Array.from({ length: 30 }, (_, i) => counts[i % 2]!.take('day', 1_000, 7)));
    assert.equal(byDay.filter((c) => c.taken).length, 7);
    for (const c of byDay.filter((x) => !x.taken)) assert.equal(c.dayCount, 7);
    const byMinute = await Promise.all(Array.from({ length: 30 }, (_, i) => counts[i % 2]!.take('minute', 9, 1_000)));
    const taken = byMinute.filter((c) => c.taken);
    assert.equal(taken.length, 9);
    // Each admitted count saw the ones before it: 0…8 before, each once.
    assert.deepEqual(
      taken.map((c) => c.inMinute).sort((x, y) => x - y),
      [0, 1, 2, 3, 4, 5, 6, 7, 8],
    );
    for (const c of byMinute.filter((x) => !x.taken)) {
      assert.ok(c.freesAt !== undefined && c.freesAt <= c.now, 'the slot frees with a request already counted');
      const wait = c.freesAt! + 60_000 - c.now;
      assert.ok(wait > 0 && wait <= 60_000, `frees in ${wait} ms`);
    }
    await counts[1]!.giveBack('minute', taken[0]!.now);
    const again = await Promise.all([counts[0]!.take('minute', 9, 1_000), counts[1]!.take('minute', 9, 1_000)]);
    assert.equal(again.filter((c) => c.taken).length, 1, 'the slot given back is taken once');
  } finally {
    await store.close();
    await Promise.all(pools.map((p) => p.end()));
  }
});

test('D-101: an app found near its quota creates on the exact path (its lock exclusive) until one finds it far again (space freed), then on the shared path', async () => {
  const url = await freshDatabase();
  const store = new PgStore({ url, max: 4 });
  await store.open();
  // A session of its own holds the app's quota lock shared: a create on the exact path waits for it, one on the shared path does not.
  const holder = postgres(url, { max: 1, onnotice: () => {} });
  const hold = () => holder`SELECT pg_advisory_lock_shared(${QUOTA_LOCK_CLASS}, hashtext('app_demo'))`;
  const release = () => holder`SELECT pg_advisory_unlock_shared(${QUOTA_LOCK_CLASS}, hashtext('app_demo'))`;
  const waiting = async () => (await holder`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).length > 0;
  try {
    const [{ n }] = await store.sql<[{ n: string }]>`SELECT current_setting('max_connections') AS n`;
    // Room for the margin and three records: the fourth create finds the app within the margin.
    const quota = new StorageQuota(store, {
      apps: new Map([['app_demo', { plan: 'p' }]]),
      plans: new Map([['p', { storage_bytes: Number(n) * RECORD_MAX + 3 * RECORD_MAX }]]),
    } as never);
    const create = async (i: number) => {
      const r = record(`conv_n${i}`, { seq: await store.nextSeq(), metadata: BIG });
      await store.putConversation(r, undefined, quota.admit('app_demo', RECORD_MAX));
    };
    for (let i = 1; i <= 4; i++) await create(i);
    // Near: the next create takes the lock exclusive, so it waits for the holder.
    await hold();
    const fifth = create(5);
    await until('the create near the quota waits for the lock', waiting);
    await release();
    await fifth;
    // Space freed: the next create, still on the exact path, finds the app far from its quota again.
    for (let i = 1; i <= 5; i++) await store.updateConversation(`conv_n${i}`, (x) => ({ ...x!, deleted_at: 9 }));
    await create(6);
    await hold();
    let done = false;
    const seventh = create(7).finally(() => (done = true));
    try {
      await until('the create ends or waits for the lock', async () => done || (await waiting()));
      assert.equal(done, true, 'far from its quota again, a create takes the lock shared (it waited for the holder)');
    } finally {
      await release();
      await seventh;
    }
    assert.equal(await store.storedBytes('app_demo'), 2 * RECORD_MAX);
  } finally {
    await holder.end();
    await store.close();
  }
});
