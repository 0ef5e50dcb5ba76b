// The bench's set-up on the target: the conversations its probes use, the bytes the floor answers
// (captured from the target's own answers), the webhook endpoint of the delivery figure; and the
// clean-up that deletes all of it, whatever happened in between.
import { request } from 'undici';
import { isLoopbackUrl, startReceiver, type Receiver } from '../receiver.ts';
import type { Target } from '../target.ts';
import { frameOf, type Captured } from './floor.ts';
import { FigureError, MESSAGE, type ProbeEnv } from './probes.ts';
import { isTerminal, type Subject } from './wire.ts';

/** What the run made on the target, undone at its end. */
export interface Made {
  conversations: Array<[app: string, id: string]>;
  endpoint?: string;
  session?: Record<string, string>;
  receiver?: Receiver;
}

async function create(target: Subject, made: Made, app: string): Promise<{ id: string; text: string }> {
  const a = await target.send({ method: 'POST', path: `/apps/${app}/conversations`, body: { title: 'parley bench' } });
  if (a.status !== 200) throw new FigureError(`set-up: create a conversation of ${app} answered HTTP ${a.status}`);
  const id = (a.json as { id: string }).id;
  made.conversations.push([app, id]);
  return { id, text: a.text };
}

async function ok(what: string, p: Promise<{ status: number; text: string }>): Promise<string> {
  const a = await p;
  if (a.status !== 200) throw new FigureError(`set-up: ${what} answered HTTP ${a.status}`);
  return a.text;
}

/** A reply cut by its cancel at its first text: the frames before, the terminal frame, the cancel's answer. */
async function captureCancel(target: Subject, app: string, conversation: string): Promise<Partial<Captured>> {
  let cancelled: Promise<{ status: number; text: string }> | undefined;
  const read = await target.stream(
    { method: 'POST', path: `/apps/${app}/conversations/${conversation}`, body: { message: MESSAGE, stream: true } },
    (e, sofar) => {
      const id = sofar.headers['parley-response-id'];
      if (e.type === 'response.output_text.delta' && !cancelled && typeof id === 'string')
        cancelled = target.send({ method: 'POST', path: `/apps/${app}/responses/${id}/cancel` });
      return undefined;
    },
  );
  const firstText = read.events.findIndex((e) => e.type === 'response.output_text.delta');
  const end = read.events.find((e) => isTerminal(e.type));
  if (!cancelled || firstText < 0 || !end) throw new FigureError('set-up: a reply of apps.slow could not be cancelled mid-reply');
  return {
    heldFrames: read.events.slice(0, firstText + 1).map((e) => frameOf(e.type, e.data)),
    cancelledFrame: frameOf(end.type, end.data),
    cancelled: await ok('a cancel', cancelled),
  };
}

