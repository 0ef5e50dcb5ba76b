// Resumable responses, an extension (docs/responses.md, D-30…D-39): reference-level cases only, so the
// spec profile never asks for it. A cut is a resume from the last event a client saw: the suite reads
// a stream whole, then asks for what follows each of several points, as a client cut there would.
import { LiveResponse, RESPONSE_ID_HEADER, Usage } from '../../src/contract/index.ts';
import { defineCases, show, type CaseContext } from '../context.ts';
import type { Exchange } from '../http.ts';
import { appPath, convPath, createConversation, expectStream, HOSTILE_TEXT, textOf, type Json } from './common.ts';

const QUESTION = `Hello! How do I reset my password? ${HOSTILE_TEXT}`;
const responsePath = (app: string, id: string, rest = '') => appPath(app, `responses/${encodeURIComponent(id)}${rest}`);
const TERMINAL = new Set(['response.completed', 'response.failed']);

/** One streamed reply of the run, for the cases that resume it. */
function streamed(ctx: CaseContext): Promise<{ ex: Exchange; id: string; conversationId: string }> {
  return ctx.once('resumable: a streamed reply', async () => {
    const { conv } = await createConversation(ctx);
    const ex = await ctx.send({
      method: 'POST',
      path: convPath(ctx.target.appId, conv.id),
      body: { message: { content: QUESTION }, stream: true },
    });
    expectStream(ctx, ex, 'conversation stream');
    const id = (ex.sse!.events[0]!.json as Json).id as string;
    return { ex, id, conversationId: conv.id };
  });
}

/** One reply in JSON mode, ended. */
function answered(ctx: CaseContext): Promise<{ ex: Exchange; body: Json; conversationId: string }> {
  return ctx.once('resumable: a reply in JSON mode', async () => {
    const { conv } = await createConversation(ctx);
    const ex = await ctx.send({
      method: 'POST',
      path: convPath(ctx.target.appId, conv.id),
      body: { message: { content: QUESTION }, stream: false },
    });
    const body = ctx.ok(ex, ctx.schemas.response, 'send message') as Json;
    return { ex, body, conversationId: conv.id };
  });
}

/** The text of a stream's deltas, in order. */
export const deltasOf = (ex: Exchange) =>
  ex
    .sse!.events.filter((e) => e.event === 'response.output_text.delta')
    .map((e) => String((e.json as Json).delta))
    .join('');

const eventsOf = (ex: Exchange) => ex.sse!.events.map((e) => ({ event: e.event, data: e.json }));

