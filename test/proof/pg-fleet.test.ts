// Several Parley processes on one PostgreSQL database (docs/deploy.md), proven on real
// processes (test/support/fleet.ts): exact rate limits across instances (D-23), one Idempotency-Key
// on two instances at once, a message waiting for a reply running on another instance (D-37), a list
// walk during another instance's writes (D-12), `kill -9` of one
// instance mid-write (nothing acknowledged lost, the others serve on, its reply saved `interrupted`,
// D-38), and SSE through the round-robin proxy as it is produced.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createParser } from 'eventsource-parser';
import postgres from 'postgres';
import { APP, FIXTURES_DIR, KEY, TARGET, tempDir } from '../support/helpers.ts';
import { startFleet, startProxy, type Fleet, type Instance, type ReverseProxy } from '../support/fleet.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { postSse } from '../support/sse-client.ts';

usePostgres();

const LIMITED = TARGET.apps.rate_limited!; // plan "limited": 5 a minute, 50 a day
const conv = `/apps/${APP}/conversations`;

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function call(base: string, method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(base + p, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** The database as it is, beside what the instances answer. */
async function query<T extends object>(url: string, fn: (sql: postgres.Sql) => Promise<T[]>): Promise<T[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return await fn(sql);
  } finally {
    await sql.end();
  }
}

describe('three instances on one database', () => {
  let url: string;
  let fleet: Fleet;
  let proxy: ReverseProxy;
  let a: Instance, b: Instance, c: Instance;
  before(async () => {
    url = await freshDatabase();
    fleet = await startFleet(3, { databaseUrl: url });
    [a, b, c] = fleet.instances as [Instance, Instance, Instance];
    proxy = await startProxy(fleet.instances.map((i) => i.origin));
  });
  after(async () => {
    await proxy?.close();
    await fleet?.close();
  });

  test('D-23: a 5-per-minute app admits exactly 5 of 30 concurrent counted requests spread over the three; 25 get 429 with Retry-After and the rate headers', {
    timeout: 120_000,
  }, async () => {
    const before = [...proxy.served.values()];
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => call(proxy.base, 'POST', `/apps/${LIMITED}/completions`, { prompt: `count me ${i}` })),
    );
    const spread = [...proxy.served.values()].map((n, i) => n - before[i]!);
    assert.deepEqual(spread, [10, 10, 10], 'the proxy spreads the 30 requests evenly');
    const ok = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status === 429);
    assert.equal(ok.length, 5, `admitted ${ok.length}: ${answers.map((r) => r.status).join(' ')}`);
    assert.equal(refused.length, 25);
    for (const r of answers) {
      assert.equal(r.headers.get('x-ratelimit-limit-requests'), '5');
      assert.match(r.headers.get('x-ratelimit-reset-requests') ?? '', /^\d+(\.\d+)?s$/); // e.g. 12.5s (src/contract/openapi-errors.ts)
    }
    // Counted in one place: each admitted request saw a different count.
    assert.deepEqual(ok.map((r) => r.headers.get('x-ratelimit-remaining-requests')).sort(), ['0', '1', '2', '3', '4']);
    for (const r of refused) {
      assert.equal(r.body.error.type, 'rate_limit_exceeded');
      const after = Number(r.headers.get('retry-after'));
      assert.ok(Number.isInteger(after) && after >= 1 && after <= 60, `Retry-After ${r.headers.get('retry-after')}`);
      assert.equal(r.headers.get('x-ratelimit-remaining-requests'), '0');
    }
    // A refused request changes nothing: five completions were billed, on whichever instance.
    const [used] = await query(url, (sql) => sql<{ n: number }[]>`SELECT count(*)::int AS n FROM usage_entries WHERE app_id = ${LIMITED}`);
    assert.equal(used!.n, 5);
    // And every instance now refuses at once.
    for (const i of fleet.instances)
      assert.equal((await call(i.base, 'POST', `/apps/${LIMITED}/completions`, { prompt: 'one more' })).status, 429);
  });

  test('one Idempotency-Key sent to two instances at once creates once (both answers agree, or one is 409 idempotency_key_in_use)', {
    timeout: 120_000,
  }, async () => {
    const keys = Array.from({ length: 12 }, (_, i) => `fleet-create-${i}-${Date.now()}`);
    for (const key of keys) {
      const body = { title: key };
      const both = await Promise.all([a, b].map((i) => call(i.base, 'POST', conv, body, { 'idempotency-key': `"${key}"` })));
      const created = both.filter((r) => r.status === 200);
      assert.ok(created.length >= 1, `${key}: ${JSON.stringify(both.map((r) => [r.status, r.body]))}`);
      if (created.length === 2) assert.equal(created[0]!.body.id, created[1]!.body.id, `${key}: two conversations`);
      else {
        const other = both.find((r) => r.status !== 200)!;
        assert.deepEqual([other.status, other.body.error.code], [409, 'idempotency_key_in_use']);
      }
      // A later retry on the third instance replays the same conversation.
      const again = await call(c.base, 'POST', conv, body, { 'idempotency-key': `"${key}"` });
      assert.deepEqual([again.status, again.body.id, again.headers.get('idempotent-replayed')], [200, created[0]!.body.id, 'true']);
    }
    const rows = await query(
      url,
      (sql) =>
        sql<{ title: string; n: number }[]>`SELECT title, count(*)::int AS n FROM conversations WHERE title = ANY(${keys}) GROUP BY title`,
    );
    assert.deepEqual(rows.map((r) => [r.title, r.n]).sort(), keys.map((k) => [k, 1]).sort());

    // A message sent with one key on two instances at once is one exchange (D-30: the second joins it).
    const target = (await call(c.base, 'POST', conv, { title: 'idempotent send' })).body.id as string;
    const key = `fleet-send-${Date.now()}`;
    const body = { message: { content: 'only once' }, stream: false };
    const both = await Promise.all([a, b].map((i) => call(i.base, 'POST', `${conv}/${target}`, body, { 'idempotency-key': `"${key}"` })));
    const answered = both.filter((r) => r.status === 200);
    assert.ok(answered.length >= 1, JSON.stringify(both.map((r) => [r.status, r.body])));
    if (answered.length === 2) assert.equal(answered[0]!.body.id, answered[1]!.body.id);
    else
      assert.deepEqual(
        [both.find((r) => r.status !== 200)!.status, both.find((r) => r.status !== 200)!.body.error.code],
        [409, 'idempotency_key_in_use'],
      );
    const items = (await call(c.base, 'GET', `${conv}/${target}`)).body.items as { role?: string }[];
    assert.equal(items.filter((i) => i.role === 'user').length, 1, 'the message ran twice');
  });

  test('D-37 across instances: a message sent on one instance while a reply of its conversation runs on another waits for it, then gets its own', {
    timeout: 120_000,
  }, async () => {
    const slow = '/apps/app_slow/conversations';
    const id = (await call(c.base, 'POST', slow, {})).body.id as string;
    let second: Promise<Answer> | undefined;
    const first = await postSse(
      a.base,
      `${slow}/${id}`,
      { message: { content: 'First question: how do I reset my password?' }, stream: true },
      {
        onEvent: (e) => {
          // The first reply has begun (D-35: in the store) on a: the second is sent to b now.
          if (e.event === 'response.created')
            second = call(b.base, 'POST', `${slow}/${id}`, {
              message: { content: 'Second question: how do I change my email?' },
              stream: false,
            });
        },
      },
    );
    assert.equal(first.events.at(-1)!.event, 'response.completed');
    const firstId = first.events[0]!.data.id as string;
    const r = await second!;
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.status, 'completed');
    // Each exchange whole, the second after the first: it saw the first reply.
    const items = (await call(c.base, 'GET', `${slow}/${id}`)).body.items as { response_id: string }[];
    const runs = items.map((i) => i.response_id).filter((rid, i, all) => i === 0 || rid !== all[i - 1]);
    assert.deepEqual(runs, [firstId, r.body.id]);
  });

  test('D-12: full list walks (both orders) on one instance while another creates and deletes see every conversation that stayed exactly once', {
    timeout: 180_000,
  }, async () => {
    const app = TARGET.apps.knowledge_base!; // an app of its own: no other test lists it
    const list = `/apps/${app}/conversations`;
    const existing: string[] = [];
    for (let i = 0; i < 90; i++) existing.push((await call(c.base, 'POST', list, { title: `pre ${i}` })).body.id);
    // Every third may be deleted by the writer during the walks; the others must each be seen once.
    const doomed = existing.filter((_, i) => i % 3 === 1);
    const deleted = new Set<string>();
    let walking = true;
    let created = 0;
    const writer = (async () => {
      let d = 0;
      while (walking) {
        const r = await call(b.base, 'POST', list, { title: `during ${created}` });
        assert.equal(r.status, 200);
        created++;
        if (d < doomed.length) {
          const id = doomed[d++]!;
          assert.equal((await call(b.base, 'DELETE', `${list}/${id}`)).status, 200);
          deleted.add(id);
        }
      }
    })();
    const walk = async (order: 'asc' | 'desc') => {
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const r = await call(a.base, 'GET', `${list}?limit=7&order=${order}${after ? `&after=${after}` : ''}`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        seen.push(...r.body.data.map((x: { id: string }) => x.id));
        if (!r.body.has_more) return seen;
        after = r.body.last_id;
      }
    };
    let walks: string[][];
    try {
      walks = await Promise.all([walk('asc'), walk('desc')]);
    } finally {
      walking = false;
      await writer;
    }
    assert.ok(created > 0 && deleted.size > 0, 'the writer wrote during the walks');
    for (const seen of walks) {
      assert.equal(new Set(seen).size, seen.length, 'a conversation was seen twice');
      const once = new Set(seen);
      const missing = existing.filter((id) => !deleted.has(id) && !once.has(id));
      assert.deepEqual(missing, [], 'conversations that existed throughout were skipped');
    }
  });

  test('SSE through the proxy arrives as it is produced: two deltas in, a cancel on another instance ends the stream cancelled', {
    timeout: 120_000,
  }, async () => {
    const slow = `/apps/app_slow/conversations`;
    const id = (await call(proxy.base, 'POST', slow, {})).body.id as string;
    let responseId = '';
    let deltas = 0;
    let cancel: Promise<Answer> | undefined;
    const r = await postSse(
      proxy.base,
      `${slow}/${id}`,
      { message: { content: 'Tell me a long story about the sea' } },
      {
        onEvent: (e) => {
          if (e.event === 'response.created') responseId = e.data.id;
          // Had the proxy held the stream back, the deltas would come only with the end: no cancel would stop it.
          if (e.event === 'response.output_text.delta' && ++deltas === 2)
            cancel = call(c.base, 'POST', `/apps/app_slow/responses/${responseId}/cancel`);
        },
      },
    );
    assert.ok(cancel, 'two deltas came through');
    assert.equal((await cancel).status, 200);
    const last = r.events.at(-1)!;
    assert.deepEqual([last.event, last.data.error?.code], ['response.failed', 'cancelled']);
  });
});

