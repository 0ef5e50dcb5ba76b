// D-85: what the retry schedule's delays count from. The worker runs on a clock of the test's own,
// which the receiver (a real one on loopback) moves 10 s forward while it answers each attempt: a
// delay counted from the end of the attempt before it, from its start or from the first attempt
// gives three different due times, so the one the docs describe is the one asserted. The setting's
// own words (its --help and the README's row) say the same.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import pino from 'pino';
import { DeliveryWorker } from '../src/services/webhooks/worker.ts';
import { SETTINGS } from '../src/settings.ts';
import type { ControlPlane } from '../src/store/control.ts';
import { seedDoc } from '../src/store/control.ts';
import { loadFixtures } from '../src/store/fixtures.ts';
import type { Attempt, Delivery, OutboxEvent, WebhookOutbox } from '../src/store/webhooks.ts';
import { FIXTURES_DIR } from './support/helpers.ts';

const ANSWER_MS = 10_000;

test('D-85: each delay of the schedule runs from the end of the attempt before it', async () => {
  const clock = { ms: Date.UTC(2026, 10, 1, 12) };
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      clock.ms += ANSWER_MS;
      res.writeHead(500).end('boom');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const doc = seedDoc(await loadFixtures(FIXTURES_DIR), clock.ms);
  const at = Math.floor(clock.ms / 1000);
  doc.webhook_endpoints.push({
    id: 'we_schedule',
    team_id: 'team_demo',
    app_id: 'app_demo',
    url,
    events: ['*'],
    description: '',
    signing_key_id: 'key_demo_secret',
    enabled: true,
    disabled_reason: null,
    created_at: at,
    updated_at: at,
  });
  const event: OutboxEvent = {
    id: 'evt_schedule',
    team_id: 'team_demo',
    app_id: 'app_demo',
    type: 'conversation.created',
    created_at: at,
    body: '{}',
    deliveries: [{ endpoint_id: 'we_schedule', state: 'pending' }],
  };
  let delivery: Delivery = { event_id: event.id, endpoint_id: 'we_schedule', state: 'pending', attempts: 0, next_at: clock.ms };
  const settled: Array<{ attempt: Attempt; next: Delivery }> = [];
  let told: (() => void) | undefined;
  const outbox = {
    claim: async (_owner: string, now: number) => (delivery.state === 'pending' && delivery.next_at <= now ? [{ delivery, event }] : []),
    settle: async (attempt: Attempt, next: Delivery) => {
      settled.push({ attempt, next });
      delivery = next;
      told?.();
    },
    prune: async () => {},
    failingSince: async () => null,
    onEvents: () => () => {},
  } as unknown as WebhookOutbox;
  const worker = new DeliveryWorker(outbox, { read: () => doc } as unknown as ControlPlane, {
    scheduleS: [3, 7],
    timeoutMs: 5_000,
    disableAfterMs: 30 * 86_400_000,
    policy: { allowLoopback: true, allowPrivate: false },
    resolve: async (host) => [{ address: host, family: 4 }],
    concurrency: 1,
    pollMs: 3_600_000,
    retentionMs: 86_400_000,
    log: pino({ level: 'silent' }),
    now: () => clock.ms,
  });
  const attempt = async (): Promise<Delivery> => {
    const n = settled.length;
    const done = new Promise<void>((resolve) => {
      told = () => settled.length > n && resolve();
    });
    worker.kick();
    await done;
    return settled.at(-1)!.next;
  };
  try {
    const first = clock.ms;
    const afterFirst = await attempt();
    assert.equal(afterFirst.state, 'pending');
    assert.equal(afterFirst.next_at, first + ANSWER_MS + 3_000, 'the first delay runs from the end of the first attempt');
    clock.ms = afterFirst.next_at;
    const afterSecond = await attempt();
    assert.equal(
      afterSecond.next_at,
      afterFirst.next_at + ANSWER_MS + 7_000,
      'the second delay runs from the end of the second attempt, not from the first attempt',
    );
    clock.ms = afterSecond.next_at;
    assert.equal((await attempt()).state, 'failed', 'two delays: two retries after the first attempt, then no more');
    assert.deepEqual(
      settled.map((s) => s.attempt.status),
      [500, 500, 500],
    );
    for (const words of [SETTINGS.webhookRetrySchedule.help, SETTINGS.webhookRetrySchedule.meaning])
      assert.match(words, /each (counted )?from the end of the attempt before it/, words);
  } finally {
    await worker.stop();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  }
});