export const resumable = defineCases('4.6', [
  {
    id: 'S4.6-response-id-header',
    level: 'REFERENCE',
    capability: 'resumable',
    clauses: ['D-31'],
    description: 'D-31: send message names its response in the Parley-Response-Id header, with a stream and in JSON mode',
    async run(ctx) {
      const s = await streamed(ctx);
      ctx.equal(s.ex.headers.get(RESPONSE_ID_HEADER), s.id, `stream: ${RESPONSE_ID_HEADER} header (the id of response.created)`, s.ex);
      const j = await answered(ctx);
      ctx.equal(j.ex.headers.get(RESPONSE_ID_HEADER), j.body.id, `JSON mode: ${RESPONSE_ID_HEADER} header (the response's id)`, j.ex);
    },
  },
  {
    id: 'S4.6-resume-cut-points',
    level: 'REFERENCE',
    capability: 'resumable',
    clauses: ['D-32', 'D-16'],
    description:
      'D-32: a stream cut after any event resumes with exactly the events not yet seen, as first sent, in order, each with its id line, ending with the terminal event; Last-Event-ID wins over starting_after',
    async run(ctx) {
      const s = await streamed(ctx);
      const all = eventsOf(s.ex);
      const n = all.length;
      for (const cut of [...new Set([-1, 0, 1, Math.floor(n / 2), n - 2])].filter((c) => c < n - 1)) {
        const ex = await ctx.send({ method: 'GET', path: responsePath(ctx.target.appId, s.id, `/events?starting_after=${cut}`) });
        expectStream(ctx, ex, `resume after ${cut}`);
        ctx.equal(eventsOf(ex), all.slice(cut + 1), `events after ${cut} compared with the first stream's`, ex);
        ctx.check(TERMINAL.has(ex.sse!.events.at(-1)!.event), `the resume after ${cut} does not end with a terminal event`, ex);
        ctx.equal(
          ex.sse!.events.map((e) => e.id),
          all.slice(cut + 1).map((e) => String((e.data as Json).sequence_number)),
          `id lines of the events after ${cut}`,
          ex,
        );
      }
      const viaHeader = await ctx.send({
        method: 'GET',
        path: responsePath(ctx.target.appId, s.id, '/events?starting_after=0'),
        headers: { 'last-event-id': '1' },
      });
      expectStream(ctx, viaHeader, 'resume with Last-Event-ID');
      ctx.equal(eventsOf(viaHeader), all.slice(2), 'events after Last-Event-ID 1 (the query says 0)', viaHeader);
    },
  },
  {
    id: 'S4.6-response-lookup',
    level: 'REFERENCE',
    capability: 'resumable',
    clauses: ['D-32', 'D-39'],
    description:
      "D-32: GET …/responses/{id} answers the ended Response as send message answered it; D-39: a completed reply's items carry no status",
    async run(ctx) {
      const j = await answered(ctx);
      const ex = await ctx.send({ method: 'GET', path: responsePath(ctx.target.appId, j.body.id as string) });
      const got = ctx.ok(ex, LiveResponse, 'look-up') as Json;
      const { usage: _a, ...want } = j.body;
      const { usage: _b, ...have } = got;
      ctx.equal(have, want, 'the looked-up response compared with the answer of send message', ex);
      const conv = await ctx.send({ method: 'GET', path: convPath(ctx.target.appId, j.conversationId) });
      const items = (ctx.ok(conv, ctx.schemas.conversationWithItems, 'get conversation') as Json).items as Json[];
      ctx.equal(
        items.filter((i) => i.status !== undefined).map((i) => i.status),
        [],
        'status of the items of a completed reply (D-39: none)',
        conv,
      );
    },
  },
  {
    id: 'S4.6-response-not-found',
    level: 'REFERENCE',
    capability: 'resumable',
    clauses: ['D-32'],
    description: "D-32: an unknown response, another app's and another team's are 404 not_found on the look-up, the resume and the cancel",
    needs: ['apps.knowledge_base', 'apps.other_team', 'other_team_api_key'],
    async run(ctx) {
      const j = await answered(ctx);
      const id = j.body.id as string;
      const probes: Array<[string, string, string, string | undefined]> = [
        ['an unknown response', 'GET', responsePath(ctx.target.appId, `${id}x`), undefined],
        ["another app's response", 'GET', responsePath(ctx.app('apps.knowledge_base'), id), undefined],
        ["another app's response (resume)", 'GET', responsePath(ctx.app('apps.knowledge_base'), id, '/events'), undefined],
        ["another app's response (cancel)", 'POST', responsePath(ctx.app('apps.knowledge_base'), id, '/cancel'), undefined],
        ["another team's response", 'GET', responsePath(ctx.app('apps.other_team'), id), ctx.target.otherTeamApiKey],
      ];
      for (const [what, method, path, key] of probes) {
        ctx.error(await ctx.send({ method, path, ...(key ? { key } : {}) }), what, { status: 404, type: 'not_found' });
      }
    },
  },
  {
    id: 'S4.6-cancel-finished',
    level: 'REFERENCE',
    capability: 'resumable',
    clauses: ['D-33'],
    description: 'D-33: cancelling a finished response changes nothing and returns it',
    async run(ctx) {
      const j = await answered(ctx);
      const before = ctx.ok(
        await ctx.send({ method: 'GET', path: responsePath(ctx.target.appId, j.body.id as string) }),
        LiveResponse,
        'look-up',
      ) as Json;
      const ex = await ctx.send({ method: 'POST', path: responsePath(ctx.target.appId, j.body.id as string, '/cancel') });
      const answer = ctx.ok(ex, LiveResponse, 'cancel') as Json;
      ctx.equal(answer.status, before.status, 'status in the answer of cancelling a finished response', ex);
      ctx.equal(answer, before, 'the answer of cancelling a finished response', ex);
      const after = await ctx.send({ method: 'GET', path: responsePath(ctx.target.appId, j.body.id as string) });
      ctx.equal(ctx.ok(after, LiveResponse, 'look-up after the cancel'), before, 'the response after the cancel', after);
    },
  },
  {
    id: 'S4.6-messages-wait-in-line',
    level: 'REFERENCE',
    clauses: ['D-37'],
    description:
      'D-37: two messages sent at once to one conversation both get their reply (the second waits for the first), and the history holds each exchange whole',
    async run(ctx) {
      const { conv } = await createConversation(ctx);
      const send = (content: string) =>
        ctx.send({ method: 'POST', path: convPath(ctx.target.appId, conv.id), body: { message: { content }, stream: false } });
      const [a, b] = await Promise.all([
        send('First question: how do I reset my password?'),
        send('Second question: how do I change my email?'),
      ]);
      const ra = ctx.ok(a!, ctx.schemas.response, 'the first message') as Json;
      const rb = ctx.ok(b!, ctx.schemas.response, 'the second message') as Json;
      const got = await ctx.send({ method: 'GET', path: convPath(ctx.target.appId, conv.id) });
      const items = (ctx.ok(got, ctx.schemas.conversationWithItems, 'get conversation') as Json).items as Json[];
      const ids = items.map((i) => i.response_id);
      // Each exchange whole: its items (the user's message, any function call, the reply) in one run.
      const runs = ids.filter((id, i) => i === 0 || id !== ids[i - 1]);
      ctx.check(
        items.length >= 4 && runs.length === 2 && new Set(runs).size === 2,
        `the exchanges are interleaved in the history: response ids ${JSON.stringify(ids)}`,
        got,
      );
      ctx.equal(
        new Set(ids).size === 2 && new Set(ids).has(ra.id) && new Set(ids).has(rb.id),
        true,
        'the history holds the two responses',
        got,
      );
    },
  },
]);

