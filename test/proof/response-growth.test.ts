// D-93: start-up work and memory do not depend on the history past D-36's hour. A million past
// responses, written directly as lines of the past index, beside a thousand ended within the hour
// (bench/past-responses.ts): a start-up reads the hour's index only (bytes read from the disk, measured by the kernel in /proc/self/io), keeps a
// count per minute and per app (entries), and its heap does not grow with the million. A past
// response is still found (D-36's look-up) by reading one shard of the past index. On PostgreSQL, a
// million rows of past responses: start-up's take-over of unfinished ones (D-38) reads the running
// rows only (tuples read, as PostgreSQL's statistics count them).
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import postgres from 'postgres';
import v8 from 'node:v8';
import vm from 'node:vm';
import { seedPastResponses } from '../../bench/past-responses.ts';
import { ResponseLog } from '../../src/store/file/response-log.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { tempDir } from '../support/helpers.ts';
import { freshDatabase, liveResponsesRead, usePostgres } from '../support/postgres.ts';

usePostgres();

const PAST = 1_000_000;
const HOUR = 1_000;

/** Bytes this process has read (read(2), pread(2)…), as the kernel counts them. */
async function bytesRead(): Promise<number> {
  const io = await fs.readFile('/proc/self/io', 'utf8');
  const m = /^rchar:\s+(\d+)$/m.exec(io);
  if (!m) throw new Error('no rchar in /proc/self/io: this proof needs Linux');
  return Number(m[1]);
}

test(`D-93: start-up over ${PAST.toLocaleString('en-US')} past responses reads and keeps the hour only`, {
  timeout: 600_000,
}, async (t) => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const heap = () => {
    gc();
    return process.memoryUsage().heapUsed;
  };
  const dataDir = await tempDir();
  const dir = path.join(dataDir, 'responses');
  const seeded = await seedPastResponses(dataDir, 'app_demo', PAST, HOUR);
  const hourIndex = (await fs.readdir(path.join(dir, 'ended'))).map((f) => path.join(dir, 'ended', f));
  let hourIndexBytes = 0;
  for (const f of hourIndex) hourIndexBytes += (await fs.stat(f)).size;

  const heapBefore = heap();
  const readBefore = await bytesRead();
  const log = new ResponseLog({ dir });
  await log.open();
  try {
    const read = (await bytesRead()) - readBefore;
    const kept = heap() - heapBefore;
    const held = log.held();
    const mb = (v: number) => `${(v / 2 ** 20).toFixed(2)} MB`;
    t.diagnostic(
      `start-up read ${mb(read)} (the hour's index ${mb(hourIndexBytes)}; the past ${mb(seeded.indexBytes)}), heap +${mb(kept)}, held ${JSON.stringify(held)}`,
    );
    // Bytes: the hour's index, and little else (the past index's 256 shards are never opened).
    assert.ok(read <= hourIndexBytes + 256 * 1024, `start-up read ${read} bytes; the hour's index is ${hourIndexBytes}`);
    assert.ok(read < seeded.indexBytes / 50);
    // Entries: per minute of the hour and per app, not per response.
    assert.deepEqual({ running: held.running, events: held.events, apps: held.apps }, { running: 0, events: 0, apps: 1 });
    assert.ok(held.minutes >= 1 && held.minutes <= 61, `${held.minutes} minutes held`);
    // Heap: a few MB at most, whatever the million (the index of the million alone would take hundreds).
    assert.ok(kept <= 8 * 2 ** 20, `start-up kept ${mb(kept)} of heap`);
    assert.ok(log.bytesOf('app_demo') >= seeded.hourBytes, "D-27: the hour's files count in the quota");

    // D-36: a past response is found from one shard; one of the hour still has its events.
    for (const p of seeded.pastSample) {
      const before = await bytesRead();
      const found = await log.trace(p.id);
      assert.equal(found?.start.conversation_id, p.conversation);
      assert.equal(found?.events, null);
      assert.ok((await bytesRead()) - before <= (seeded.indexBytes / 256) * 2, 'a look-up reads one shard');
    }
    for (const h of seeded.hourSample) assert.equal((await log.trace(h.id))?.events?.length, 3);
  } finally {
    await log.close();
  }
});

test(`D-93 on PostgreSQL: start-up over ${PAST.toLocaleString('en-US')} past responses reads the running ones only`, {
  timeout: 600_000,
}, async (t) => {
  const url = await freshDatabase();
  const first = new PgStore({ url, max: 2 });
  await first.open();
  await first.close();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const day = Math.floor(Date.now() / 1000) * 1000 - 7 * 86_400_000;
    // Rows written directly: a million ended a week ago, two left running by an instance long gone.
    await sql`
      INSERT INTO live_responses (id, app_id, conversation_id, created_at, input, owner, lease_until, ended_at)
      SELECT 'resp_a' || lpad(to_hex(g), 23, '0'), 'app_demo', 'conv_a' || lpad(to_hex(g), 23, '0'), ${day / 1000}::bigint + g,
             '{"content":"hi","metadata":null}', 'gone', 0, ${day}::bigint + g
      FROM generate_series(1, ${PAST}) g`;
    await sql`
      INSERT INTO live_responses (id, app_id, conversation_id, created_at, input, owner, lease_until)
      VALUES ('resp_run1', 'app_demo', 'conv_run1', 1, '{"content":"hi","metadata":null}', 'gone', 0),
             ('resp_run2', 'app_demo', 'conv_run2', 1, '{"content":"hi","metadata":null}', 'gone', 0)`;
    await sql`ANALYZE live_responses`;
  } finally {
    await sql.end();
  }
  const before = await liveResponsesRead(url);
  const store = new PgStore({ url, max: 2 });
  await store.open();
  let taken: string[];
  try {
    taken = (await store.responses.unfinished()).map((r) => r.start.id).sort();
  } finally {
    await store.close();
  }
  const read = (await liveResponsesRead(url)) - before;
  t.diagnostic(`start-up read ${read} rows of live_responses`);
  assert.deepEqual(taken, ['resp_run1', 'resp_run2']);
  assert.ok(read <= 100, `start-up read ${read} rows of live_responses (${PAST.toLocaleString('en-US')} there)`);
});
