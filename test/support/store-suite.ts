// The behaviours every Store keeps (src/store/types.ts), whatever lays out the data: one suite, run
// against each store by test/store-contract.test.ts (the file store, and PostgreSQL). Each store's own
// tests (journal lines, corrupt files, migrations) stay beside it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { UnsequencedEvent } from '../../src/contract/index.ts';
import type { AdminPageQuery, ConversationRecord, LiveResponseStart, Store } from '../../src/store/types.ts';
import { walkIds } from './list-walk.ts';
import { record, save } from './records.ts';

export interface StoreHarness {
  /** A store over new, empty data (not yet opened). */
  fresh(): Promise<StoreUnderTest>;
}

export interface StoreUnderTest {
  store: Store;
  /** A new store over the same data (the old one closed first). */
  reopen(): Store;
}

/** Opens a fresh store, runs `fn`, and closes whatever store is open at the end (the outbox suite's too). */
export async function withStore(h: StoreHarness, fn: (s: { store: Store; restart(): Promise<Store> }) => Promise<void>): Promise<void> {
  const t = await h.fresh();
  let store = t.store;
  await store.open();
  try {
    await fn({
      get store() {
        return store;
      },
      async restart() {
        await store.close();
        store = t.reopen();
        await store.open();
        return store;
      },
    });
  } finally {
    await store.close();
  }
}

