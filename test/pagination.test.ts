// List pagination (§4.2, D-11, D-12): walks in both orders while the list changes under them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { APP, startTestServer, type TestServer } from './support/helpers.ts';
import { ExactConversationList } from './support/shapes.ts';

const conv = `/apps/${APP}/conversations`;

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

async function list(server: TestServer, q: string) {
  const r = await server.call('GET', `${conv}?${q}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return ExactConversationList.parse(r.body);
}

async function create(server: TestServer, body: object = {}): Promise<string> {
  const r = await server.call('POST', conv, body);
  assert.equal(r.status, 200);
  return r.body.id;
}

/** A fresh server with `n` conversations, ids in creation order. */
async function seeded(n: number): Promise<{ server: TestServer; ids: string[] }> {
  const server = await startTestServer();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await create(server));
  return { server, ids };
}

describe('pages', () => {
  test('an empty list: no data, null ids, no more', async () => {
    const fresh = await startTestServer();
    try {
      for (const order of ['asc', 'desc']) {
        assert.deepEqual(await list(fresh, `order=${order}`), { object: 'list', data: [], first_id: null, last_id: null, has_more: false });
      }
    } finally {
      await fresh.close();
    }
  });

  test('default order is desc (newest first); first_id/last_id are the ends of the page', async () => {
    const { server, ids } = await seeded(5);
    try {
      const page = await list(server, 'limit=2');
      assert.deepEqual(
        page.data.map((c) => c.id),
        [ids[4], ids[3]],
      );
      assert.equal(page.first_id, ids[4]);
      assert.equal(page.last_id, ids[3]);
      assert.equal(page.has_more, true);
      const all = await list(server, 'limit=5&order=asc');
      assert.deepEqual(
        all.data.map((c) => c.id),
        ids,
      );
      assert.equal(all.has_more, false, 'a page that ends exactly at the end has no more');
    } finally {
      await server.close();
    }
  });

  test('creation order is total within one second (D-7)', async () => {
    const { server, ids } = await seeded(30);
    try {
      const asc = await list(server, 'limit=100&order=asc');
      assert.deepEqual(
        asc.data.map((c) => c.id),
        ids,
      );
    } finally {
      await server.close();
    }
  });
});

describe('walks by last_id (D-12)', () => {
  for (const order of ['asc', 'desc'] as const) {
    test(`${order}: each conversation exactly once, with creations and deletions between pages`, async () => {
      const { server, ids } = await seeded(12);
      try {
        const deleted = new Set<string>();
        const created: string[] = [];
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        for (;;) {
          const page = await list(server, `limit=3&order=${order}${cursor ? `&after=${cursor}` : ''}`);
          seen.push(...page.data.map((c) => c.id));
          for (const c of page.data) assert.ok(!deleted.has(c.id), 'a deleted conversation is never listed');
          if (!page.has_more) break;
          cursor = page.last_id!;
          pages++;
          // Between pages: delete the cursor itself (still a valid cursor, D-11), delete one not yet
          // seen, and create a new one (at the newest end).
          await server.call('DELETE', `${conv}/${cursor}`);
          deleted.add(cursor);
          const ahead = ids.find((id) => !seen.includes(id) && !deleted.has(id));
          if (ahead && pages === 1) {
            await server.call('DELETE', `${conv}/${ahead}`);
            deleted.add(ahead);
          }
          created.push(await create(server));
        }
        assert.equal(new Set(seen).size, seen.length, 'no conversation twice');
        const expectedOld = ids.filter((id) => !deleted.has(id) || seen.includes(id));
        if (order === 'asc') {
          // Walking towards the newest end meets the ones created meanwhile.
          assert.deepEqual(seen, [...expectedOld, ...created.filter((id) => seen.includes(id))]);
          assert.ok(
            created.every((id) => seen.includes(id)),
            'an asc walk reaches what was created during it',
          );
        } else {
          // Walking towards the oldest end: what was created meanwhile is behind the walk.
          assert.deepEqual(seen, [...expectedOld].reverse());
        }
      } finally {
        await server.close();
      }
    });
  }
});

describe('before (D-12)', () => {
  test('asc: the page that precedes the cursor, in ascending order', async () => {
    const { server, ids } = await seeded(8);
    try {
      const page = await list(server, `order=asc&limit=3&before=${ids[5]}`);
      assert.deepEqual(
        page.data.map((c) => c.id),
        [ids[2], ids[3], ids[4]],
      );
      assert.equal(page.has_more, true);
      const start = await list(server, `order=asc&limit=3&before=${ids[2]}`);
      assert.deepEqual(
        start.data.map((c) => c.id),
        [ids[0], ids[1]],
      );
      assert.equal(start.has_more, false);
    } finally {
      await server.close();
    }
  });

  test('desc: the page that precedes the cursor (newer ones), in descending order', async () => {
    const { server, ids } = await seeded(8);
    try {
      const page = await list(server, `limit=3&before=${ids[2]}`);
      assert.deepEqual(
        page.data.map((c) => c.id),
        [ids[5], ids[4], ids[3]],
      );
      assert.equal(page.has_more, true);
      const top = await list(server, `limit=3&before=${ids[5]}`);
      assert.deepEqual(
        top.data.map((c) => c.id),
        [ids[7], ids[6]],
      );
      assert.equal(top.has_more, false);
    } finally {
      await server.close();
    }
  });

  test('walking back with first_id as before visits every conversation once', async () => {
    const { server, ids } = await seeded(7);
    try {
      for (const order of ['asc', 'desc'] as const) {
        // Start from the far end: a walk "after" to the end, then back "before" first_id.
        let page = await list(server, `order=${order}&limit=3&after=${order === 'asc' ? ids[4] : ids[2]}`);
        const seen = page.data.map((c) => c.id);
        while (page.first_id) {
          page = await list(server, `order=${order}&limit=3&before=${page.first_id}`);
          seen.unshift(...page.data.map((c) => c.id));
          if (!page.has_more) break;
        }
        assert.deepEqual(seen, order === 'asc' ? ids : [...ids].reverse());
      }
    } finally {
      await server.close();
    }
  });
});

describe('filters and deleted cursors (D-10, D-11)', () => {
  test('external_user_id filters the list and pages within it', async () => {
    const a1 = await create(s, { external_user_id: 'alice' });
    await create(s, { external_user_id: 'bob' });
    const a2 = await create(s, { external_user_id: 'alice' });
    await create(s);
    const a3 = await create(s, { external_user_id: 'alice' });
    const first = await list(s, 'external_user_id=alice&limit=2&order=asc');
    assert.deepEqual(
      first.data.map((c) => c.id),
      [a1, a2],
    );
    assert.ok(first.data.every((c) => c.external_user_id === 'alice'));
    const next = await list(s, `external_user_id=alice&limit=2&order=asc&after=${first.last_id}`);
    assert.deepEqual(
      next.data.map((c) => c.id),
      [a3],
    );
    assert.equal(next.has_more, false);
    assert.deepEqual((await list(s, 'external_user_id=nobody')).data, []);
  });

  test('a deleted conversation is not listed, and its id stays a valid cursor', async () => {
    const { server, ids } = await seeded(5);
    try {
      await server.call('DELETE', `${conv}/${ids[2]}`);
      assert.deepEqual(
        (await list(server, 'order=asc')).data.map((c) => c.id),
        [ids[0], ids[1], ids[3], ids[4]],
      );
      assert.deepEqual(
        (await list(server, `order=asc&after=${ids[2]}`)).data.map((c) => c.id),
        [ids[3], ids[4]],
      );
      assert.deepEqual(
        (await list(server, `order=asc&before=${ids[2]}`)).data.map((c) => c.id),
        [ids[0], ids[1]],
      );
      assert.deepEqual(
        (await list(server, `after=${ids[2]}`)).data.map((c) => c.id),
        [ids[1], ids[0]],
      );
    } finally {
      await server.close();
    }
  });

  test('a page of only deleted conversations beyond the cursor has no more', async () => {
    const { server, ids } = await seeded(4);
    try {
      await server.call('DELETE', `${conv}/${ids[3]}`);
      const page = await list(server, `order=asc&limit=2&after=${ids[0]}`);
      assert.deepEqual(
        page.data.map((c) => c.id),
        [ids[1], ids[2]],
      );
      assert.equal(page.has_more, false);
    } finally {
      await server.close();
    }
  });
});
