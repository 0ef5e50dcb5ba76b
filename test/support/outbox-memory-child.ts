// The child of test/proof/outbox-memory.test.ts, run under a small heap with --expose-gc: the file
// store's outbox (D-167) given events with 16 KB bodies for one endpoint, each delivered (one attempt in
// flight, as D-85 has per endpoint) to the receiver at `url` and settled; or the same directory opened
// again, pruned and compacted. Prints one JSON line per sample: the heap used after a full GC.
//   deliver <dataDir> <url> <events> <old>  (the first <old> events dated 6 days back, within D-87's 7)
//   reopen <dataDir> <events>  (pruned as two days later: the <old> ones go)
import http from 'node:http';
import { FileOutbox } from '../../src/store/file/webhooks.ts';
import type { OutboxEvent } from '../../src/store/webhooks.ts';

const [mode, dataDir, ...rest] = process.argv.slice(2);
const BODY_BYTES = 16 * 1024;
const DAY_S = 86_400;
const RETENTION_MS = 7 * DAY_S * 1000;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

function sample(label: string, extra: Record<string, number> = {}): void {
  gc!();
  process.stdout.write(`${JSON.stringify({ label, heapUsed: process.memoryUsage().heapUsed, ...extra })}\n`);
}

const idOf = (i: number) => `evt_m${String(i).padStart(6, '0')}`;

function eventOf(i: number, old: number): OutboxEvent {
  const now = Math.floor(Date.now() / 1000);
  return {
    id: idOf(i),
    team_id: 'team_demo',
    app_id: 'app_demo',
    type: 'conversation.created',
    created_at: i < old ? now - 6 * DAY_S : now,
    // A fresh string per event, as each create's payload is.
    body: JSON.stringify({ id: idOf(i), pad: String(i % 10).repeat(BODY_BYTES) }),
    deliveries: [{ endpoint_id: 'we_one', state: 'pending' }],
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function post(url: string, ev: OutboxEvent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'webhook-id': ev.id } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(ev.body);
  });
}

/** Claims and delivers until `total` attempts have succeeded (one endpoint: one attempt at a time). */
async function deliverAll(o: FileOutbox, url: string, total: number, added: () => number): Promise<void> {
  let delivered = 0;
  let sampled = false;
  while (delivered < total) {
    const [c] = await o.claim('w', Date.now(), 60_000, (due) => due.slice(0, 1));
    if (!c) {
      await new Promise((r) => setImmediate(r));
      continue;
    }
    const started = Date.now();
    const status = await post(url, c.event);
    const ok = status >= 200 && status < 300;
    await o.settle(
      {
        id: `wa_${c.event.id}`,
        event_id: c.event.id,
        endpoint_id: c.delivery.endpoint_id,
        created_at: Math.floor(Date.now() / 1000),
        status,
        duration_ms: Date.now() - started,
        response: '',
        error: null,
      },
      { ...c.delivery, attempts: c.delivery.attempts + 1, state: ok ? 'succeeded' : 'failed' },
    );
    delivered++;
    if (!sampled && delivered >= total / 4) {
      sampled = true;
      sample('quarter', { delivered, added: added() });
    }
  }
}

async function deliver(url: string, total: number, old: number): Promise<void> {
  const o = await FileOutbox.open(dataDir!, [], { webhookRetentionMs: RETENTION_MS });
  let added = 0;
  const adding = (async () => {
    for (; added < total; ) {
      const batch = Array.from({ length: Math.min(10, total - added) }, (_, j) => eventOf(added + j, old));
      await o.add(batch);
      added += batch.length;
    }
  })();
  await Promise.all([adding, deliverAll(o, url, total, () => added)]);
  // D-87: nothing is past the retention yet: every event is kept.
  await o.prune(Date.now() - RETENTION_MS);
  sample('delivered', { delivered: total });
  await o.close();
}

async function reopen(total: number): Promise<void> {
  const o = await FileOutbox.open(dataDir!, [], { webhookRetentionMs: RETENTION_MS });
  let known = 0;
  for (let i = 0; i < total; i++) if (o.has(idOf(i))) known++;
  const due = (await o.claim('w', Date.now() + 1000, 60_000, (due) => due)).length;
  const last = await o.event(idOf(total - 1));
  sample('reopened', { known, due, lastBody: last?.body.length ?? 0 });
  // Two days later: the events dated 6 days back are past the retention.
  await o.prune(Date.now() + 2 * DAY_S * 1000 - RETENTION_MS);
  await o.idle();
  let kept = 0;
  for (let i = 0; i < total; i++) if (o.has(idOf(i))) kept++;
  const [newest] = await o.deliveries({ team_id: 'team_demo', limit: 1 });
  sample('pruned', { kept, newestAttempts: newest?.attempts.length ?? 0 });
  await o.close();
}

if (mode === 'deliver') await deliver(rest[0]!, Number(rest[1]), Number(rest[2]));
else if (mode === 'reopen') await reopen(Number(rest[0]));
else throw new Error(`unknown mode ${mode}`);
agent.destroy();
