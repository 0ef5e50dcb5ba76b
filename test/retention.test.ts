// D-73: the retention policy of deleted histories (src/services/retention.ts) apart from the stores,
// which test/support/store-suite.ts and test/support/admin-conversations-suite.ts prove: what the
// sweep asks each store to purge (past the retention, then each app's bound), its periodic runs (a
// failed one told and tried again), and the bound a delete applies (none kept with 0 days).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DeletedRetention } from '../src/services/retention.ts';
import type { AdminConversations } from '../src/store/types.ts';

const NOW = 1_800_000_000;
const DAY = 86_400;

function fakeStore() {
  const calls: string[] = [];
  let failNext = false;
  let onPurge: (() => void) | undefined;
  const admin = {
    async purgeDeleted(before: number, now: number) {
      calls.push(`purge ${before} ${now}`);
      onPurge?.();
      if (failNext) {
        failNext = false;
        throw new Error('database away');
      }
      return 2;
    },
    async trimKept(appId: string, max: number, now: number) {
      calls.push(`trim ${appId} ${max} ${now}`);
      return appId === 'app_a' ? 1 : 0;
    },
  } as unknown as AdminConversations;
  return {
    store: { admin },
    calls,
    failNext: () => {
      failNext = true;
    },
    /** Resolves at the `n`th purge from now. */
    purges(n: number) {
      return new Promise<void>((resolve) => {
        let left = n;
        onPurge = () => {
          if (--left === 0) resolve();
        };
      });
    },
  };
}

const quota = { bytes: (appId: string) => (appId === 'app_a' ? 1000 : 5000) };

test('the sweep purges what was deleted longer ago than the retention, then each app past its bound (its quota)', async () => {
  const f = fakeStore();
  const r = new DeletedRetention(
    f.store,
    quota,
    30,
    () => ['app_a', 'app_b'],
    () => NOW,
  );
  assert.equal(await r.sweep(), 3);
  assert.deepEqual(f.calls, [`purge ${NOW - 30 * DAY} ${NOW}`, `trim app_a 1000 ${NOW}`, `trim app_b 5000 ${NOW}`]);
  assert.equal(r.purgeAt(NOW), NOW + 30 * DAY);
});

test('a delete applies its app bound; with 0 days it keeps nothing', async () => {
  const f = fakeStore();
  await new DeletedRetention(
    f.store,
    quota,
    30,
    () => [],
    () => NOW,
  ).afterDelete('app_b');
  await new DeletedRetention(
    f.store,
    quota,
    0,
    () => [],
    () => NOW,
  ).afterDelete('app_b');
  assert.deepEqual(f.calls, [`trim app_b 5000 ${NOW}`, `trim app_b 0 ${NOW}`]);
});

test('start sweeps at once, then periodically; a failed sweep is told and the next one runs; stop ends it', async () => {
  const f = fakeStore();
  const r = new DeletedRetention(
    f.store,
    quota,
    30,
    () => ['app_a'],
    () => NOW,
  );
  const errors: string[] = [];
  // The sweep's timer does not hold the process open (unref): this one does while the test waits.
  const alive = setInterval(() => {}, 60_000);
  assert.equal(await r.start((e) => errors.push(e.message), 5), 3, 'the sweep at start is awaited');
  assert.equal(f.calls.length, 2);
  f.failNext();
  try {
    await f.purges(2);
  } finally {
    clearInterval(alive);
  }
  await r.stop();
  assert.deepEqual(errors, ['database away']);
  assert.ok(f.calls.filter((c) => c.startsWith('purge')).length >= 3, f.calls.join('; '));
});