describe('kill -9 of one instance of three mid-write', () => {
  let url: string;
  let fleet: Fleet;
  before(async () => {
    url = await freshDatabase();
    // A second per chunk (app_slow: 150 ms): the reply still runs when its instance is killed.
    const fixturesDir = await tempDir();
    await fs.cp(FIXTURES_DIR, fixturesDir, { recursive: true });
    const file = path.join(fixturesDir, 'fixtures.json');
    const fixtures = JSON.parse(await fs.readFile(file, 'utf8'));
    fixtures.apps.find((a: { id: string }) => a.id === 'app_slow').agent.testing.latency_ms = 1000;
    await fs.writeFile(file, JSON.stringify(fixtures));
    fleet = await startFleet(3, { databaseUrl: url, fixturesDir });
  });
  after(() => fleet?.close());

  test('loses nothing it acknowledged, the others keep serving, and its reply in progress is saved interrupted by a survivor', {
    timeout: 240_000,
  }, async () => {
    const [victim, ...survivors] = fleet.instances as [Instance, Instance, Instance];
    // A reply streaming on the victim when it dies (D-38).
    const slowConv = (await call(victim.base, 'POST', '/apps/app_slow/conversations', {})).body.id as string;
    const stream = await fetch(`${victim.base}/apps/app_slow/conversations/${slowConv}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: { content: 'Tell me a long story about the sea' } }),
    });
    const responseId = stream.headers.get('parley-response-id')!;
    const reader = stream.body!.getReader();
    let streamed = '';
    while ((streamed.match(/output_text\.delta/g) ?? []).length < 2) streamed += new TextDecoder().decode((await reader.read()).value);

    /** Acknowledged writes: conversation id → its title and the messages answered, and who answered. */
    const acked = new Map<string, { title: string; messages: string[] }>();
    const ackedBy = new Map<Instance, number>();
    const ack = (i: Instance) => ackedBy.set(i, (ackedBy.get(i) ?? 0) + 1);
    let killed = false;
    let failed = false;
    let afterKill = 0;
    let n = 0;
    const kill = async () => {
      if (killed) return;
      killed = true;
      await victim.kill();
      await reader.cancel().catch(() => {});
    };
    // Each worker creates on one instance and sends on the next, round the fleet, skipping the dead one.
    const worker = async (w: number) => {
      let turn = w;
      while (!failed && (!killed || afterKill < 30)) {
        const live = fleet.instances.filter((i) => !(killed && i === victim));
        const on = live[turn++ % live.length]!;
        const then = live[turn % live.length]!;
        const title = `w${w}-${n++}`;
        try {
          const created = await call(on.base, 'POST', conv, { title });
          if (created.status !== 200) throw new Error(`create on a live instance: ${created.status} ${JSON.stringify(created.body)}`);
          acked.set(created.body.id, { title, messages: [] });
          ack(on);
          const text = `hello ${title}`;
          const sent = await call(then.base, 'POST', `${conv}/${created.body.id}`, { message: { content: text }, stream: false });
          if (sent.status !== 200) throw new Error(`send on a live instance: ${sent.status} ${JSON.stringify(sent.body)}`);
          acked.get(created.body.id)!.messages.push(text);
          ack(then);
          if (killed) afterKill += 2;
          if ((ackedBy.get(victim) ?? 0) >= 20) await kill();
        } catch (err) {
          // Only the victim's requests may fail, and only around its death.
          if (!(killed || victim.dead) || (on !== victim && then !== victim)) {
            failed = true; // the other workers stop too
            throw err;
          }
        }
      }
    };
    try {
      await Promise.all([0, 1, 2, 3, 4, 5].map(worker));
    } finally {
      await kill();
    }
    assert.ok((ackedBy.get(victim) ?? 0) >= 20);
    for (const s of survivors) assert.ok((ackedBy.get(s) ?? 0) > 0);

    // Everything acknowledged, by any instance, is there on every survivor.
    for (const s of survivors) {
      for (const [id, want] of acked) {
        const r = await call(s.base, 'GET', `${conv}/${id}`);
        assert.equal(r.status, 200, `${id} was acknowledged, then lost`);
        assert.equal(r.body.title, want.title);
        const users = r.body.items
          .filter((i: { role?: string }) => i.role === 'user')
          .map((i: { content: { text: string }[] }) => i.content[0]!.text);
        for (const m of want.messages) assert.ok(users.includes(m), `${id}: the acknowledged message "${m}" was lost`);
      }
    }

    // Behind a balancer that still lists the dead instance: its refused connections go to the others.
    const proxy = await startProxy(fleet.instances.map((i) => i.origin));
    try {
      const through = await Promise.all(Array.from({ length: 9 }, (_, i) => call(proxy.base, 'POST', conv, { title: `after ${i}` })));
      assert.deepEqual(
        through.map((r) => r.status),
        Array(9).fill(200),
      );
      assert.ok(proxy.served.get(victim.origin)! <= 1, 'the dead instance was dropped from the rotation after its first refusal');
    } finally {
      await proxy.close();
    }

    // D-38: the dead instance's reply is saved `interrupted` by a survivor once its lease expires; a
    // resume on a survivor follows it to that end (told by the store, no polling here).
    const events = await fetch(`${survivors[0]!.base}/apps/app_slow/responses/${responseId}/events`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    assert.equal(events.status, 200);
    const seen: { event?: string; data: string }[] = [];
    const parser = createParser({ onEvent: (e) => seen.push(e) });
    parser.feed(await events.text());
    const last = seen.at(-1)!;
    assert.deepEqual([last.event, JSON.parse(last.data).error?.code], ['response.failed', 'interrupted']);
    const r = await call(survivors[1]!.base, 'GET', `/apps/app_slow/responses/${responseId}`);
    assert.deepEqual([r.body.status, r.body.error?.code], ['failed', 'interrupted']);
    assert.ok(r.body.output[0].content[0].text.length > 0, 'the output it had streamed is kept');
  });
});
