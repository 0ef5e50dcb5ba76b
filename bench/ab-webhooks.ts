// `npm run bench -- --ab <git ref> --webhooks [--rounds N]`: bench/webhooks.ts's figures for the working
// tree (B) and a commit (A) side by side, in alternating rounds (A then B, B then A, …): events
// delivered a second to one endpoint, and a send message's latency one at a time without and with
// three endpoints subscribed to every event. Each side is Parley as `npm start` runs it on the file
// store, with the same fixtures, and a receiver of its own; B ÷ A is the median of the rounds' ratios.
import fs from 'node:fs/promises';
import path from 'node:path';
import { type AbOptions, checkoutA } from './ab.ts';
import type { Child } from './child.ts';
import { benchFixtures } from './data.ts';
import { percentile } from './measure.ts';
import { clientsOf, deliveryRate, type Receiver, sendRound, startReceiver, startWebhooksParley } from './webhooks.ts';

/** Creates a round, for the events a second (one endpoint). */
const EVENTS = 500;
/** Send messages a round, each without and with the three endpoints. */
const SENDS = 50;

interface Side {
  name: 'A' | 'B';
  child: Child;
  receiver: Receiver;
  clients: Awaited<ReturnType<typeof clientsOf>>;
  rate: number[];
  without: number[];
  with: number[];
  /** Per round: the send p50 without endpoints, and the time the three add at the median. */
  sendP50: number[];
  added: number[];
  /** Server CPU (µs) per send with the three endpoints: the round's whole work over its sends. */
  cpu: number[];
}

const med = (v: number[]) => percentile(v, 50);

async function side(name: 'A' | 'B', dataDir: string, fixtures: string, tree?: string): Promise<Side> {
  await fs.mkdir(dataDir, { recursive: true });
  const child = await startWebhooksParley(dataDir, fixtures, tree);
  const receiver = await startReceiver();
  const clients = await clientsOf(`http://127.0.0.1:${child.ready.port}`);
  return { name, child, receiver, clients, rate: [], without: [], with: [], sendP50: [], added: [], cpu: [] };
}

/** One round of one side: the delivery rate, then a round of sends without and with the endpoints. */
async function round(s: Side): Promise<void> {
  s.rate.push((await deliveryRate(s.clients, s.receiver, EVENTS)).eventsPerSecond);
  const without: number[] = [];
  const withThree: number[] = [];
  const cpuUs = async () => (await s.child.ask<{ cpuUs: number }>('stats')).cpuUs;
  const before = await cpuUs();
  await sendRound(s.clients, s.receiver, SENDS, without, withThree);
  s.cpu.push(((await cpuUs()) - before) / (2 * SENDS));
  s.without.push(...without);
  s.with.push(...withThree);
  s.sendP50.push(med(without));
  s.added.push(med(withThree) - med(without));
}

export async function runAbWebhooks(o: AbOptions): Promise<void> {
  const { log } = o;
  const { sha, treeA } = await checkoutA(o.ref, log);
  const fixtures = await benchFixtures(path.join(o.tmp, 'fixtures'));
  const sides: Side[] = [];
  try {
    sides.push(await side('A', path.join(o.tmp, 'side-a'), fixtures, treeA));
    sides.push(await side('B', path.join(o.tmp, 'side-b'), fixtures));
    const [a, b] = sides as [Side, Side];
    log(`webhooks, ${o.rounds} rounds, each side: ${EVENTS} creates to one endpoint, ${SENDS} sends without and ${SENDS} with three`);
    for (let r = 0; r < o.rounds; r++) {
      for (const s of r % 2 === 0 ? [a, b] : [b, a]) await round(s);
      log(
        `  round ${r + 1}/${o.rounds}: events/s A ${a.rate.at(-1)!.toFixed(0)}, B ${b.rate.at(-1)!.toFixed(0)}; send p50 A ${a.sendP50.at(-1)!.toFixed(2)}, B ${b.sendP50.at(-1)!.toFixed(2)} ms; added by three endpoints A ${a.added.at(-1)!.toFixed(2)}, B ${b.added.at(-1)!.toFixed(2)} ms`,
      );
    }
    const ratio = (f: (s: Side) => number[]) => med(f(b).map((v, i) => v / f(a)[i]!)).toFixed(2);
    log(`\nA = ${o.ref} (${sha.slice(0, 10)}), B = the working tree; file store, webhooks`);
    log('| figure | A | B | B ÷ A (median of rounds) |');
    log('|---|---|---|---|');
    log(
      `| events delivered a second to one endpoint (higher is better) | ${med(a.rate).toFixed(0)} | ${med(b.rate).toFixed(0)} | ${ratio((s) => s.rate)} |`,
    );
    log(
      `| send message p50, no endpoint (ms) | ${med(a.without).toFixed(2)} | ${med(b.without).toFixed(2)} | ${ratio((s) => s.sendP50)} |`,
    );
    log(`| send message p50, three endpoints (ms) | ${med(a.with).toFixed(2)} | ${med(b.with).toFixed(2)} | |`);
    log(`| latency three endpoints add at the median (ms, median of rounds) | ${med(a.added).toFixed(2)} | ${med(b.added).toFixed(2)} | |`);
    log(
      `| server CPU per send, half without, half with three endpoints (µs) | ${med(a.cpu).toFixed(0)} | ${med(b.cpu).toFixed(0)} | ${ratio((s) => s.cpu)} |`,
    );
  } finally {
    await Promise.all(sides.map((s) => s.child.stop()));
    for (const s of sides) s.receiver.stop();
  }
}
