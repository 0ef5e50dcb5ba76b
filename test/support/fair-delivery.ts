// D-169 (issue 42 item 5): one team's hanging endpoints leave another team's delivery its slot. The
// delivery worker runs over a store's own outbox (file: test/outbox-contract.test.ts; PostgreSQL:
// test/proof/pg-outbox-contract.test.ts) and sends to real receivers on loopback: twenty that never
// answer, and the other team's. The attempt's bound is long, so that "delivered before any hanging
// attempt ended" is an order of events, not a time.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import pino from 'pino';
import type { WebhookEndpointT } from '../../src/core/webhook-endpoint.ts';
import { DeliveryWorker } from '../../src/services/webhooks/worker.ts';
import { type ControlPlane, seedDoc } from '../../src/store/control.ts';
import { loadFixtures } from '../../src/store/fixtures.ts';
import type { Attempt, OutboxEvent, WebhookOutbox } from '../../src/store/webhooks.ts';
import { FIXTURES_DIR } from './helpers.ts';
import { type OutboxHarness, withOutbox } from './outbox-suite.ts';
import { startReceiver } from './webhook-receiver.ts';

const HANGING = 20;

function endpoint(id: string, team: string, app: string, key: string, url: string): WebhookEndpointT {
  return {
    id,
    team_id: team,
    app_id: app,
    url,
    events: ['*'],
    description: '',
    signing_key_id: key,
    enabled: true,
    disabled_reason: null,
    created_at: 1,
    updated_at: 1,
  };
}

function event(id: string, team: string, app: string, endpoints: string[]): OutboxEvent {
  const at = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({ id, object: 'event', type: 'conversation.created', created_at: at, app_id: app, data: {} });
  return {
    id,
    team_id: team,
    app_id: app,
    type: 'conversation.created',
    created_at: at,
    body,
    deliveries: endpoints.map((endpoint_id) => ({ endpoint_id, state: 'pending' as const })),
  };
}

/** A receiver that takes each request and never answers; `onRequest` hears of each. */
async function hangingReceiver(onRequest: () => void): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(() => onRequest());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The outbox, telling `heard` of each attempt recorded. */
function watched(outbox: WebhookOutbox, heard: (a: Attempt) => void): WebhookOutbox {
  return new Proxy(outbox, {
    get(target, k) {
      if (k === 'settle')
        return async (...args: Parameters<WebhookOutbox['settle']>) => {
          await target.settle(...args);
          heard(args[0]);
        };
      const v = Reflect.get(target, k);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

export function fairDeliverySuite(name: string, h: OutboxHarness): void {
  test(`D-169 (${name}): one team's ${HANGING} hanging endpoints, 3 events each: another team's delivery is made while every hanging attempt is still in flight`, {
    timeout: 120_000,
  }, async () => {
    await withOutbox(h, undefined, async ({ outbox }) => {
      let hung = 0;
      const waiters: Array<() => void> = [];
      const wake = () => {
        for (const w of waiters.splice(0)) w();
      };
      const until = async (pred: () => boolean) => {
        while (!pred()) await new Promise<void>((r) => waiters.push(r));
      };
      const recorded: Attempt[] = [];
      const hanging: Array<{ url: string; close(): Promise<void> }> = [];
      const receiver = await startReceiver();
      let worker: DeliveryWorker | undefined;
      try {
        for (let i = 0; i < HANGING; i++)
          hanging.push(
            await hangingReceiver(() => {
              hung++;
              wake();
            }),
          );
        const doc = seedDoc(await loadFixtures(FIXTURES_DIR), Date.now());
        const slow = hanging.map((r, i) => endpoint(`we_hang${i}`, 'team_demo', 'app_demo', 'key_demo_secret', r.url));
        doc.webhook_endpoints.push(...slow, endpoint('we_other', 'team_other', 'app_other', 'key_other_secret', receiver.url));
        worker = new DeliveryWorker(
          watched(outbox, (a) => {
            recorded.push(a);
            wake();
          }),
          { read: () => doc } as unknown as ControlPlane,
          {
            scheduleS: [5],
            // Far beyond the test's own bound: no hanging attempt ends by itself while it runs.
            timeoutMs: 600_000,
            disableAfterMs: 30 * 86_400_000,
            policy: { allowLoopback: true, allowPrivate: false },
            resolve: async (host) => [{ address: host, family: 4 }],
            concurrency: 16,
            pollMs: 3_600_000,
            retentionMs: 86_400_000,
            log: pino({ level: 'silent' }),
          },
        );
        const ids = slow.map((e) => e.id);
        await outbox.add([1, 2, 3].map((n) => event(`evt_hang${n}`, 'team_demo', 'app_demo', ids)));
        worker.start();
        await until(() => hung > 0);
        // The hanging team's attempts are under way; the other team's event comes after them.
        await outbox.add([event('evt_other', 'team_other', 'app_other', ['we_other'])]);
        await until(() => recorded.some((a) => a.endpoint_id === 'we_other'));
        assert.deepEqual(
          recorded.map((a) => [a.endpoint_id, a.status]),
          [['we_other', 200]],
          'the other team delivered, and no hanging attempt has ended',
        );
        assert.equal(receiver.received[0]?.json?.id, 'evt_other');
        assert.ok(hung > 0 && hung < HANGING, `${hung} hanging attempts in flight: a share of the slots, not all of them`);
      } finally {
        const stopping = worker?.stop();
        for (const r of hanging) await r.close();
        await stopping;
        await receiver.close();
      }
    });
  });
}
