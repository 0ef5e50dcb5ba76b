// What only the PostgreSQL store does (src/store/pg/pg-store.ts, docs/postgres.md): stores on one
// database act as instances. A response produced on one is followed and cancelled from another; one
// whose producer died is taken over once its lease expires or its connection is gone, by one instance
// only, also by the sweep of running ones (D-38); concurrent exchanges from two instances on one
// conversation all land (row locks, no lost update); a list walk on one while another writes sees each
// conversation once (keyset pages, D-11, D-12); counters (D-24) and the storage quota (D-27) stay exact
// when instances create at once. A response's events are written in batches (D-100).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import type { Logger } from 'pino';
import type { UnsequencedEvent } from '../../src/contract/index.ts';
import type { AgentRuntime } from '../../src/services/agent.ts';
import { StorageQuota } from '../../src/services/quota.ts';
import { ResponseService } from '../../src/services/send/responses.ts';
import type { UsageLedger } from '../../src/store/shared.ts';
import { PgStore, recountAppStats } from '../../src/store/pg/pg-store.ts';
import type { LiveResponseStart } from '../../src/store/types.ts';
import { walkIds } from '../support/list-walk.ts';
import { until } from '../support/live-reply.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { record, save } from '../support/records.ts';

usePostgres();

const start = (id: string, c = 'conv_p1'): LiveResponseStart => ({
  id,
  app_id: 'app_demo',
  conversation_id: c,
  created_at: 1_700_000_000,
  input: { content: 'hi', metadata: { k: 'v' } },
});
const ev = (event: string, n: number) => ({ event, data: { n } }) as unknown as UnsequencedEvent;

async function two(): Promise<[PgStore, PgStore]> {
  const [a, b] = await several(2);
  return [a!, b!];
}

async function several(n: number): Promise<PgStore[]> {
  const url = await freshDatabase();
  const stores = Array.from({ length: n }, () => new PgStore({ url, max: 4 }));
  await Promise.all(stores.map((s) => s.open()));
  return stores;
}

