// Throttles that hold in a burst (D-165) and password hashing in its own bounded pool (D-166), on the
// file store; two PostgreSQL instances: test/proof/pg-sign-in-burst.test.ts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { HASH_POOL_SIZE, HashPool, hashPool } from '../src/services/admin/hashing.ts';
import { PAIR_FREE_FAILURES } from '../src/services/admin/throttle.ts';
import { adminClient, DEMO_ADMIN, TEST_HASH_COST } from './support/admin-client.ts';
import { startTestServer, type TestServer } from './support/helpers.ts';
import { assertBurstsHold } from './support/sign-in-burst.ts';

let server: TestServer;
let origin: string;
before(async () => {
  // A stopped clock: a burst's back-off cannot run out while a loaded machine takes its time (D-165).
  const at = Date.now();
  server = await startTestServer({ passwordHashCost: TEST_HASH_COST, adminClock: () => at });
  origin = new URL(server.baseUrl).origin;
});
after(() => server.close());

describe('throttles that hold in a burst (D-165)', () => {
  test('100 sign-ins at once check at most the allowed passwords; 20 password changes of one session too', async () => {
    await assertBurstsHold(server.control, [origin]);
  });
});

describe('password hashing in its own bounded pool (D-166)', () => {
  test('tasks past the size wait; verifications past the queue bound are refused sign_in_busy; new hashes wait', async () => {
    const pool = new HashPool(2, 3);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let running = 0;
    let most = 0;
    const task = async () => {
      most = Math.max(most, ++running);
      await gate;
      running--;
      return true;
    };
    const bounded = Array.from({ length: 10 }, () =>
      pool.run(task, true).then(
        () => 'done',
        (e) => e.code as string,
      ),
    );
    const unbounded = pool.run(task, false).then(() => 'done');
    release();
    const answers = await Promise.all([...bounded, unbounded]);
    assert.deepEqual(answers, [...Array(5).fill('done'), ...Array(5).fill('sign_in_busy'), 'done']);
    assert.deepEqual([most, pool.peak], [2, 2]);
  });

  test('a sign-in finding the queue full answers 503 sign_in_busy with Retry-After 1 and changes nothing', async () => {
    const client = adminClient(origin);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const holders = Array.from({ length: hashPool.size + hashPool.queueBound }, () => hashPool.run(() => gate, false));
    const version = server.control.read().version;
    const audit = (await server.control.audit.list({ team_id: 'team_demo', limit: 1 })).data[0]?.id;
    try {
      const busy = await client.call('POST', '/sessions', DEMO_ADMIN);
      assert.deepEqual([busy.status, busy.body.error.type, busy.body.error.code], [503, 'service_unavailable', 'sign_in_busy']);
      assert.equal(busy.headers.get('retry-after'), '1');
      assert.equal(busy.headers.get('set-cookie'), null);
      for (let i = 0; i < 2 * PAIR_FREE_FAILURES; i++)
        assert.equal((await client.call('POST', '/sessions', { ...DEMO_ADMIN, password: 'wrong' })).body.error.code, 'sign_in_busy');
    } finally {
      release();
      await Promise.all(holders);
    }
    assert.equal(server.control.read().version, version);
    assert.equal((await server.control.audit.list({ team_id: 'team_demo', limit: 1 })).data[0]?.id, audit, 'no audit entry');
    // No failure was counted by the refusals: the pair still has all its free failures.
    for (let i = 0; i < PAIR_FREE_FAILURES; i++)
      assert.equal((await client.call('POST', '/sessions', { ...DEMO_ADMIN, password: 'wrong' })).status, 401);
    assert.equal((await client.call('POST', '/sessions', { ...DEMO_ADMIN, password: 'wrong' })).status, 429);
  });

  test("a hash is done while every thread of libuv's pool is held: hashing does not wait behind the data plane's I/O", async () => {
    // Opening a FIFO for reading holds a libuv thread until a writer comes: a stand-in for slow disk I/O.
    const dir = await mkdtemp(path.join(os.tmpdir(), 'parley-fifo-'));
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
    const held = Array.from({ length: threads }, () => open(fifo, 'r'));
    try {
      const hashed = hashPool.hash('a new password', TEST_HASH_COST).then((h) => hashPool.verify('a new password', h, TEST_HASH_COST));
      // A bound on the wait so that a failure releases the threads below, rather than hanging the file.
      const outcome = await Promise.race([hashed, sleep(30_000, 'still waiting behind the held threads', { ref: false })]);
      assert.equal(outcome, true);
    } finally {
      // An end held open for writing lets every reader's open return, those still queued behind other
      // I/O too. O_RDWR never blocks on Linux, where a blocking open for writing would wait for ever if no
      // reader had started yet, and a reader that started after the writers left would hang the file.
      const writer = openSync(fifo, constants.O_RDWR);
      try {
        await Promise.all(held.map(async (h) => (await h).close()));
      } finally {
        closeSync(writer);
      }
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('hashing never ran more than the pool size at once through the bursts', () => {
    assert.ok(hashPool.checked > 0);
    assert.ok(hashPool.peak <= HASH_POOL_SIZE, `peak ${hashPool.peak}`);
  });
});
