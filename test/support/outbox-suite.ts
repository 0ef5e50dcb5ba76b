// The behaviours every webhook outbox keeps (src/store/webhooks.ts, docs/webhooks.md, D-84…D-88), and
// the change events a store is opened with (src/store/types.ts `ChangeEventsOf`): one suite, run against
// each store by test/outbox-contract.test.ts (the file store) and test/proof/pg-outbox-contract.test.ts
// (PostgreSQL). Each backend's own tests (the journal's lines, a full disk, SKIP LOCKED across
// instances) stay beside it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ChangeEvents, ChangeEventsOf, Store } from '../../src/store/types.ts';
import type { Attempt, Due, OutboxEvent, WebhookOutbox } from '../../src/store/webhooks.ts';
import { record, save } from './records.ts';
import { withStore } from './store-suite.ts';

export interface OutboxHarness {
  /** New, empty data: `make` builds a store over it (not yet opened), opened with `changeEvents` when given. */
  fresh(): Promise<{ make(changeEvents?: ChangeEventsOf): Store }>;
}

const now = () => Math.floor(Date.now() / 1000);

/** An event of app_demo with a pending delivery to each of `endpoints`. */
export function outboxEvent(id: string, endpoints = ['we_a'], at = now()): OutboxEvent {
  return {
    id,
    team_id: 'team_demo',
    app_id: 'app_demo',
    type: 'conversation.created',
    created_at: at,
    body: JSON.stringify({ id }),
    deliveries: endpoints.map((endpoint_id) => ({ endpoint_id, state: 'pending' as const })),
  };
}

/** Events for every change of app_demo, numbered in the order the store asks for them. */
export function numberedEvents(): ChangeEvents {
  let n = 0;
  return {
    wants: (appId) => appId === 'app_demo',
    created: () => [outboxEvent(`evt_c${++n}`)],
    updated: () => [outboxEvent(`evt_u${++n}`)],
    restored: () => [outboxEvent(`evt_r${++n}`)],
    saved: () => [outboxEvent(`evt_s${++n}`)],
  };
}

/** A claim's pick of at most `limit` of the deliveries offered, none to an endpoint in `busy`. */
export const upTo =
  (limit: number, busy: ReadonlySet<string> = new Set()) =>
  (due: Due[]) =>
    due.filter((d) => !busy.has(d.delivery.endpoint_id)).slice(0, limit);

const attempt = (id: string, eventId: string, endpointId: string, status: number | null, at = now()): Attempt => ({
  id,
  event_id: eventId,
  endpoint_id: endpointId,
  created_at: at,
  status,
  duration_ms: 2,
  response: 'r',
  error: status === null ? 'refused' : null,
});

/** Opens a store over fresh data with `changeEvents` (store-suite.ts's withStore; a restart opens one without). */
export function withOutbox(
  h: OutboxHarness,
  changeEvents: ChangeEventsOf | undefined,
  fn: (s: { store: Store; outbox: WebhookOutbox; restart(): Promise<WebhookOutbox> }) => Promise<void>,
): Promise<void> {
  const fresh = async () => {
    const { make } = await h.fresh();
    return { store: make(changeEvents), reopen: () => make() };
  };
  return withStore({ fresh }, (s) =>
    fn({
      get store() {
        return s.store;
      },
      get outbox() {
        return s.store.outbox;
      },
      restart: async () => (await s.restart()).outbox,
    }),
  );
}

