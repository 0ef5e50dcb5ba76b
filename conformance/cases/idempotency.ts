// Idempotent retries (docs/reliability.md, after the IETF httpapi draft; D-30 for a cut send message):
// REFERENCE cases of capability `idempotency`. A request sent again with its Idempotency-Key is answered
// as the first was, with Idempotent-Replayed: true, and runs nothing again; the same key on another body
// is 422 idempotency_key_reused; a key that is not one is 400. Each key carries the run's id.
import { randomBytes } from 'node:crypto';
import { CaseSkip, defineCases, show, type CaseContext, type CaseDef } from '../context.ts';
import type { Exchange, OutgoingRequest } from '../http.ts';
import { appPath, convPath, createConversation, expectStream, getConversation, type Json } from './common.ts';

/** A fresh key of the run: a UUID-like string the server has never seen. */
const newKey = (ctx: CaseContext) => `conformance-${ctx.runId}-${randomBytes(8).toString('hex')}`;
const keyed = (r: OutgoingRequest, key: string): OutgoingRequest => ({ ...r, headers: { ...r.headers, 'idempotency-key': key } });

/** The first request with `key` runs; the same again is its replay: same status and body, Idempotent-Replayed: true. */
async function replayed(ctx: CaseContext, r: OutgoingRequest, what: string): Promise<{ first: Exchange; again: Exchange; key: string }> {
  const key = newKey(ctx);
  const first = await ctx.send(keyed(r, key));
  ctx.check(first.status === 200, `${what} with an Idempotency-Key: expected HTTP 200, got ${first.status}`, first);
  ctx.check(
    first.headers.get('idempotent-replayed') !== 'true',
    `${what}: the first request with a new Idempotency-Key says Idempotent-Replayed: true`,
    first,
  );
  const again = await ctx.send(keyed(r, key));
  ctx.check(
    again.status === 200,
    `${what} sent again with its Idempotency-Key: expected HTTP 200 (its replay), got ${again.status}`,
    again,
  );
  ctx.equal(
    again.headers.get('idempotent-replayed'),
    'true',
    `${what} sent again with its Idempotency-Key: the Idempotent-Replayed header`,
    again,
  );
  ctx.equal(again.json, first.json, `${what} sent again with its Idempotency-Key: the answer replayed (nothing runs twice)`, again);
  return { first, again, key };
}

/** The same key on another body is 422 idempotency_key_reused, and runs nothing. */
async function reused(ctx: CaseContext, r: OutgoingRequest, key: string, what: string): Promise<void> {
  const ex = await ctx.send(keyed(r, key));
  ctx.error(ex, `${what} with the key of another request`, { status: 422, type: 'invalid_request_error', code: 'idempotency_key_reused' });
}

export const idempotentCreate: CaseDef[] = defineCases('4.1', [
  {
    id: 'S4.1-idempotency-key',
    level: 'REFERENCE',
    capability: 'idempotency',
    clauses: ['D-30'],
    description:
      'D-30 (Idempotency-Key, docs/reliability.md): a create sent again with its key is replayed (same conversation, Idempotent-Replayed: true) and creates nothing; the key on another body is 422 idempotency_key_reused; a key that is not one ("a b", a comma) is 400 param Idempotency-Key, code invalid_value; none of them creates a conversation',
    async run(ctx) {
      const user = `${ctx.tag}-idem-${randomBytes(4).toString('hex')}`;
      const r: OutgoingRequest = {
        method: 'POST',
        path: convPath(ctx.target.appId),
        body: { external_user_id: user, metadata: ctx.tagMetadata },
      };
      const { key } = await replayed(ctx, r, 'create conversation');
      await reused(
        ctx,
        { ...r, body: { external_user_id: user, title: 'Another body', metadata: ctx.tagMetadata } },
        key,
        'create conversation',
      );
      for (const bad of ['a b', 'a,b'])
        ctx.error(await ctx.send(keyed(r, bad)), `create conversation with Idempotency-Key ${show(bad)}`, {
          status: 400,
          type: 'invalid_request_error',
          param: 'Idempotency-Key',
          code: 'invalid_value',
        });
      const list = await ctx.send({
        method: 'GET',
        path: `${convPath(ctx.target.appId)}?external_user_id=${encodeURIComponent(user)}&limit=100`,
      });
      const data = (ctx.ok(list, ctx.schemas.list, 'list the conversations of the keyed creates') as { data: Json[] }).data;
      ctx.equal(data.length, 1, `conversations of ${user} after a keyed create, its replay, a reused key and two malformed keys`, list);
    },
  },
]);