/**
 * A reply of apps.slow, streamed, with `onEvent` told of each event (to cancel it, or to leave it);
 * `scenario`: sent as `Parley-Scenario` (D-120), for the server to cut the stream itself.
 */
async function slowReply(
  ctx: CaseContext,
  onEvent: (e: { event: string; json: unknown }, i: number, id: string) => 'leave' | undefined,
  scenario?: string,
): Promise<{ ex: Exchange; app: string; id: string; conversationId: string }> {
  const app = ctx.app('apps.slow');
  const { conv } = await createConversation(ctx, undefined, app);
  let id = '';
  const ex = await ctx.send({
    method: 'POST',
    path: convPath(app, conv.id),
    // A greeting: a short reply, so that a slow app ends it within a second or two.
    body: { message: { content: 'Hi 🧪 שלום' }, stream: true },
    ...(scenario ? { headers: { 'parley-scenario': scenario } } : {}),
    onEvent: (e, i) => {
      if (i === 0) id = String((e.json as Json | undefined)?.id ?? '');
      return onEvent(e, i, id);
    },
  });
  ctx.check(ex.sse !== undefined && id !== '', 'the reply of apps.slow did not start as a stream with response.created', ex);
  return { ex, app, id, conversationId: conv.id };
}

export const resumableCorners = defineCases('4.6', [
  {
    id: 'S4.6-resume-bad-cursor',
    level: 'REFERENCE',
    capability: 'resumable',
    clauses: ['D-32'],
    description:
      'D-32: a resume whose starting_after or Last-Event-ID is not the sequence number of an event (letters, a fraction, below -1) is 400 invalid_value, naming it',
    async run(ctx) {
      const s = await streamed(ctx);
      const events = (query: string, headers?: Record<string, string>) =>
        ctx.send({ method: 'GET', path: responsePath(ctx.target.appId, s.id, `/events${query}`), ...(headers ? { headers } : {}) });
      for (const bad of ['abc', '1.5', '-2']) {
        ctx.error(await events(`?starting_after=${encodeURIComponent(bad)}`), `resume with starting_after=${bad}`, {
          status: 400,
          type: 'invalid_request_error',
          param: 'starting_after',
          code: 'invalid_value',
        });
        ctx.error(await events('', { 'last-event-id': bad }), `resume with Last-Event-ID: ${bad}`, {
          status: 400,
          type: 'invalid_request_error',
          param: 'Last-Event-ID',
          code: 'invalid_value',
        });
      }
    },
  },
  {
    id: 'S4.6-cancel-running',
    level: 'REFERENCE',
    capability: 'resumable',
    clauses: ['D-33', 'D-39', 'D-16'],
    needs: ['apps.slow'],
    description:
      'D-33: cancelling a reply of apps.slow while it streams stops it: the cancel answers it failed, {type: request_aborted, code: cancelled}, with the output so far; after that answer no text delta arrives and the open stream ends within 2 s with that response.failed (its payload as D-16 gives it), its text the output kept; a look-up sent as the cancel is answered says the same; D-39: its items carry status incomplete',
    async run(ctx) {
      let cancel: Promise<Exchange> | undefined;
      let look: Promise<Exchange> | undefined;
      let answeredAt = 0;
      const arrived: number[] = [];
      const r = await slowReply(ctx, (e, _i, id) => {
        arrived.push(performance.now());
        // After the first text, so that there is output to keep; the look-up goes out as soon as the cancel is answered.
        if (!cancel && e.event === 'response.output_text.delta') {
          cancel = ctx.send({ method: 'POST', path: responsePath(ctx.app('apps.slow'), id, '/cancel') });
          look = cancel.then(() => {
            answeredAt = performance.now();
            return ctx.send({ method: 'GET', path: responsePath(ctx.app('apps.slow'), id) });
          });
        }
        return undefined;
      });
      expectStream(ctx, r.ex, 'the stream of the cancelled reply');
      if (!cancel || !look) return ctx.fail('the reply of apps.slow carried no text delta to cancel it after', r.ex);
      const answer = await cancel;
      const lookedUp = await look;
      const cancelled = ctx.ok(answer, LiveResponse, 'cancel of a running reply') as Json;
      const stopped = { status: 'failed', error: { type: 'request_aborted', code: 'cancelled' } };
      ctx.equal(
        { status: cancelled.status, error: { type: (cancelled.error as Json)?.type, code: (cancelled.error as Json)?.code } },
        stopped,
        'the answer of the cancel (D-33)',
        answer,
      );
      // D-33: stop means stop. No text after the cancel's answer, and the stream's end within 2 s of it.
      const events = r.ex.sse!.events;
      const late = events.filter((e, i) => e.event === 'response.output_text.delta' && arrived[i]! > answeredAt);
      ctx.check(
        late.length === 0,
        `${late.length} text delta(s) arrived after the cancel's answer: ${show(late.map((e) => (e.json as Json).delta).join(''))} (D-33: a cancel stops the reply)`,
        r.ex,
      );
      const endMs = Math.round(arrived.at(-1)! - answeredAt);
      ctx.check(endMs <= 2000, `the stream's terminal event came ${endMs} ms after the cancel's answer (D-33: within 2 s)`, r.ex);
      const last = events.at(-1)!;
      ctx.equal(last.event, 'response.failed', 'last event of the stream of the cancelled reply', r.ex);
      ctx.shape(last.json, ctx.schemas.events['response.failed'], 'response.failed payload (D-16)', r.ex);
      ctx.equal(((last.json as Json).error as Json)?.code, 'cancelled', 'error.code of its response.failed', r.ex);
      const streamedText = events
        .filter((e) => e.event === 'response.output_text.delta')
        .map((e) => String((e.json as Json).delta))
        .join('');
      const kept = ((cancelled.output as Json[]) ?? []).map((o) => textOf(o)).join('');
      ctx.check(
        kept.length > 0 && streamedText === kept,
        `the cancelled reply kept ${JSON.stringify(kept)}, not the text it had streamed (${JSON.stringify(streamedText)})`,
        answer,
      );
      ctx.equal(
        ctx.ok(lookedUp, LiveResponse, 'look-up of the cancelled reply, sent as the cancel was answered'),
        cancelled,
        "the cancelled reply looked up as soon as the cancel was answered, compared with the cancel's answer (D-33: it is saved before the answer)",
        lookedUp,
      );
      const conv = await ctx.send({ method: 'GET', path: convPath(r.app, r.conversationId) });
      const items = ((ctx.ok(conv, ctx.schemas.conversationWithItems, 'get conversation') as Json).items as Json[]).filter(
        (i) => i.response_id === r.id && i.role !== 'user',
      );
      ctx.check(
        items.length > 0 && items.every((i) => i.status === 'incomplete'),
        `the items of the cancelled reply say ${JSON.stringify(items.map((i) => i.status))}, not incomplete (D-39)`,
        conv,
      );
    },
  },
  {
    id: 'S4.6-left-reply-runs-on',
    level: 'REFERENCE',
    capability: 'resumable',
    uses: ['scenarios'],
    clauses: ['D-34', 'D-32'],
    needs: ['apps.slow'],
    description:
      'D-34: a client that leaves a stream of apps.slow mid-reply does not stop it: resumed after the last event it saw, the reply goes on to response.completed, and the look-up says completed, its text the one the two streams carried; a target with scenarios cuts the stream itself (drop-after=2, docs/scenarios.md) instead of the suite racing the reply',
    async run(ctx) {
      // With scenarios the server cuts the stream after its 2nd event; without, the suite leaves at the first delta it sees.
      const byServer = ctx.target.claims.scenarios.claimed;
      const r = byServer
        ? await slowReply(ctx, () => undefined, 'drop-after=2')
        : await slowReply(ctx, (e) => (e.event === 'response.output_text.delta' ? 'leave' : undefined));
      if (byServer)
        ctx.check(
          r.ex.sse?.ended === false && r.ex.sse.events.length === 2,
          'drop-after=2 did not cut the stream after its 2nd event',
          r.ex,
        );
      else ctx.check(r.ex.sse?.left !== undefined, 'the stream ended before the suite could leave it mid-reply', r.ex);
      const seen = r.ex.sse!.events.length;
      const rest = await ctx.send({ method: 'GET', path: responsePath(r.app, r.id, `/events?starting_after=${seen - 1}`) });
      expectStream(ctx, rest, 'the resume after the client left');
      ctx.equal(rest.sse!.events.at(-1)?.event, 'response.completed', 'last event of the reply the client left (D-34: it runs on)', rest);
      const look = await ctx.send({ method: 'GET', path: responsePath(r.app, r.id) });
      const ended = ctx.ok(look, LiveResponse, 'look-up of the reply the client left') as Json;
      ctx.equal(ended.status, 'completed', 'status of the reply the client left', look);
      ctx.equal(
        deltasOf(r.ex) + deltasOf(rest),
        ((ended.output as Json[]) ?? []).map(textOf).join(''),
        'the text of the two streams, against the look-up (each delta once)',
        rest,
      );
    },
  },
  {
    id: 'S4.6-usage-totals',
    level: 'REFERENCE',
    clauses: ['D-16', 'D-17'],
    description:
      'token usage (docs/agent.md), on the JSON answers (D-17) and the terminal events (D-16) of send message and completion: total_tokens is input_tokens + output_tokens',
    async run(ctx) {
      const j = await answered(ctx);
      const s = await streamed(ctx);
      const completion = await ctx.send({
        method: 'POST',
        path: appPath(ctx.target.appId, 'completions'),
        body: { prompt: `Write one sentence welcoming a new customer. ${HOSTILE_TEXT}` },
      });
      const found: Array<[string, unknown, Exchange]> = [
        ['send message (JSON)', j.body.usage, j.ex],
        ['send message (stream), response.completed', (s.ex.sse!.events.at(-1)?.json as Json | undefined)?.usage, s.ex],
        ['create completion (JSON)', (ctx.ok(completion, ctx.schemas.completion, 'create completion') as Json).usage, completion],
      ];
      for (const [where, usage, ex] of found) {
        const u = ctx.shape(usage, Usage, `${where}: usage`, ex);
        ctx.equal(
          u.total_tokens,
          u.input_tokens + u.output_tokens,
          `${where}: usage.total_tokens (input_tokens + output_tokens = ${u.input_tokens} + ${u.output_tokens})`,
          ex,
        );
      }
    },
  },
]);