export function storeSuite(name: string, h: StoreHarness): void {
  describe(`Store contract: ${name}`, () => {
    test('D-7: conversations in creation order by seq, ties in one second kept; per user; a restart keeps every field', async () => {
      await withStore(h, async (s) => {
        const meta = { b: 1, a: { z: [1, 'x'] } };
        // Put out of order: the lists are by seq, not by arrival.
        await s.store.putConversation(record('conv_c3', { seq: (await s.store.nextSeq()) + 2, external_user_id: 'u1' }));
        await s.store.putConversation(record('conv_a1', { seq: 1, title: 'first', metadata: meta, generated_title: { en: 'Hi' } }));
        await s.store.putConversation(record('conv_b2', { seq: 2, external_user_id: 'u1' }));
        await s.store.putConversation(record('conv_x9', { seq: 4, app_id: 'app_other' }));
        const ids = (st: Store) => walkIds(st, 'app_demo', { limit: 2 });
        assert.deepEqual(await ids(s.store), ['conv_a1', 'conv_b2', 'conv_c3']);
        assert.deepEqual(await walkIds(s.store, 'app_demo', { externalUserId: 'u1' }), ['conv_b2', 'conv_c3']);
        assert.deepEqual(await walkIds(s.store, 'app_demo', { externalUserId: 'u1', direction: 'down', limit: 1 }), ['conv_c3', 'conv_b2']);
        assert.deepEqual(await walkIds(s.store, 'app_none'), []);
        assert.equal(
          await s.store.listConversations('app_other', { direction: 'up', cursor: 'conv_a1', limit: 5 }),
          undefined,
          "another app's conversation is no cursor",
        );
        assert.deepEqual(await s.store.appCounters('app_demo'), { conversations: 3, messages: 0, users: 1 });
        const before = await s.store.getConversation('conv_a1');
        const st = await s.restart();
        assert.deepEqual(await ids(st), ['conv_a1', 'conv_b2', 'conv_c3']);
        const after = (await st.getConversation('conv_a1'))!;
        assert.deepEqual(JSON.parse(JSON.stringify(after)), JSON.parse(JSON.stringify(before)));
        // Metadata comes back as it was sent, keys in their order.
        assert.equal(JSON.stringify(after.metadata), JSON.stringify(meta));
        assert.ok((await st.nextSeq()) > 3, 'D-7: a seq is never reused across restarts');
        assert.equal(await st.getConversation('conv_nope'), undefined);
      });
    });

    test('D-164: a record created without a seq gets the next one in its create (D-7: after every seq given or taken, never reused), its claim kept with it', async () => {
      await withStore(h, async (s) => {
        // An import's seq moves the sequence past it; a create without one comes after it.
        await s.store.putConversation(record('conv_s1', { seq: 40 }));
        const { seq: _, ...fresh } = record('conv_s2', { title: 'second' });
        const made = await s.store.putConversation({ ...fresh, seq: undefined }, { key: 'k-s2', fingerprint: 'f-s2' });
        assert.ok(made.seq > 40, `the store's seq ${made.seq} comes after the given 40`);
        assert.deepEqual({ ...made, seq: 0 }, record('conv_s2', { title: 'second', seq: 0 }));
        assert.deepEqual(JSON.parse(JSON.stringify(await s.store.getConversation('conv_s2'))), made);
        assert.ok((await s.store.idempotencyClaims(0)).some((c) => c.key === 'k-s2' && c.fingerprint === 'f-s2'));
        const { seq: __, ...third } = record('conv_s3');
        const next = await s.store.putConversation(third);
        assert.ok(next.seq > made.seq, 'in creation order');
        assert.ok((await s.store.nextSeq()) > next.seq, 'never reused');
        const page = await s.store.listConversations('app_demo', { direction: 'up', limit: 10 });
        assert.deepEqual(
          page?.records.map((r) => r.id),
          ['conv_s1', 'conv_s2', 'conv_s3'],
        );
      });
    });

    test('D-12: pages both ways from any cursor, deleted ones skipped and still valid cursors, has_more exact; per user', async () => {
      await withStore(h, async (s) => {
        const all: string[] = [];
        for (let i = 1; i <= 23; i++) {
          const id = `conv_p${String(i).padStart(2, '0')}`;
          all.push(id);
          await s.store.putConversation(record(id, { seq: await s.store.nextSeq(), external_user_id: i % 3 === 0 ? 'u3' : null }));
        }
        const gone = new Set(['conv_p01', 'conv_p02', 'conv_p07', 'conv_p12', 'conv_p13', 'conv_p14', 'conv_p23']);
        for (const id of gone) await s.store.updateConversation(id, (r) => ({ ...r!, deleted_at: 9 }));
        const live = all.filter((id) => !gone.has(id));
        for (const limit of [1, 2, 5, 16, 100]) {
          assert.deepEqual(await walkIds(s.store, 'app_demo', { limit }), live, `up by ${limit}`);
          assert.deepEqual(await walkIds(s.store, 'app_demo', { limit, direction: 'down' }), [...live].reverse(), `down by ${limit}`);
        }
        // From every cursor, live or deleted: the page is the next live ones in that direction.
        for (const [i, cursor] of all.entries()) {
          for (const direction of ['up', 'down'] as const) {
            const rest = direction === 'up' ? all.slice(i + 1) : all.slice(0, i).reverse();
            const expected = rest.filter((id) => !gone.has(id));
            const page = (await s.store.listConversations('app_demo', { direction, cursor, limit: 3 }))!;
            assert.deepEqual(
              page.records.map((r) => r.id),
              expected.slice(0, 3),
              `${direction} from ${cursor}`,
            );
            assert.equal(page.hasMore, expected.length > 3, `has_more ${direction} from ${cursor}`);
          }
        }
        assert.equal(await s.store.listConversations('app_demo', { direction: 'up', cursor: 'conv_nope', limit: 3 }), undefined);
        const u3 = live.filter((id) => Number(id.slice(-2)) % 3 === 0);
        assert.deepEqual(await walkIds(s.store, 'app_demo', { externalUserId: 'u3', limit: 2 }), u3);
        assert.deepEqual(await walkIds(s.store, 'app_demo', { externalUserId: 'u3', limit: 2, direction: 'down' }), [...u3].reverse());
        // D-24: soft-deleted conversations still count.
        assert.deepEqual(await s.store.appCounters('app_demo'), { conversations: 23, messages: 0, users: 1 });
      });
    });

    test('D-27: a create checks the quota with the bytes stored when it is made, and a refused one changes nothing', async () => {
      await withStore(h, async (s) => {
        await s.store.putConversation(record('conv_q1', { metadata: { a: 1 } }));
        const stored = await s.store.storedBytes('app_demo');
        assert.ok(stored > 0);
        let seen = -1;
        await s.store.putConversation(record('conv_q2', { seq: 2 }), undefined, (bytes) => void (seen = bytes));
        assert.equal(seen, stored);
        const refuse = () => {
          throw new Error('over quota');
        };
        await assert.rejects(
          s.store.putConversation(record('conv_q3', { seq: 3, external_user_id: 'u' }), { key: 'k-q3', fingerprint: 'f' }, refuse),
          /over quota/,
        );
        assert.equal(await s.store.getConversation('conv_q3'), undefined);
        assert.deepEqual(await s.store.appCounters('app_demo'), { conversations: 2, messages: 0, users: 0 });
        assert.deepEqual(await s.store.idempotencyClaims(0), [], 'nor its claim');
      });
    });

    test('200 concurrent creates give 200 distinct conversations, also after a restart', async () => {
      await withStore(h, async (s) => {
        await Promise.all(
          Array.from({ length: 200 }, async (_, i) =>
            s.store.putConversation(record(`conv_m${String(i).padStart(3, '0')}`, { seq: await s.store.nextSeq() })),
          ),
        );
        assert.equal(new Set(await walkIds(s.store, 'app_demo', { limit: 50 })).size, 200);
        const st = await s.restart();
        assert.equal(new Set(await walkIds(st, 'app_demo', { limit: 50 })).size, 200);
        assert.equal((await st.appCounters('app_demo')).conversations, 200);
      });
    });

    test('exchanges: items in order, the response kept, counters and bytes follow; an earlier-stamped exchange takes the last time (§4.3)', async () => {
      await withStore(h, async (s) => {
        await s.store.putConversation(record('conv_h1', { external_user_id: 'u' }));
        const bytes0 = await s.store.storedBytes('app_demo');
        await s.store.saveResponse(save('conv_h1', 'resp_1', undefined, 50));
        await s.store.saveResponse(save('conv_h1', 'resp_2', undefined, 40));
        const file = await s.store.readHistory('conv_h1');
        assert.deepEqual(
          file.items.map((i) => i.id),
          ['msg_uresp_1', 'msg_aresp_1', 'msg_uresp_2', 'msg_aresp_2'],
        );
        assert.deepEqual(
          file.items.map((i) => i.created_at),
          [50, 50, 50, 50],
        );
        assert.deepEqual(
          file.responses.map((r) => [r.id, r.status]),
          [
            ['resp_1', 'completed'],
            ['resp_2', 'completed'],
          ],
        );
        assert.ok(file.bytes > 0);
        assert.ok((await s.store.storedBytes('app_demo')) >= bytes0 + file.bytes, 'D-27: the history counts in the quota');
        assert.deepEqual(await s.store.appCounters('app_demo'), { conversations: 1, messages: 4, users: 1 });
        const st = await s.restart();
        assert.deepEqual(
          (await st.readHistory('conv_h1')).items.map((i) => i.id),
          file.items.map((i) => i.id),
        );
        assert.equal((await st.readHistory('conv_h1')).bytes, file.bytes);
        assert.equal((await st.getConversation('conv_h1'))!.message_count, 4);
      });
    });

    test('D-11, D-27, D-73: soft delete keeps the record in its place in the list and its history (out of the quota bytes)', async () => {
      await withStore(h, async (s) => {
        for (const [i, id] of ['conv_d1', 'conv_d2', 'conv_d3'].entries()) await s.store.putConversation(record(id, { seq: i + 1 }));
        await s.store.saveResponse(save('conv_d2', 'resp_d'));
        const live = await s.store.storedBytes('app_demo');
        const r = await s.store.updateConversation('conv_d2', (x) => ({ ...x!, deleted_at: 1_700_000_100 }));
        assert.equal(r.deleted_at, 1_700_000_100);
        assert.ok((await s.store.storedBytes('app_demo')) < live);
        assert.deepEqual(await walkIds(s.store, 'app_demo'), ['conv_d1', 'conv_d3'], 'lists skip it');
        // D-11: its id stays a valid cursor, in its place, both ways.
        const from = async (direction: 'up' | 'down') =>
          (await s.store.listConversations('app_demo', { direction, cursor: 'conv_d2', limit: 5 }))?.records.map((x) => x.id);
        assert.deepEqual([await from('up'), await from('down')], [['conv_d3'], ['conv_d1']]);
        // D-73 (revising D-27): the history is kept for the team, outside the quota, until purged.
        assert.deepEqual(
          (await s.store.readHistory('conv_d2')).responses.map((x) => x.id),
          ['resp_d'],
        );
        assert.ok((await s.store.admin.keptBytes('app_demo')) > 0);
        assert.equal((await s.store.admin.get('conv_d2'))!.purgedAt, null);
        // An exchange that ends after the delete does not add to the history kept.
        const after = await s.store.saveResponse(save('conv_d2', 'resp_late'));
        assert.equal(after.deleted_at, 1_700_000_100);
        assert.deepEqual(
          (await s.store.readHistory('conv_d2')).responses.map((x) => x.id),
          ['resp_d'],
        );
        const st = await s.restart();
        assert.equal((await st.getConversation('conv_d2'))!.deleted_at, 1_700_000_100);
        assert.equal(await st.storedBytes('app_demo'), await s.store.storedBytes('app_demo'));
        assert.equal((await st.readHistory('conv_d2')).items.length, 2, 'kept across a restart');
      });
    });

    test('concurrent exchanges, a rename and a delete of one conversation each apply to the record as it is then', async () => {
      await withStore(h, async (s) => {
        await s.store.putConversation(record('conv_ab01'));
        await Promise.all([
          s.store.saveResponse(save('conv_ab01', 'resp_1')),
          s.store.updateConversation('conv_ab01', (r) => ({ ...r!, title: 'renamed' })),
          s.store.saveResponse(save('conv_ab01', 'resp_2')),
          s.store.saveResponse(save('conv_ab01', 'resp_3')),
        ]);
        const r = (await s.store.getConversation('conv_ab01'))!;
        assert.deepEqual([r.title, r.message_count], ['renamed', 6]);
        assert.equal((await s.store.readHistory('conv_ab01')).responses.length, 3);
        assert.equal((await s.store.appCounters('app_demo')).messages, 6);
        const refused = s.store.updateConversation('conv_ab01', () => {
          throw new Error('not found');
        });
        const deleted = s.store.updateConversation('conv_ab01', (x) => ({ ...x!, deleted_at: 5 }));
        await assert.rejects(refused, /not found/);
        assert.equal((await deleted).deleted_at, 5);
        assert.equal((await s.store.getConversation('conv_ab01'))!.title, 'renamed');
        await assert.rejects(
          s.store.updateConversation('conv_missing', (x) => ({ ...x! })),
          /no conversation/,
        );
      });
    });

    test('a get reads the record with its items in order; a rename changes a live conversation of its app only, also beside exchanges', async () => {
      await withStore(h, async (s) => {
        await s.store.putConversation(record('conv_g1', { metadata: { k: 'v' } }));
        const fresh = (await s.store.readConversation('conv_g1'))!;
        assert.deepEqual([fresh.record.id, fresh.record.metadata, fresh.items], ['conv_g1', { k: 'v' }, []]);
        await s.store.saveResponse(save('conv_g1', 'resp_1'));
        await s.store.saveResponse(save('conv_g1', 'resp_2'));
        const got = (await s.store.readConversation('conv_g1'))!;
        assert.deepEqual(got.record.message_count, 4);
        assert.deepEqual(got.items, (await s.store.readHistory('conv_g1')).items);
        assert.deepEqual(
          got.items!.map((i) => i.id),
          ['msg_uresp_1', 'msg_aresp_1', 'msg_uresp_2', 'msg_aresp_2'],
        );
        assert.equal(await s.store.readConversation('conv_none'), undefined);
        // §4.4: renamed beside exchanges of the same conversation, neither undoing the other.
        const [renamed] = await Promise.all([
          s.store.renameConversation('app_demo', 'conv_g1', 'Renamed'),
          s.store.saveResponse(save('conv_g1', 'resp_3')),
        ]);
        assert.equal(renamed!.title, 'Renamed');
        const after = (await s.store.getConversation('conv_g1'))!;
        assert.deepEqual([after.title, after.message_count, after.metadata], ['Renamed', 6, { k: 'v' }]);
        assert.deepEqual(await s.store.appCounters('app_demo'), { conversations: 1, messages: 6, users: 0 });
        // Another app's, a missing or a soft-deleted conversation: nothing renamed.
        assert.equal(await s.store.renameConversation('app_other', 'conv_g1', 'Theirs'), undefined);
        assert.equal(await s.store.renameConversation('app_demo', 'conv_none', 'None'), undefined);
        assert.equal((await s.store.renameConversation('app_demo', 'conv_g1', null))!.title, null);
        await s.store.updateConversation('conv_g1', (r) => ({ ...r!, deleted_at: 7 }));
        assert.equal(await s.store.renameConversation('app_demo', 'conv_g1', 'Late'), undefined);
        const gone = (await s.store.readConversation('conv_g1'))!;
        assert.deepEqual([gone.record.title, gone.record.deleted_at, gone.items], [null, 7, undefined]);
      });
    });

    test('metadata, titles and generated titles change and survive a restart', async () => {
      await withStore(h, async (s) => {
        await s.store.putConversation(record('conv_t1'));
        const big = { note: 'x'.repeat(16_000) };
        await s.store.updateConversation('conv_t1', (r) => ({ ...r!, metadata: big, title: 'T', generated_title: { en: 'G' } }));
        const st = await s.restart();
        const r = (await st.getConversation('conv_t1'))!;
        assert.deepEqual([r.title, r.generated_title, r.metadata], ['T', { en: 'G' }, big]);
      });
    });

    test('an exchange and its Idempotency-Key claim are kept together, also across a restart', async () => {
      await withStore(h, async (s) => {
        await s.store.putConversation(record('conv_cd02'));
        await s.store.putConversation(record('conv_gh04', { seq: 3 }), { key: 'k-create', fingerprint: 'f0' });
        await s.store.saveResponse(save('conv_cd02', 'resp_1', { key: 'k-saved', fingerprint: 'f1' }));
        assert.deepEqual(
          (await s.store.idempotencyClaims(0)).map((c) => [c.key, c.fingerprint]),
          [
            ['k-create', 'f0'],
            ['k-saved', 'f1'],
          ],
        );
        const st = await s.restart();
        assert.deepEqual(
          (await st.idempotencyClaims(0)).map((c) => c.key),
          ['k-create', 'k-saved'],
        );
        assert.deepEqual(await st.idempotencyClaims(Date.now() + 1), [], 'older claims are left out');
      });
    });

    test('resumable responses (D-33, D-35): one live per conversation; followers get every event in order until the terminal one; a cancel reaches the producer', async () => {
      await withStore(h, async (s) => {
        const start = (id: string, c = 'conv_r1'): LiveResponseStart => ({
          id,
          app_id: 'app_demo',
          conversation_id: c,
          created_at: 1_700_000_000,
          input: { content: 'hi', metadata: null },
        });
        const ev = (event: string, n: number) => ({ event, data: { n } }) as unknown as UnsequencedEvent;
        // D-35 revised: the first event is kept with the begin.
        assert.deepEqual(await s.store.responses.begin(start('resp_a'), ev('response.created', 0)), {});
        assert.deepEqual(
          await s.store.responses.begin(start('resp_b'), ev('response.created', 0)),
          { running: 'resp_a' },
          'D-35: the running one is named',
        );
        assert.equal(await s.store.responses.trace('resp_b'), undefined, 'nothing begun, nothing kept');
        assert.deepEqual(
          await s.store.responses.begin(start('resp_c', 'conv_r2'), ev('response.created', 0)),
          {},
          'another conversation is free',
        );
        assert.deepEqual((await s.store.responses.trace('resp_c'))!.events, [ev('response.created', 0)], 'kept once begun');
        const early = (async () => {
          const got: number[] = [];
          for await (const e of s.store.responses.follow('resp_a', -1)) got.push((e as unknown as { data: { n: number } }).data.n);
          return got;
        })();
        const late = (async () => {
          const got: number[] = [];
          for await (const e of s.store.responses.follow('resp_a', 1)) got.push((e as unknown as { data: { n: number } }).data.n);
          return got;
        })();
        let cancelled = 0;
        const off = s.store.responses.onCancelRequest('resp_a', () => cancelled++);
        const asked = new Promise<void>((resolve) => s.store.responses.onCancelRequest('resp_a', resolve));
        await s.store.responses.requestCancel('resp_a');
        await asked;
        off();
        assert.equal(cancelled, 1);
        for (let n = 1; n < 4; n++) {
          await s.store.responses.append('resp_a', ev('response.output_text.delta', n));
          // Kept once append resolves, as the producer's answer takes it then: a trace sees it (and start-up after a kill -9, D-38).
          assert.equal((await s.store.responses.trace('resp_a'))!.events!.length, n + 1, `event ${n} kept`);
        }
        await s.store.responses.append('resp_a', ev('response.completed', 4));
        assert.deepEqual(await early, [0, 1, 2, 3, 4]);
        assert.deepEqual(await late, [2, 3, 4]);
        const t = await s.store.responses.trace('resp_a');
        assert.equal(t!.ended, true);
        assert.equal(t!.events!.length, 5);
        assert.equal(t!.start.conversation_id, 'conv_r1');
        assert.equal(await s.store.responses.trace('resp_none'), undefined);
        assert.deepEqual(
          await s.store.responses.begin(start('resp_d'), ev('response.created', 0)),
          {},
          'the conversation is free once the response ended',
        );
        // A follower that stops early ends at once (waiting for the event after the first).
        const stop = new AbortController();
        const it = s.store.responses.follow('resp_d', 0, stop.signal)[Symbol.asyncIterator]();
        const next = it.next();
        stop.abort();
        assert.equal((await next).done, true);
        await s.store.responses.append('resp_d', ev('response.failed', 1));
        await s.store.responses.append('resp_c', ev('response.completed', 1));
      });
    });

    test('D-73: the admin page lists deleted ones as asked, filters by title or user (any case) and pages by cursor', async () => {
      await withStore(h, async (s) => {
        const rows: [string, Partial<ConversationRecord>][] = [
          ['conv_a1', { title: 'Refund for Order 12', external_user_id: 'u-ada' }],
          ['conv_a2', { title: 'shipping', external_user_id: 'U-BOB' }],
          ['conv_a3', { title: null, external_user_id: 'ada%_' }],
          ['conv_a4', { title: 'order status', external_user_id: null }],
        ];
        for (const [i, [id, over]] of rows.entries()) await s.store.putConversation(record(id, { seq: i + 1, ...over }));
        await s.store.putConversation(record('conv_other', { app_id: 'app_other', seq: 9, title: 'order' }));
        await s.store.updateConversation('conv_a2', (x) => ({ ...x!, deleted_at: 1_700_000_200 }));
        await s.store.updateConversation('conv_a4', (x) => ({ ...x!, deleted_at: 1_700_000_300 }));
        const ids = async (q: Partial<AdminPageQuery>) =>
          (await s.store.admin.page('app_demo', { direction: 'up', limit: 10, deleted: 'include', ...q }))?.records.map((r) => r.record.id);
        assert.deepEqual(await ids({ deleted: 'exclude' }), ['conv_a1', 'conv_a3']);
        assert.deepEqual(await ids({ deleted: 'only' }), ['conv_a2', 'conv_a4']);
        assert.deepEqual(await ids({}), ['conv_a1', 'conv_a2', 'conv_a3', 'conv_a4']);
        assert.deepEqual(await ids({ direction: 'down' }), ['conv_a4', 'conv_a3', 'conv_a2', 'conv_a1']);
        assert.deepEqual(await ids({ text: 'ORDER' }), ['conv_a1', 'conv_a4'], 'a part of the title, any case');
        assert.deepEqual(await ids({ text: 'bob' }), ['conv_a2'], 'a part of the user id, any case');
        assert.deepEqual(await ids({ text: '%_' }), ['conv_a3'], 'matched as written, not as a pattern');
        assert.deepEqual(await ids({ externalUserId: 'u-ada' }), ['conv_a1']);
        // Pages: a deleted cursor keeps its place (D-11), has_more says what is beyond.
        const first = await s.store.admin.page('app_demo', { direction: 'up', limit: 2, deleted: 'include' });
        assert.deepEqual([first!.records.map((r) => r.record.id), first!.hasMore], [['conv_a1', 'conv_a2'], true]);
        assert.deepEqual(await ids({ cursor: 'conv_a2', deleted: 'exclude' }), ['conv_a3']);
        assert.equal(
          await s.store.admin.page('app_demo', { direction: 'up', limit: 2, deleted: 'include', cursor: 'conv_other' }),
          undefined,
        );
        const other = await s.store.admin.get('conv_other');
        assert.equal(other!.record.app_id, 'app_other');
      });
    });

    test('D-73: a kept conversation is restored, counted in the quota again; a live, purged or unknown one is not', async () => {
      await withStore(h, async (s) => {
        await s.store.putConversation(record('conv_r1', { metadata: { k: 'v' } }));
        await s.store.saveResponse(save('conv_r1', 'resp_r1'));
        const live = await s.store.storedBytes('app_demo');
        assert.deepEqual(await s.store.admin.restore('conv_r1'), { refused: 'live' });
        assert.deepEqual(await s.store.admin.restore('conv_none'), { refused: 'missing' });
        await s.store.updateConversation('conv_r1', (x) => ({ ...x!, deleted_at: 1_700_000_100 }));
        assert.equal(await s.store.storedBytes('app_demo'), 0);
        assert.equal(await s.store.admin.keptBytes('app_demo'), live, 'kept as the quota counted it live');
        const r = await s.store.admin.restore('conv_r1');
        assert.ok('restored' in r);
        assert.deepEqual([r.restored.record.deleted_at, r.restored.purgedAt], [null, null]);
        assert.equal(await s.store.storedBytes('app_demo'), live);
        assert.equal(await s.store.admin.keptBytes('app_demo'), 0);
        const st = await s.restart();
        const back = (await st.getConversation('conv_r1'))!;
        assert.deepEqual([back.deleted_at, back.metadata, back.message_count], [null, { k: 'v' }, 2]);
        assert.equal((await st.readHistory('conv_r1')).items.length, 2);
        assert.deepEqual((await walkIds(st, 'app_demo')).includes('conv_r1'), true);
        // Purged: not restorable.
        await st.updateConversation('conv_r1', (x) => ({ ...x!, deleted_at: 1_700_000_500 }));
        assert.equal(await st.admin.purgeDeleted(1_700_000_500, 1_700_000_600), 1);
        assert.deepEqual(await st.admin.restore('conv_r1'), { refused: 'purged' });
      });
    });

    test('D-73: the sweep purges histories deleted at or before its time, once; the bound purges the oldest deletions first', async () => {
      await withStore(h, async (s) => {
        for (const [i, id] of ['conv_p1', 'conv_p2', 'conv_p3', 'conv_p4'].entries()) {
          await s.store.putConversation(record(id, { seq: i + 1, metadata: { n: i } }));
          await s.store.saveResponse(save(id, `resp_p${i}`));
          await s.store.updateConversation(id, (x) => ({ ...x!, deleted_at: 1_700_000_100 + i * 100 }));
        }
        const each = (await s.store.admin.keptBytes('app_demo')) / 4;
        // A deletion given another time stays a kept one (only a purge purges).
        await s.store.updateConversation('conv_p4', (x) => ({ ...x!, deleted_at: 1_700_000_450 }));
        assert.deepEqual([(await s.store.admin.get('conv_p4'))!.purgedAt, await s.store.admin.keptBytes('app_demo')], [null, each * 4]);
        assert.equal(await s.store.admin.purgeDeleted(1_700_000_100, 1_700_001_000), 1);
        assert.equal(await s.store.admin.purgeDeleted(1_700_000_100, 1_700_001_001), 0, 'once');
        const p1 = (await s.store.admin.get('conv_p1'))!;
        assert.equal(p1.purgedAt, 1_700_001_000);
        assert.deepEqual((await s.store.readHistory('conv_p1')).items, []);
        assert.equal(p1.record.message_count, 2, 'the record stays, its counts too (D-24)');
        // The bound: room for one more history than it holds is none; room for one keeps the newest.
        assert.equal(await s.store.admin.trimKept('app_demo', Math.ceil(each * 3), 1_700_002_000), 0);
        assert.equal(await s.store.admin.trimKept('app_demo', Math.ceil(each), 1_700_002_000), 2);
        const state = async (st: Store) =>
          Promise.all(['conv_p1', 'conv_p2', 'conv_p3', 'conv_p4'].map(async (id) => (await st.admin.get(id))!.purgedAt));
        assert.deepEqual(await state(s.store), [1_700_001_000, 1_700_002_000, 1_700_002_000, null]);
        assert.equal((await s.store.readHistory('conv_p4')).responses.length, 1);
        const st = await s.restart();
        assert.deepEqual(await state(st), [1_700_001_000, 1_700_002_000, 1_700_002_000, null], 'as it was after a restart');
        assert.deepEqual((await st.readHistory('conv_p2')).responses, []);
        assert.equal((await st.admin.keptBytes('app_demo')) > 0, true);
        assert.equal(await st.admin.trimKept('app_demo', 0, 1_700_003_000), 1);
        assert.equal(await st.admin.keptBytes('app_demo'), 0);
      });
    });
  });
}