test('a response produced on one instance is followed and cancelled from another; D-35 holds across them', async () => {
  const [a, b] = await two();
  try {
    assert.deepEqual(await a.responses.begin(start('resp_x'), ev('response.created', 0)), {});
    assert.deepEqual(await b.responses.begin(start('resp_y'), ev('response.created', 0)), { running: 'resp_x' });
    assert.equal((await b.sql`SELECT seq FROM response_events WHERE response_id = 'resp_y'`).length, 0, 'nothing begun, no event written');
    const asked = new Promise<void>((resolve) => a.responses.onCancelRequest('resp_x', resolve));
    await b.responses.requestCancel('resp_x');
    await asked;
    const followed = (async () => {
      const got: number[] = [];
      for await (const e of b.responses.follow('resp_x', -1)) got.push((e as unknown as { data: { n: number } }).data.n);
      return got;
    })();
    await a.responses.append('resp_x', ev('response.output_text.delta', 1));
    await a.responses.append('resp_x', ev('response.failed', 2));
    assert.deepEqual(await followed, [0, 1, 2]);
    // What it was asked is kept with it (D-38 saves it from there; emptied past D-36's hour, D-93); the interface's trace does not return it.
    const [row] = await b.sql<{ input: string }[]>`SELECT input FROM live_responses WHERE id = 'resp_x'`;
    assert.deepEqual(JSON.parse(row!.input), { content: 'hi', metadata: { k: 'v' } });
    await assert.rejects(b.responses.append('resp_x', ev('response.completed', 3)), /not a live response of this instance/);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('D-100: events appended together are written in one transaction (one statement, one notification); an event appended alone is written too; each append resolves once its event is readable from another instance', async () => {
  const [a, b] = await two();
  /** Transactions that wrote a response's events. */
  const writes = async (id: string) =>
    Number((await a.sql<{ n: string }[]>`SELECT count(DISTINCT xmin::text) AS n FROM response_events WHERE response_id = ${id}`)[0]!.n);
  try {
    // D-35 revised: the first event is written in the begin's statement.
    await a.responses.begin(start('resp_batch'), ev('response.created', 0));
    assert.equal(await writes('resp_batch'), 1, 'the first event written with the begin');
    const appends: Promise<void>[] = [];
    for (let n = 1; n <= 20; n++) appends.push(a.responses.append('resp_batch', ev('response.output_text.delta', n)));
    appends.push(a.responses.append('resp_batch', ev('response.completed', 21)));
    const followed = (async () => {
      const got: number[] = [];
      for await (const e of b.responses.follow('resp_batch', -1)) got.push((e as unknown as { data: { n: number } }).data.n);
      return got;
    })();
    await Promise.all(appends);
    assert.equal(await writes('resp_batch'), 2, 'appended in one turn of the event loop: one write after the begin');
    const all = Array.from({ length: 22 }, (_, n) => n);
    assert.deepEqual(await followed, all, 'another instance follows them all, in order');
    assert.deepEqual(
      (await b.responses.trace('resp_batch'))!.events!.map((e) => (e as unknown as { data: { n: number } }).data.n),
      all,
    );
    // One at a time, each waited for: each is written (the last one by its timer, D-100's bound).
    await a.responses.begin(start('resp_alone', 'conv_p2'), ev('response.created', 0));
    assert.equal((await b.responses.trace('resp_alone'))!.events!.length, 1, 'readable from another instance once begun');
    for (let n = 1; n < 3; n++) {
      await a.responses.append('resp_alone', ev('response.output_text.delta', n));
      assert.equal((await b.responses.trace('resp_alone'))!.events!.length, n + 1, 'readable from another instance once acknowledged');
    }
    assert.equal(await writes('resp_alone'), 3);
    assert.equal((await b.responses.trace('resp_alone'))!.ended, false);
    await a.responses.append('resp_alone', ev('response.failed', 3));
    assert.equal((await b.responses.trace('resp_alone'))!.ended, true);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('D-38: a response whose instance died is handed to start-up once its lease expired, with its events, and only then', async () => {
  const [a, b] = await two();
  try {
    await a.responses.begin(start('resp_dead'), ev('response.created', 0));
    assert.deepEqual(await b.responses.unfinished(), [], 'a live lease is left to its owner');
    // Instance a stops renewing (as a kill -9 leaves it): its lease runs out.
    await a.sql`UPDATE live_responses SET lease_until = 0 WHERE id = 'resp_dead'`;
    const taken = await b.responses.unfinished();
    assert.deepEqual(
      taken.map((t) => [t.start.id, t.events!.length, t.ended]),
      [['resp_dead', 1, false]],
    );
    assert.deepEqual(await a.responses.unfinished(), [], 'taken over once');
    await assert.rejects(
      a.responses.append('resp_dead', ev('response.output_text.delta', 1)),
      /another took it over/,
      'the first owner writes no more',
    );
    await b.responses.append('resp_dead', ev('response.failed', 1));
    assert.equal((await a.responses.trace('resp_dead'))!.ended, true);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('exchanges and renames of one conversation from two instances at once: every one lands, none lost', async () => {
  const [a, b] = await two();
  try {
    await a.putConversation(record('conv_two'));
    await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).saveResponse(save('conv_two', `resp_${i}`))),
      b.updateConversation('conv_two', (r) => ({ ...r!, title: 'from b' })),
    ]);
    const file = await a.readHistory('conv_two');
    assert.equal(file.responses.length, 6);
    assert.equal(file.items.length, 12);
    assert.deepEqual(new Set(file.items.map((i) => i.id)).size, 12);
    const [row] = await a.sql`SELECT title, message_count FROM conversations WHERE id = 'conv_two'`;
    assert.deepEqual([row!.title, row!.message_count], ['from b', 12]);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('D-38: an instance restarted after a kill -9 hands start-up the responses the dead one left at once (its connection is gone), without waiting for their lease', async () => {
  const url = await freshDatabase();
  const dead = new PgStore({ url, max: 2 });
  await dead.open();
  await dead.responses.begin(start('resp_cut'), ev('response.created', 0));
  // As a kill -9 leaves it: the lease is still running, nothing ended the response.
  await Promise.all([dead.sql.end({ timeout: 0 }), dead.livenessSql.end({ timeout: 0 })]);
  const next = new PgStore({ url, max: 2 });
  await next.open();
  try {
    const taken = await next.responses.unfinished();
    assert.deepEqual(
      taken.map((t) => [t.start.id, t.events!.length]),
      [['resp_cut', 1]],
    );
    await next.responses.append('resp_cut', ev('response.failed', 1));
    assert.equal((await next.responses.trace('resp_cut'))!.ended, true);
  } finally {
    await next.close();
  }
});

test('D-11, D-12: a full list walk on one instance while another creates and deletes (its cursors too) sees every conversation that existed before it exactly once, in order, both ways', async () => {
  const [a, b] = await two();
  try {
    const existing: string[] = [];
    for (let i = 0; i < 120; i++) {
      const id = `conv_w${String(i).padStart(3, '0')}`;
      await a.putConversation(record(id, { seq: await a.nextSeq() }));
      existing.push(id);
    }
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing || i < 20; i++) {
        const id = `conv_n${String(i).padStart(3, '0')}`;
        await a.putConversation(record(id, { seq: await a.nextSeq() }));
        if (i % 3 === 0) await a.updateConversation(id, (r) => ({ ...r!, deleted_at: 7 }));
      }
    })();
    const deleted = new Set<string>();
    const walk = async (direction: 'up' | 'down') => {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = (await b.listConversations('app_demo', { direction, cursor, limit: 7 }))!;
        seen.push(...page.records.map((r) => r.id));
        if (!page.hasMore) return seen;
        cursor = page.records.at(-1)!.id;
        // The other instance deletes the page's last conversation: the cursor stays valid (D-11).
        if (cursor.startsWith('conv_w') && Number(cursor.slice(-3)) % 2 === 0) {
          await a.updateConversation(cursor, (r) => ({ ...r!, deleted_at: 8 }));
          deleted.add(cursor);
        }
      }
    };
    // One walk after the other: each deletes behind itself only.
    const up = await walk('up');
    const before = existing.filter((id) => !deleted.has(id));
    const down = await walk('down');
    writing = false;
    await writer;
    for (const [name, seen, expected] of [
      ['up', up, existing],
      ['down', down, [...before].reverse()],
    ] as const) {
      assert.equal(new Set(seen).size, seen.length, `${name}: nothing twice`);
      assert.deepEqual(
        seen.filter((id) => id.startsWith('conv_w')),
        expected,
        `${name}: every earlier conversation once, in order`,
      );
    }
    assert.ok(deleted.size > 5, 'cursors were deleted mid-walk');
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('D-24, D-27: two instances creating at once: a quota for exactly 10 creates admits 10 of 30, and the counters and stored bytes are exact on both', async () => {
  const [a, b] = await two();
  try {
    const each = 256 + Buffer.byteLength('{}');
    const quota = new StorageQuota(a, {
      apps: new Map([['app_demo', { plan: 'tiny' }]]),
      plans: new Map([['tiny', { storage_bytes: 10 * each }]]),
    } as never);
    const results = await Promise.allSettled(
      Array.from({ length: 30 }, async (_, i) => {
        const store = i % 2 ? a : b;
        const r = record(`conv_q${String(i).padStart(2, '0')}`, { seq: await store.nextSeq(), external_user_id: `u${i % 4}` });
        await store.putConversation(r, undefined, quota.admit('app_demo', each));
        return r;
      }),
    );
    const made = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as { code?: string }] : []));
    assert.equal(made.length, 10, 'exactly the quota');
    assert.ok(
      refused.every((e) => e.code === 'storage_quota_exceeded'),
      'the others get storage_quota_exceeded',
    );
    const users = new Set(made.map((r) => r.external_user_id)).size;
    for (const store of [a, b]) {
      assert.deepEqual(await store.appCounters('app_demo'), { conversations: 10, messages: 0, users });
      assert.equal(await store.storedBytes('app_demo'), 10 * each);
    }
    assert.deepEqual((await walkIds(b, 'app_demo', { limit: 3 })).sort(), made.map((r) => r.id).sort());
    // Exchanges and deletes from both at once: messages and bytes follow exactly.
    await Promise.all(made.map((r, i) => (i % 2 ? a : b).saveResponse(save(r.id, `resp_q${i}`))));
    await Promise.all(made.slice(0, 4).map((r, i) => (i % 2 ? b : a).updateConversation(r.id, (x) => ({ ...x!, deleted_at: 9 }))));
    const [{ sum }] = await a.sql<[{ sum: string }]>`
      SELECT sum(256 + octet_length(metadata) + history_bytes) AS sum FROM conversations WHERE app_id = 'app_demo' AND deleted_at IS NULL`;
    for (const store of [a, b]) {
      assert.deepEqual(await store.appCounters('app_demo'), { conversations: 10, messages: 20, users });
      assert.equal(await store.storedBytes('app_demo'), Number(sum), 'the stats row agrees with the rows');
    }
    // D-101: an app's counters are the sum of its slots' rows; a recount gathers them in one.
    const sums = () => a.sql`
      SELECT app_id, sum(conversations) AS c, sum(messages) AS m, sum(users) AS u, sum(bytes) AS b, sum(kept_bytes) AS k
      FROM app_stats GROUP BY app_id ORDER BY app_id`;
    const kept = await sums();
    await recountAppStats(a.sql);
    assert.deepEqual(await sums(), kept, 'a recount from the rows changes nothing');
    // A write that commits while a recount runs (its conversation and its slot in one transaction,
    // as the store writes) still counts: the recount adds what the rows missed, it overwrites nothing.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let writerPid = 0;
    const writing = b.sql.begin(async (tx) => {
      [{ pid: writerPid }] = await tx<[{ pid: number }]>`SELECT pg_backend_pid() AS pid`;
      await tx`INSERT INTO conversations (id, app_id, seq, created_at) VALUES ('conv_mid_recount', 'app_demo', 999, 1)`;
      await tx`UPDATE app_stats SET conversations = conversations + 1, bytes = bytes + 258 WHERE app_id = 'app_demo' AND slot = 0`;
      await held;
    });
    await until('the writer holds slot 0', async () => writerPid !== 0);
    const recounting = recountAppStats(a.sql);
    // The recount has taken its snapshot and waits for the writer's row of slot 0.
    await until(
      'the recount waits for the writer',
      async () => (await a.sql`SELECT 1 FROM pg_locks WHERE NOT granted AND ${writerPid} = ANY(pg_blocking_pids(pid))`).length > 0,
    );
    release();
    await writing;
    await recounting;
    const [{ n, bytes }] = await a.sql<[{ n: string; bytes: string }]>`
      SELECT count(*) AS n, sum(CASE WHEN deleted_at IS NULL THEN 256 + octet_length(metadata) + history_bytes ELSE 0 END) AS bytes
      FROM conversations WHERE app_id = 'app_demo'`;
    assert.equal(await a.storedBytes('app_demo'), Number(bytes), 'the stored bytes count the write that committed meanwhile');
    assert.equal((await a.appCounters('app_demo')).conversations, Number(n), 'and its conversation');
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test("D-38: while two instances run and sweep at once, a dead instance's response is saved interrupted by exactly one of them; a live one's is left alone", async () => {
  const [dead, b, c] = await several(3);
  const log = { warn() {}, error() {}, info() {} } as unknown as Logger;
  const usage = { record: async () => {} } as unknown as UsageLedger;
  const services = [b!, c!].map((store) => new ResponseService(store, {} as AgentRuntime, usage, log));
  try {
    await dead!.putConversation(record('conv_s1', { seq: 1 }));
    await dead!.putConversation(record('conv_s2', { seq: 2 }));
    await dead!.responses.begin(start('resp_orphan', 'conv_s1'), {
      event: 'response.created',
      data: { id: 'resp_orphan', object: 'response', status: 'in_progress' },
    });
    await dead!.responses.append('resp_orphan', {
      event: 'response.output_text.delta',
      data: { output_index: 0, content_index: 0, delta: 'half a rep' },
    });
    // A live instance's response, its lease running: never taken.
    await c!.responses.begin(start('resp_alive', 'conv_s2'), {
      event: 'response.created',
      data: { id: 'resp_alive', object: 'response', status: 'in_progress' },
    });
    const persisted = Promise.race(services.map((s) => once(s.events, 'persisted')));
    for (const s of services) s.sweep(10);
    // As a kill -9: its connections close, nothing more is written; its lease still runs.
    await Promise.all([dead!.sql.end({ timeout: 0 }), dead!.livenessSql.end({ timeout: 0 })]);
    const [saved] = (await persisted) as [{ id: string; status: string }];
    assert.deepEqual([saved.id, saved.status], ['resp_orphan', 'failed']);
    await Promise.all(services.map((s) => s.stopSweeping()));
    assert.deepEqual(await Promise.all(services.map((s) => s.recover())), [0, 0], 'nothing left to take');
    const file = await b!.readHistory('conv_s1');
    assert.deepEqual(
      file.responses.map((r) => [r.id, r.status, r.error?.code]),
      [['resp_orphan', 'failed', 'interrupted']],
      'saved once',
    );
    assert.equal((file.items.at(-1) as { content?: { text?: string }[] }).content?.[0]?.text, 'half a rep', 'with what it produced');
    const trace = (await c!.responses.trace('resp_orphan'))!;
    assert.equal(trace.ended, true);
    assert.deepEqual(
      trace.events!.map((e) => e.event),
      ['response.created', 'response.output_text.delta', 'response.failed'],
      'one terminal event',
    );
    assert.equal((await b!.responses.trace('resp_alive'))!.ended, false, "the live instance's response is left to it");
  } finally {
    await Promise.all(services.map((s) => s.stopSweeping()));
    await Promise.all([b!.close(), c!.close()]);
  }
});

test("D-104: an exchange saved onto the row its reply's start read is one statement, usage included; after another instance's rename, delete or save of the same response, it is written onto the row as it is then, or dropped, its usage kept once", async () => {
  const [a, b] = await two();
  try {
    await a.putConversation(record('conv_v1', { external_user_id: 'u' }));
    // Transactions a opens: the one-statement save opens none.
    let transactions = 0;
    const begin = a.sql.begin.bind(a.sql);
    a.sql.begin = ((...args: Parameters<typeof begin>) => {
      transactions++;
      return begin(...args);
    }) as typeof begin;
    const usage = (id: string) => ({ app_id: 'app_demo', kind: 'response' as const, id, at: 1, input_tokens: 1, output_tokens: 2 });
    const usageRows = async (id: string) => (await a.sql`SELECT 1 FROM usage_entries WHERE kind = 'response' AND id = ${id}`).length;
    const startOf = async () => {
      const s = await a.readForReply('conv_v1', 'app_demo');
      assert.equal(s.storedBytes, await a.storedBytes('app_demo'), "the app's stored bytes, read with it");
      return s;
    };
    const first = await startOf();
    assert.deepEqual([first.items, first.responses, first.bytes, first.base?.record.id], [[], [], 0, 'conv_v1']);
    const one = await a.saveResponse({ ...save('conv_v1', 'resp_v1'), base: first.base, usage: usage('resp_v1') });
    assert.deepEqual([one.message_count, transactions, await usageRows('resp_v1')], [2, 0, 1], 'one statement, no transaction');

    // A rename on b after the read: the save is written onto the renamed row (apply gets it), nothing lost.
    const second = await startOf();
    assert.equal(second.bytes, (await a.readHistory('conv_v1')).bytes);
    await b.updateConversation('conv_v1', (r) => ({ ...r!, title: 'from b' }));
    const two_ = await a.saveResponse({ ...save('conv_v1', 'resp_v2'), base: second.base, usage: usage('resp_v2') });
    assert.deepEqual([two_.title, two_.message_count, transactions, await usageRows('resp_v2')], ['from b', 4, 1, 1]);

    // D-38: b took the reply over and saved it (as `interrupted`) after a's read, or before it: a's save is dropped, its claim kept.
    for (const [n, readFirst] of [
      [3, true],
      [4, false],
    ] as const) {
      const id = `resp_v${n}`;
      const before = readFirst ? await startOf() : undefined;
      await b.saveResponse(save('conv_v1', id));
      const base = (before ?? (await startOf())).base;
      const dropped = await a.saveResponse({ ...save('conv_v1', id, { key: `k-${n}`, fingerprint: 'f' }), base, usage: usage(id) });
      assert.equal(dropped.message_count, 2 * n, `${id}: saved once`);
      assert.equal(await usageRows(id), 1, `${id}: its usage row kept`);
      assert.ok(
        (await a.idempotencyClaims(0)).some((c) => c.key === `k-${n}`),
        `${id}: its claim kept`,
      );
    }
    const file = await a.readHistory('conv_v1');
    assert.deepEqual(
      file.responses.map((r) => r.id),
      ['resp_v1', 'resp_v2', 'resp_v3', 'resp_v4'],
    );
    assert.deepEqual(
      file.items.map((i) => i.id),
      file.responses.flatMap((r) => [`msg_u${r.id}`, `msg_a${r.id}`]),
    );

    // Deleted on b after the read: the history stays as it was at the delete (D-73); the usage row is kept.
    const last = await startOf();
    await b.updateConversation('conv_v1', (r) => ({ ...r!, deleted_at: 9 }));
    const gone = await a.saveResponse({ ...save('conv_v1', 'resp_v5'), base: last.base, usage: usage('resp_v5') });
    assert.deepEqual([gone.deleted_at, gone.message_count, await usageRows('resp_v5')], [9, 8, 1]);
    assert.equal((await a.readHistory('conv_v1')).responses.length, 4);

    // Counters and stored bytes exact: what the rows hold.
    await a.putConversation(record('conv_v2', { seq: 2 }));
    const bases = await Promise.all(Array.from({ length: 6 }, () => a.readForReply('conv_v2', 'app_demo')));
    // Six saves from the same read, on both: the first lands in one statement, the others onto the row as it is then.
    await Promise.all(bases.map((s, i) => (i % 2 ? a : b).saveResponse({ ...save('conv_v2', `resp_w${i}`), base: s.base })));
    assert.equal((await a.readHistory('conv_v2')).responses.length, 6);
    const [{ sum, m }] = await a.sql<[{ sum: string; m: string }]>`
      SELECT sum(CASE WHEN deleted_at IS NULL THEN 256 + octet_length(metadata) + history_bytes ELSE 0 END) AS sum,
             sum(message_count) AS m FROM conversations WHERE app_id = 'app_demo'`;
    assert.equal(await b.storedBytes('app_demo'), Number(sum));
    assert.deepEqual(await b.appCounters('app_demo'), { conversations: 2, messages: Number(m), users: 1 });
    assert.equal(Number(m), 8 + 12);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