/** D-67 and D-81: the target's admin signs in and registers a loopback receiver for conversation.created. */
async function registerEndpoint(target: Target, made: Made, signal?: AbortSignal): Promise<Receiver> {
  const admin = target.admin!;
  const receiver = await startReceiver(`parley-bench-${process.pid}`);
  made.receiver = receiver;
  const signIn = await request(`${admin.baseUrl}/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: admin.email, password: admin.password }),
    signal,
  });
  const body = (await signIn.body.json()) as { csrf_token?: string };
  const cookie = [signIn.headers['set-cookie'] ?? []].flat().find((c) => c.startsWith('parley_session='));
  if (signIn.statusCode !== 200 || !cookie || !body.csrf_token)
    throw new FigureError(`set-up: the admin's sign-in answered HTTP ${signIn.statusCode}`);
  made.session = { cookie: cookie.split(';')[0]!, 'x-csrf-token': body.csrf_token };
  const res = await request(`${admin.baseUrl}/webhook_endpoints`, {
    method: 'POST',
    headers: { ...made.session, 'content-type': 'application/json' },
    body: JSON.stringify({
      app_id: target.appId,
      url: receiver.urlFor('target'),
      events: ['conversation.created'],
      description: 'parley bench',
    }),
    signal,
  });
  const endpoint = (await res.body.json()) as { id?: string };
  if (res.statusCode !== 200 || !endpoint.id)
    throw new FigureError(`set-up: registering the bench's webhook endpoint answered HTTP ${res.statusCode}`);
  made.endpoint = endpoint.id;
  return receiver;
}

/** Waits for the first delivery at `name`'s path that `pred` accepts: its arrival, in the clock of performance.now(). */
async function arrival(receiver: Receiver, name: string, pred: (json: unknown, index: number) => boolean): Promise<number> {
  const path = new URL(receiver.urlFor(name)).pathname;
  const at = (x: { path: string }) => receiver.deliveries.filter((d) => d.path === path).indexOf(x as never);
  const d = await receiver.waitFor((x) => x.path === path && pred(x.json, at(x)), 10_000);
  if (!d) throw new FigureError('no webhook delivery arrived within 10 s');
  return d.arrived;
}

export interface Prepared {
  env: ProbeEnv;
  captured: Captured;
}

/** Makes what the probes use and captures the bytes the floor answers with. */
export async function prepare(
  target: Target,
  subject: Subject,
  made: Made,
  env: Omit<ProbeEnv, 'conversationId' | 'senders'>,
): Promise<Prepared> {
  const app = target.appId;
  const base = `/apps/${app}/conversations`;
  const first = await create(subject, made, app);
  const conversation = await ok('get a conversation', subject.send({ method: 'GET', path: `${base}/${first.id}` }));
  const list = await ok('list conversations', subject.send({ method: 'GET', path: `${base}?limit=20` }));
  const senders: string[] = [];
  for (let i = 0; i < 16; i++) senders.push((await create(subject, made, app)).id);
  const response = await ok(
    'send a message',
    subject.send({ method: 'POST', path: `${base}/${senders[0]}`, body: { message: MESSAGE, stream: false } }),
  );
  const streamed = await subject.stream({ method: 'POST', path: `${base}/${senders[0]}`, body: { message: MESSAGE, stream: true } });
  if (streamed.status !== 200 || !streamed.events.some((e) => isTerminal(e.type)))
    throw new FigureError(`set-up: a streamed send answered HTTP ${streamed.status} without a terminal event`);
  const frames = streamed.events.map((e) => frameOf(e.type, e.data));
  const captured: Captured = {
    conversation,
    list,
    created: first.text,
    response,
    frames,
    heldFrames: frames.slice(0, 2),
    cancelledFrame: frames.at(-1)!,
    cancelled: response,
  };
  const full: ProbeEnv = { ...env, conversationId: first.id, senders };
  const slowApp = target.apps.slow;
  if (slowApp && target.claims.resumable.claimed) {
    const slow = await create(subject, made, slowApp);
    Object.assign(captured, await captureCancel(subject, slowApp, slow.id));
    full.slow = { appId: slowApp, conversationId: slow.id };
  }
  if (target.admin && target.claims.webhooks.claimed && isLoopbackUrl(target.admin.baseUrl)) {
    const receiver = await registerEndpoint(target, made);
    const probe = await create(subject, made, app);
    await arrival(receiver, 'target', (j) => (j as { data?: { id?: string } })?.data?.id === probe.id);
    captured.delivery = receiver.deliveries.at(-1)!.body;
    // The floor sends one delivery per create, whatever it made: the n-th create's is the n-th.
    let floorCreates = 0;
    full.delivery = (s, id) => {
      if (s.name === 'target') return arrival(receiver, 'target', (j) => (j as { data?: { id?: string } })?.data?.id === id);
      const n = floorCreates++;
      return arrival(receiver, 'floor', (_, i) => i === n);
    };
  }
  return { env: full, captured };
}

/** Deletes what the run made on the target, each step on its own so that one failure leaves none of the rest. */
export async function cleanUp(target: Target, subject: Subject, made: Made): Promise<string[]> {
  const problems: string[] = [];
  const queue = [...made.conversations];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let c = queue.shift(); c; c = queue.shift()) {
        const a = await subject.send({ method: 'DELETE', path: `/apps/${c[0]}/conversations/${c[1]}` }).catch(() => ({ status: 0 }));
        if (a.status !== 200 && a.status !== 404) problems.push(`conversation ${c[1]}: delete answered HTTP ${a.status}`);
      }
    }),
  );
  const admin = target.admin;
  if (admin && made.session) {
    for (const [method, path] of [
      ...(made.endpoint ? [['DELETE', `/webhook_endpoints/${made.endpoint}`]] : []),
      ['DELETE', '/sessions/current'],
    ]) {
      const res = await request(`${admin.baseUrl}${path}`, { method: method as 'DELETE', headers: made.session }).catch(() => undefined);
      await res?.body.dump();
      if (!res || res.statusCode >= 300) problems.push(`${method} ${path}: ${res ? `HTTP ${res.statusCode}` : 'unreachable'}`);
    }
  }
  await made.receiver?.close();
  return problems;
}
