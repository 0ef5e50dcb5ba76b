// The delivery worker's own CPU, apart from any server: `node --import tsx bench/lab/worker-cpu.ts
// [treeRoot=.] [events=1500]`. A FileOutbox and a DeliveryWorker from that checkout, in this process,
// with three endpoints on a receiver in a process of its own (answering 204); events adopted one at a
// time, as sends one at a time make them, the next once the last one's three attempts are recorded.
// Prints, per round, this process's CPU per event (its three attempts, signed, sent and recorded).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { ControlDocT } from '../../src/core/control.ts';
import type { FileOutbox as FileOutboxT } from '../../src/store/file/webhooks.ts';
import type { Attempt, Delivery } from '../../src/store/webhooks.ts';
import { startChild } from '../child.ts';

const [rootArg = '.', eventsText = '1500'] = process.argv.slice(2);
const root = path.resolve(rootArg);
const events = Number(eventsText);
const { FileOutbox } = (await import(path.join(root, 'src/store/file/webhooks.ts'))) as { FileOutbox: typeof FileOutboxT };
const { DeliveryWorker } = (await import(
  path.join(root, 'src/services/webhooks/worker.ts')
)) as typeof import('../../src/services/webhooks/worker.ts');

const receiver = await startChild('lab/receiver-server.ts');
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-worker-cpu-'));
try {
  const url = `http://127.0.0.1:${receiver.ready.port}/hook`;
  const outbox = await FileOutbox.open(tmp);
  const endpoints = ['we_a', 'we_b', 'we_c'].map((id) => ({ id, team_id: 't', app_id: 'a', url, events: ['*'], enabled: true }));
  const key = {
    team_id: 't',
    type: 'secret',
    signing_key: Buffer.alloc(32, 7).toString('base64'),
    revoked_at: null,
    expires_at: null,
    created_at: 1,
  };
  const doc = { version: 1, webhook_endpoints: endpoints, keys: [key] } as unknown as ControlDocT;
  const control = { read: () => doc } as unknown as ConstructorParameters<typeof DeliveryWorker>[1];
  const worker = new DeliveryWorker(outbox, control, {
    scheduleS: [5],
    timeoutMs: 15_000,
    disableAfterMs: 1e12,
    policy: { allowLoopback: true, allowPrivate: false },
    resolve: async () => [],
    concurrency: 16,
    pollMs: 1000,
    retentionMs: 7 * 86_400_000,
    log: pino({ level: 'silent' }),
  });
  // Each recorded attempt counted; `settled(n)` resolves once n more are.
  let recorded = 0;
  let waiter: { at: number; resolve: () => void } | undefined;
  const settle = outbox.settle.bind(outbox);
  outbox.settle = async (a: Attempt, d: Delivery) => {
    await settle(a, d);
    recorded++;
    if (waiter && recorded >= waiter.at) waiter.resolve();
  };
  const settled = (n: number) => new Promise<void>((resolve) => (waiter = { at: recorded + n, resolve }));
  worker.start();
  const body = JSON.stringify({ id: 'evt_x', object: 'event', type: 'response.completed', data: { text: 'y'.repeat(900) } });
  for (let round = 1; round <= 4; round++) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < events; i++) {
      const three = settled(3);
      const created_at = Math.floor(Date.now() / 1000);
      const deliveries = endpoints.map((e) => ({ endpoint_id: e.id, state: 'pending' as const }));
      outbox.adopt([{ id: `evt_${round}_${i}`, team_id: 't', app_id: 'a', type: 'response.completed', created_at, body, deliveries }]);
      await three;
    }
    const used = process.cpuUsage(cpu);
    const ms = (us: number) => (us / events / 1000).toFixed(3);
    console.log(
      `round ${round}${round === 1 ? ' (warm-up)' : ''}: CPU per event ${ms(used.user + used.system)} ms (user ${ms(used.user)}, system ${ms(used.system)}), ` +
        `${((performance.now() - started) / events).toFixed(3)} ms each`,
    );
  }
  await worker.stop();
  await outbox.close();
} finally {
  await receiver.stop();
  await fs.rm(tmp, { recursive: true, force: true });
}