export const idempotentSend: CaseDef[] = defineCases('4.6', [
  {
    id: 'S4.6-idempotency-key',
    level: 'REFERENCE',
    capability: 'idempotency',
    clauses: ['D-30', 'D-14'],
    description:
      'D-30 (Idempotency-Key, docs/reliability.md): a send message (JSON) sent again with its key is replayed (the same Response, Idempotent-Replayed: true) and the history holds the exchange once; the key on another message is 422 idempotency_key_reused',
    async run(ctx) {
      const { conv } = await createConversation(ctx);
      const r: OutgoingRequest = {
        method: 'POST',
        path: convPath(ctx.target.appId, conv.id),
        body: { message: { content: 'Hello!' }, stream: false },
      };
      const { key, again } = await replayed(ctx, r, 'send message');
      ctx.equal(
        again.headers.get('parley-response-id'),
        (again.json as Json | undefined)?.id,
        'a replayed send message: Parley-Response-Id names the replayed Response (D-31: in both modes, a replay too)',
        again,
      );
      await reused(ctx, { ...r, body: { message: { content: 'Hello again!' }, stream: false } }, key, 'send message');
      const c = await getConversation(ctx, conv.id);
      const users = c.items.filter((i) => i.role === 'user');
      ctx.equal(users.length, 1, 'user messages in the history after a keyed send, its replay and a reused key');
    },
  },
  {
    id: 'S4.6-keyed-retry-continues',
    level: 'REFERENCE',
    capability: 'idempotency',
    needs: ['apps.slow'],
    clauses: ['D-30'],
    description:
      'D-30: a streamed send message of apps.slow cut after response.created, sent again with its Idempotency-Key, continues the same response (the same Parley-Response-Id and id) to response.completed; the history holds it once',
    async run(ctx) {
      if (!ctx.target.claims.resumable.claimed)
        throw new CaseSkip('D-30 continues a resumable response: the target does not claim resumable');
      const app = ctx.app('apps.slow');
      const { conv } = await createConversation(ctx, undefined, app);
      const r = keyed(
        { method: 'POST', path: convPath(app, conv.id), body: { message: { content: 'Hi 🧪 שלום' }, stream: true } },
        newKey(ctx),
      );
      const cut = await ctx.send({ ...r, onEvent: (e) => (e.event === 'response.created' ? 'leave' : undefined) });
      ctx.check(
        cut.sse?.left !== undefined,
        'the reply of apps.slow did not start as a stream the suite could leave after response.created',
        cut,
      );
      const id = String((cut.sse!.events[0]!.json as Json | undefined)?.id ?? '');
      const again = await ctx.send(r);
      const s = expectStream(ctx, again, 'the keyed retry of the cut stream');
      ctx.equal(
        s.types[0],
        'response.created',
        'the keyed retry of a cut stream: its first event (D-30: the events from the first)',
        again,
      );
      ctx.equal(s.payloads[0]?.id, id, 'the keyed retry of a cut stream: the id of its response.created (D-30: the same response)', again);
      // D-31: joined while the reply runs or replayed after it ended, the retry names the same response.
      const named = again.headers.get('parley-response-id');
      ctx.check(
        named === id,
        `the keyed retry of a cut stream names response ${named} in Parley-Response-Id, not ${id} (D-30, D-31)`,
        again,
      );
      ctx.equal(
        s.types.at(-1),
        'response.completed',
        'the keyed retry of a cut stream: its last event (D-30: the response runs to its end)',
        again,
      );
      const c = await getConversation(ctx, conv.id, app);
      ctx.equal(
        c.items.filter((i) => i.role === 'user').length,
        1,
        'user messages in the history after a cut keyed stream and its retry (D-30: nothing runs twice)',
      );
    },
  },
]);

export const idempotentCompletion: CaseDef[] = defineCases('4.7', [
  {
    id: 'S4.7-idempotency-key',
    level: 'REFERENCE',
    capability: 'idempotency',
    clauses: ['D-30'],
    description:
      'D-30 (Idempotency-Key, docs/reliability.md): a completion sent again with its key is replayed (the same completion, Idempotent-Replayed: true); the key on another prompt is 422 idempotency_key_reused',
    async run(ctx) {
      const r: OutgoingRequest = { method: 'POST', path: appPath(ctx.target.appId, 'completions'), body: { prompt: 'Say hello.' } };
      const { key } = await replayed(ctx, r, 'create completion');
      await reused(ctx, { ...r, body: { prompt: 'Say goodbye.' } }, key, 'create completion');
    },
  },
]);
