// What one round measures on one subject. A probe asks the target and its floor the same requests
// through the same code (wire.ts) and yields its figures' values for that round: a latency's median
// over its samples, or a throughput over a fixed number of requests.
import { WEBHOOK_TITLE } from './floor.ts';
import { isTerminal, type Subject, type TimedEvent } from './wire.ts';

export class FigureError extends Error {
  override name = 'FigureError';
}

/** What the probes need of the run: ids made at set-up, and sizes. */
export interface ProbeEnv {
  appId: string;
  /** A conversation of `appId` to read, and one per concurrent sender. */
  conversationId: string;
  senders: string[];
  /** The app whose replies are slow enough to cancel mid-reply, and a conversation of it. */
  slow?: { appId: string; conversationId: string };
  /** The last streamed reply of each subject, resumed by the resume probe. */
  lastResponse: Map<string, string>;
  /** Conversations made by a create figure, deleted after it (outside the measured time). */
  made: (subject: Subject, ids: string[]) => Promise<void>;
  /** Waits for the webhook delivery of the conversation `id` made on `subject`; its arrival time. */
  delivery?: (subject: Subject, id: string) => Promise<number>;
  samples: number;
  requests: { read: number; write: number };
}

export type Values = Record<string, number>;

export interface Probe {
  id: string;
  /** The figures it yields: id, what it measures, and its unit. */
  figures: Array<{ id: string; title: string; unit: 'ms' | 'req/s' }>;
  /** Why it cannot run against this target (undefined: it can). */
  skip?: (env: ProbeEnv) => string | undefined;
  run(subject: Subject, env: ProbeEnv): Promise<Values>;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function expectOk(what: string, status: number): void {
  if (status < 200 || status > 299) throw new FigureError(`${what} answered HTTP ${status}`);
}

function responseIdOf(headers: Record<string, string | string[] | undefined>, events: TimedEvent[]): string | undefined {
  const h = headers['parley-response-id'];
  if (typeof h === 'string') return h;
  const created = events.find((e) => e.type === 'response.created');
  try {
    return (JSON.parse(created?.data ?? '{}') as { response?: { id?: string } }).response?.id;
  } catch {
    return undefined;
  }
}

const TEXT = 'response.output_text.delta';

/** What every send of the bench says (§2.2). */
export const MESSAGE = { content: 'Hello' };

const stream: Probe = {
  id: 'stream',
  figures: [
    { id: 'first_event', title: 'streamed send: first event', unit: 'ms' },
    { id: 'first_text', title: 'streamed send: first text', unit: 'ms' },
  ],
  async run(s, env) {
    const first: number[] = [];
    const text: number[] = [];
    for (let i = 0; i < env.samples; i++) {
      const read = await s.stream({
        method: 'POST',
        path: `/apps/${env.appId}/conversations/${env.conversationId}`,
        body: { message: MESSAGE, stream: true },
      });
      expectOk('a streamed send', read.status);
      const t = read.events.find((e) => e.type === TEXT);
      if (!read.events[0] || !t) throw new FigureError('a streamed send wrote no text delta');
      first.push(read.events[0].at);
      text.push(t.at);
      const id = responseIdOf(read.headers, read.events);
      if (id) env.lastResponse.set(s.name, id);
    }
    return { first_event: median(first), first_text: median(text) };
  },
};

const resume: Probe = {
  id: 'resume',
  figures: [{ id: 'resume', title: 'resume: first replayed event', unit: 'ms' }],
  async run(s, env) {
    const id = env.lastResponse.get(s.name);
    if (!id) throw new FigureError('no streamed reply named its response (Parley-Response-Id) to resume');
    const times: number[] = [];
    for (let i = 0; i < env.samples; i++) {
      const read = await s.stream({ method: 'GET', path: `/apps/${env.appId}/responses/${id}/events?starting_after=0` }, () => 'stop');
      expectOk('a resume', read.status);
      if (!read.events[0]) throw new FigureError('a resume wrote no event');
      times.push(read.events[0].at);
    }
    return { resume: median(times) };
  },
};

const cancel: Probe = {
  id: 'cancel',
  figures: [{ id: 'cancel', title: 'cancel: to the terminal event', unit: 'ms' }],
  skip: (env) => (env.slow ? undefined : 'needs target key apps.slow and capability resumable'),
  async run(s, env) {
    const slow = env.slow!;
    const times: number[] = [];
    for (let i = 0; i < Math.min(env.samples, 3); i++) {
      let sentAt: number | undefined;
      let cancelling: Promise<unknown> | undefined;
      const read = await s.stream(
        { method: 'POST', path: `/apps/${slow.appId}/conversations/${slow.conversationId}`, body: { message: MESSAGE, stream: true } },
        (e, sofar) => {
          if (e.type === TEXT && sentAt === undefined) {
            const id = responseIdOf(sofar.headers, sofar.events);
            if (!id) throw new FigureError('the reply named no response id to cancel');
            sentAt = e.at;
            cancelling = s.send({ method: 'POST', path: `/apps/${slow.appId}/responses/${id}/cancel` });
          }
          return undefined;
        },
      );
      await cancelling;
      const end = read.events.find((e) => isTerminal(e.type));
      if (sentAt === undefined || !end) throw new FigureError('the reply ended before its cancel, or without a terminal event');
      if (end.type !== 'response.failed')
        throw new FigureError('the reply completed before its cancel took effect: the slow app replies too fast');
      times.push(end.at - sentAt);
    }
    return { cancel: median(times) };
  },
};

/** `total` requests, `concurrency` at a time; requests a second over the whole batch. */
async function throughput(total: number, concurrency: number, one: (worker: number) => Promise<void>): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (next++ < total) await one(worker);
    }),
  );
  return total / ((performance.now() - start) / 1000);
}