export function outboxSuite(name: string, h: OutboxHarness): void {
  describe(`Outbox contract: ${name}`, () => {
    test('D-84: the events given at open are asked of the store’s own outbox; each change’s are recorded with it, none for a change that throws or changes nothing; a restart keeps them', async () => {
      let given: WebhookOutbox | undefined;
      const events: ChangeEventsOf = (outbox) => {
        given = outbox;
        return numberedEvents();
      };
      await withOutbox(h, events, async (s) => {
        assert.equal(given, s.outbox, 'the change events are made from the outbox the store writes to');
        await s.store.putConversation(record('conv_w1'));
        await s.store.putConversation(record('conv_o1', { seq: 2, app_id: 'app_other' }));
        await s.store.updateConversation('conv_w1', () => ({ title: 'Renamed' }));
        await assert.rejects(
          s.store.updateConversation('conv_w1', () => {
            throw new Error('refused');
          }),
        );
        await s.store.updateConversation('conv_w1', () => ({ title: 'Renamed' }));
        await s.store.saveResponse(save('conv_w1', 'resp_1'));
        const ids = async (o: WebhookOutbox) => (await o.deliveries({ team_id: 'team_demo', limit: 10 })).map((d) => d.event.id);
        assert.deepEqual(await ids(s.outbox), ['evt_s3', 'evt_u2', 'evt_c1']);
        assert.deepEqual(await ids(await s.restart()), ['evt_s3', 'evt_u2', 'evt_c1']);
      });
    });

    test('D-84: a store opened without change events records none', async () => {
      await withOutbox(h, undefined, async (s) => {
        await s.store.putConversation(record('conv_n1'));
        await s.store.updateConversation('conv_n1', () => ({ title: 'Renamed' }));
        assert.deepEqual(await s.outbox.deliveries({ team_id: 'team_demo', limit: 10 }), []);
      });
    });

    test('D-85: a claim leases each due delivery to one owner, at most one per endpoint and none to a busy one; a lease ends by settle, or by time', async () => {
      await withOutbox(h, undefined, async ({ outbox: o }) => {
        await o.add([outboxEvent('evt_1', ['we_a', 'we_b']), outboxEvent('evt_2', ['we_a', 'we_b'])]);
        const t = Date.now() + 1000;
        const key = (c: { event: OutboxEvent; delivery: { endpoint_id: string } }) => `${c.event.id}/${c.delivery.endpoint_id}`;
        assert.deepEqual(await o.claim('w0', t, 60_000, upTo(10, new Set(['we_a', 'we_b']))), [], 'busy endpoints are skipped');
        const first = await o.claim('w1', t, 60_000, upTo(10, new Set(['we_b'])));
        assert.equal(first.length, 1);
        assert.equal(first[0]!.delivery.endpoint_id, 'we_a');
        const second = await o.claim('w2', t, 60_000, upTo(10, new Set()));
        assert.deepEqual(second.map((c) => c.delivery.endpoint_id).sort(), ['we_a', 'we_b'], 'one per endpoint in a claim');
        const third = await o.claim('w3', t, 60_000, upTo(10, new Set()));
        const all = [...first, ...second, ...third].map(key);
        assert.deepEqual([...all].sort(), ['evt_1/we_a', 'evt_1/we_b', 'evt_2/we_a', 'evt_2/we_b'], 'each delivery leased once');
        assert.deepEqual(await o.claim('w4', t, 60_000, upTo(10, new Set())), [], 'nothing left while the leases last');
        // A lease past its end frees the delivery for another owner.
        assert.equal((await o.claim('w5', t + 60_001, 60_000, upTo(10, new Set()))).length, 2);
        assert.equal(first[0]!.event.body, JSON.stringify({ id: first[0]!.event.id }), 'the event comes with its body');
      });
    });

    test('D-169: a claim offers the oldest due delivery of each endpoint with its team, and leases only what the pick returns of them', async () => {
      await withOutbox(h, undefined, async ({ outbox: o }) => {
        const other = { ...outboxEvent('evt_2', ['we_c']), team_id: 'team_other' };
        await o.add([outboxEvent('evt_1', ['we_a', 'we_b'], now() - 10), other, outboxEvent('evt_3', ['we_a'])]);
        const t = Date.now() + 1000;
        const seen: string[][] = [];
        const look = (due: Due[]): Due[] => {
          seen.push(due.map((d) => `${d.delivery.event_id}/${d.delivery.endpoint_id}/${d.team_id}`).sort());
          return [];
        };
        assert.deepEqual(await o.claim('w0', t, 60_000, look), [], 'nothing picked, nothing leased');
        assert.deepEqual(seen[0], ['evt_1/we_a/team_demo', 'evt_1/we_b/team_demo', 'evt_2/we_c/team_other']);
        // A pick beyond what was offered (evt_3 waits behind evt_1 at we_a) is not leased.
        const forged = {
          delivery: { event_id: 'evt_3', endpoint_id: 'we_a', state: 'pending' as const, attempts: 0, next_at: 0 },
          team_id: 'team_demo',
        };
        const first = await o.claim('w1', t, 60_000, (due) => [...due.filter((d) => d.delivery.endpoint_id === 'we_a'), forged]);
        assert.deepEqual(
          first.map((c) => `${c.event.id}/${c.delivery.endpoint_id}`),
          ['evt_1/we_a'],
        );
        await o.claim('w2', t, 60_000, look);
        assert.deepEqual(
          seen[1],
          ['evt_1/we_b/team_demo', 'evt_2/we_c/team_other', 'evt_3/we_a/team_demo'],
          'the next of a leased endpoint is offered',
        );
      });
    });

    test('D-129: a delivery given due_at is offered from then on, not before, also after a restart', async () => {
      await withOutbox(h, undefined, async (s) => {
        const later = Date.now() + 3_600_000;
        const ev = outboxEvent('evt_later', ['we_a']);
        await s.outbox.add([{ ...ev, deliveries: [{ endpoint_id: 'we_a', state: 'pending', due_at: later, sends: 2 }] }]);
        const offered = async (o: WebhookOutbox, at: number) => (await o.claim('w', at, 1, upTo(10))).map((c) => c.event.id);
        assert.deepEqual(await offered(s.outbox, Date.now() + 1000), [], 'not due yet');
        const o2 = await s.restart();
        assert.deepEqual(await offered(o2, later - 1), []);
        assert.deepEqual(await offered(o2, later), ['evt_later']);
        const [d] = await o2.deliveries({ team_id: 'team_demo', event_id: 'evt_later', limit: 1 });
        assert.deepEqual(d!.event.deliveries, [{ endpoint_id: 'we_a', state: 'pending', due_at: later, sends: 2 }], 'kept with the event');
      });
    });

    test('D-86, D-87: settle records each attempt (newest first, per team); the failing clock runs from the first failure to the next success; redeliver makes a finished delivery due; a restart keeps it all', async () => {
      await withOutbox(h, undefined, async (s) => {
        const o = s.outbox;
        await o.add([outboxEvent('evt_1', ['we_a', 'we_b'])]);
        const [c] = await o.claim('w1', Date.now() + 1000, 60_000, upTo(1, new Set(['we_b'])));
        const failedAt = now() - 60;
        await o.settle(attempt('wa_1', 'evt_1', 'we_a', 500, failedAt), { ...c!.delivery, attempts: 1, state: 'failed' });
        assert.equal(await o.failingSince('we_a'), failedAt);
        assert.equal(await o.failingSince('we_b'), null);
        assert.deepEqual(await o.claim('w1', Date.now() + 1000, 60_000, upTo(10, new Set(['we_b']))), [], 'a failed delivery is not due');
        assert.equal(await o.redeliver('evt_1', ['we_a', 'we_unknown'], Date.now()), 1);
        const o2 = await s.restart();
        const again = await o2.claim('w2', Date.now() + 1000, 60_000, upTo(10, new Set(['we_b'])));
        assert.deepEqual(
          again.map((x) => `${x.event.id}/${x.delivery.endpoint_id}/${x.delivery.state}`),
          ['evt_1/we_a/pending'],
        );
        await o2.settle(attempt('wa_2', 'evt_1', 'we_a', 200), { ...again[0]!.delivery, attempts: 2, state: 'succeeded' });
        assert.equal(await o2.failingSince('we_a'), null);
        const o3 = await s.restart();
        const log = await o3.deliveries({ team_id: 'team_demo', event_id: 'evt_1', endpoint_id: 'we_a', limit: 5 });
        assert.deepEqual(
          log.map((d) => [d.delivery.state, d.delivery.attempts, d.attempts.map((a) => a.status)]),
          [['succeeded', 2, [200, 500]]],
        );
        assert.equal((await o3.event('evt_1'))?.body, JSON.stringify({ id: 'evt_1' }));
        assert.deepEqual(await o3.deliveries({ team_id: 'team_other', limit: 5 }), []);
      });
    });

    test('D-156: `failed` and `since` filter the delivery log before its limit: ended failed, or waiting to retry after a failure; events since a time', async () => {
      await withOutbox(h, undefined, async ({ outbox: o }) => {
        const t = now();
        await o.add([
          outboxEvent('evt_f', ['we_a'], t - 7200),
          outboxEvent('evt_r', ['we_b'], t - 100),
          outboxEvent('evt_ok', ['we_c'], t - 50),
          outboxEvent('evt_p', ['we_d'], t - 10),
        ]);
        const leased = await o.claim('w1', Date.now() + 1000, 60_000, upTo(10, new Set(['we_d'])));
        const of = (id: string) => leased.find((c) => c.event.id === id)!.delivery;
        await o.settle(attempt('wa_f', 'evt_f', 'we_a', 500), { ...of('evt_f'), attempts: 1, state: 'failed' });
        await o.settle(attempt('wa_r', 'evt_r', 'we_b', null), {
          ...of('evt_r'),
          attempts: 1,
          state: 'pending',
          next_at: Date.now() + 60_000,
        });
        await o.settle(attempt('wa_ok', 'evt_ok', 'we_c', 200), { ...of('evt_ok'), attempts: 1, state: 'succeeded' });
        const ids = async (q: Partial<Parameters<WebhookOutbox['deliveries']>[0]>) =>
          (await o.deliveries({ team_id: 'team_demo', limit: 10, ...q })).map((d) => d.event.id);
        // The newest delivery (evt_p) is not failed: a filter of the first page would find nothing.
        assert.deepEqual(await ids({ failed: 'or-retrying', limit: 1 }), ['evt_r']);
        assert.deepEqual(await ids({ failed: 'or-retrying' }), ['evt_r', 'evt_f']);
        assert.deepEqual(await ids({ failed: 'ended' }), ['evt_f']);
        assert.deepEqual(await ids({ failed: 'or-retrying', since: t - 1000 }), ['evt_r']);
        assert.deepEqual(await ids({ since: t - 1000 }), ['evt_p', 'evt_ok', 'evt_r']);
        assert.deepEqual(await ids({ failed: 'ended', team_id: 'team_other' }), []);
      });
    });

    test('D-87: retention forgets old events whose deliveries are all finished, with their attempts, and keeps the others; a restart agrees', async () => {
      await withOutbox(h, undefined, async (s) => {
        const o = s.outbox;
        const old = now() - 10 * 86_400;
        await o.add([outboxEvent('evt_old', ['we_a'], old), outboxEvent('evt_pending', ['we_a'], old), outboxEvent('evt_new', ['we_a'])]);
        await o.settle(attempt('wa_9', 'evt_old', 'we_a', 200, old), {
          event_id: 'evt_old',
          endpoint_id: 'we_a',
          state: 'succeeded',
          attempts: 1,
          next_at: 0,
        });
        await o.prune(Date.now() - 7 * 86_400_000);
        const kept = async (x: WebhookOutbox) =>
          Promise.all(['evt_old', 'evt_pending', 'evt_new'].map(async (id) => !!(await x.event(id))));
        assert.deepEqual(await kept(o), [false, true, true]);
        assert.deepEqual(await kept(await s.restart()), [false, true, true]);
      });
    });

    test('D-88: onEvents hears the events recorded here, once they are kept, until stopped; follows counts listeners per app', async () => {
      await withOutbox(h, numberedEvents, async (s) => {
        const heard: string[] = [];
        const stop = s.outbox.onEvents((events) => {
          for (const e of events) heard.push(e.id);
        });
        await s.outbox.add([outboxEvent('evt_added')]);
        await s.store.putConversation(record('conv_h1'));
        assert.deepEqual(heard, ['evt_added', 'evt_c1']);
        stop();
        await s.outbox.add([outboxEvent('evt_unheard')]);
        assert.deepEqual(heard, ['evt_added', 'evt_c1']);
        const release = s.outbox.follows.follow('app_followed');
        assert.deepEqual([s.outbox.follows.has('app_followed'), s.outbox.follows.has('app_demo')], [true, false]);
        release();
        assert.equal(s.outbox.follows.has('app_followed'), false);
      });
    });
  });
}