function throughputProbe(op: 'get' | 'list' | 'create' | 'send', concurrency: number): Probe {
  const id = `${op}_c${concurrency}`;
  const titles = { get: 'get a conversation', list: 'list conversations', create: 'create a conversation', send: 'send a message (JSON)' };
  return {
    id,
    figures: [{ id, title: `${titles[op]}, ${concurrency} at a time`, unit: 'req/s' }],
    async run(s, env) {
      const base = `/apps/${env.appId}/conversations`;
      if (op === 'get' || op === 'list') {
        const path = op === 'get' ? `${base}/${env.conversationId}` : `${base}?limit=20`;
        return {
          [id]: await throughput(env.requests.read, concurrency, async () => {
            expectOk(`${op}`, (await s.send({ method: 'GET', path })).status);
          }),
        };
      }
      if (op === 'create') {
        const ids: string[] = [];
        try {
          const rps = await throughput(env.requests.write, concurrency, async () => {
            const a = await s.send({ method: 'POST', path: base, body: { title: 'bench' } });
            expectOk('create', a.status);
            ids.push((a.json as { id: string }).id);
          });
          return { [id]: rps };
        } finally {
          await env.made(s, ids);
        }
      }
      // Each worker sends to its own conversation: two sends at once to one would meet its busy rule.
      return {
        [id]: await throughput(env.requests.write, concurrency, async (worker) => {
          const conversation = env.senders[worker]!;
          const a = await s.send({ method: 'POST', path: `${base}/${conversation}`, body: { message: MESSAGE, stream: false } });
          expectOk('send', a.status);
        }),
      };
    },
  };
}

const webhook: Probe = {
  id: 'webhook',
  figures: [{ id: 'webhook', title: 'webhook: from a create request to its delivery', unit: 'ms' }],
  skip: (env) => (env.delivery ? undefined : 'needs capability webhooks, target key admin, and a target on loopback'),
  async run(s, env) {
    const times: number[] = [];
    const ids: string[] = [];
    try {
      for (let i = 0; i < Math.min(env.samples, 3); i++) {
        const sent = performance.now();
        const a = await s.send({ method: 'POST', path: `/apps/${env.appId}/conversations`, body: { title: WEBHOOK_TITLE } });
        expectOk('create', a.status);
        const id = (a.json as { id: string }).id;
        ids.push(id);
        // From the request, not its answer: a delivery may arrive before the answer is read.
        times.push((await env.delivery!(s, id)) - sent);
      }
    } finally {
      await env.made(s, ids);
    }
    return { webhook: median(times) };
  },
};

/** Every probe, in the order a round runs them (the resume probe reads the stream probe's reply). */
export const PROBES: Probe[] = [
  stream,
  resume,
  cancel,
  webhook,
  ...(['get', 'list', 'create', 'send'] as const).flatMap((op) => [throughputProbe(op, 1), throughputProbe(op, 16)]),
];
