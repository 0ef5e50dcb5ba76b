// Webhooks, as Parley sends them (docs/webhooks.md, D-80…D-89): REFERENCE cases of capability
// `webhooks`, with the target's `admin`. The suite runs a receiver (conformance/receiver.ts), registers
// it as an endpoint of app_id on the admin surface, provokes events through the API and judges what
// arrives: the Standard Webhooks headers and the signature under the secret derived from api_key, the
// events and their payloads, a retry after a 500, a 410 that disables the endpoint. Every endpoint a
// case registers is deleted when it ends, and by the runner at the end of the run (D-109, extended).
import { z } from 'zod';
import { WebhookDeliveryView, WebhookEndpointView } from '../../src/contract/admin-webhooks.ts';
import { CaseSkip, defineCases, show, type CaseContext, type CaseDef } from '../context.ts';
import type { Exchange } from '../http.ts';
import { checkSignature, isLoopbackUrl, startReceiver, type Answerer, type Delivery, type Receiver } from '../receiver.ts';
import { appPath, convPath, createConversation, HOSTILE_TEXT, type Json } from './common.ts';

type Endpoint = z.infer<typeof WebhookEndpointView>;
const DeliveryList = z.object({ data: z.array(WebhookDeliveryView) });

/** D-109, extended: the receiver, started once a run; skipped where the implementation cannot reach it. */
async function receiverOf(ctx: CaseContext): Promise<Receiver> {
  const w = ctx.webhooks;
  if (!w.receiverUrl && !isLoopbackUrl(ctx.target.baseUrl))
    throw new CaseSkip(
      `the receiver listens on loopback, which an implementation at ${new URL(ctx.target.baseUrl).host} cannot reach: pass --receiver-url with an address it can reach`,
    );
  w.receiver ??= await startReceiver(`parley-conformance-${ctx.runId}`, w.receiverUrl).catch((err: Error) =>
    ctx.fail(`the webhook receiver could not listen${w.receiverUrl ? ` at ${w.receiverUrl}` : ''}: ${err.message}`),
  );
  return w.receiver;
}

/** The report shows neither the admin's password nor the session's cookie, sent or set. */
function hideSecrets(ex: Exchange): Exchange {
  const req = ex.request;
  const headers = { ...req.headers, ...(req.headers.cookie ? { cookie: 'parley_session=(hidden)' } : {}) };
  let body = req.body;
  if (body?.includes('"password"')) body = JSON.stringify({ ...(JSON.parse(body) as Json), password: '$ADMIN_PASSWORD' });
  const answered = new Headers(ex.headers);
  if (answered.has('set-cookie')) answered.set('set-cookie', 'parley_session=(hidden)');
  return { ...ex, request: { ...req, headers, ...(body !== undefined ? { body } : {}) }, headers: answered };
}

/** D-67: the target's admin signs in once a run; the runner signs out at its end. */
async function adminSession(ctx: CaseContext): Promise<Record<string, string>> {
  const w = ctx.webhooks;
  if (w.session) return w.session;
  const admin = ctx.target.admin;
  if (!admin) throw new CaseSkip('needs target key admin');
  let cookie: string | undefined;
  const ex = await ctx.send(
    { method: 'POST', path: '/sessions', baseUrl: admin.baseUrl, key: null, body: { email: admin.email, password: admin.password } },
    (sent) => {
      cookie = sent.headers.getSetCookie().find((c) => c.startsWith('parley_session='));
      return hideSecrets(sent);
    },
  );
  const body = ctx.ok(ex, z.looseObject({ csrf_token: z.string().min(1) }), `sign-in of the target's admin ${admin.email} (D-67)`);
  if (!cookie) ctx.fail("sign-in of the target's admin: no parley_session cookie was set (D-67)", ex);
  w.session = { cookie: cookie.split(';')[0]!, 'x-csrf-token': body.csrf_token };
  return w.session;
}

/** A request to the admin surface, as the signed-in admin. */
async function admin(ctx: CaseContext, method: string, path: string, body?: unknown): Promise<Exchange> {
  const headers = await adminSession(ctx);
  return ctx.send({ method, path, body, key: null, baseUrl: ctx.target.admin!.baseUrl, headers }, hideSecrets);
}

const KeyList = z.object({
  data: z.array(z.looseObject({ id: z.string(), type: z.string(), redacted: z.string(), revoked_at: z.unknown() })),
  has_more: z.boolean().optional(),
  last_id: z.string().nullable().optional(),
});

/**
 * D-150: the id of api_key among the team's keys (`GET /admin/v1/keys`), known by its listed form (D-70:
 * its prefix, an ellipsis, its last four characters): the endpoints the suite registers are signed with it.
 */
async function ownKeyId(ctx: CaseContext): Promise<string> {
  const key = ctx.target.apiKey;
  const listed = `${key.slice(0, key.indexOf('_', 3) + 1)}…${key.slice(-4)}`;
  // D-173: the list comes a page at a time; every page is read (a cursor seen twice ends the walk).
  const found: z.infer<typeof KeyList>['data'] = [];
  let ex: Exchange;
  for (let after: string | undefined; ; ) {
    ex = await admin(ctx, 'GET', after === undefined ? '/keys' : `/keys?after=${encodeURIComponent(after)}`);
    const page = ctx.ok(ex, KeyList, "list the team's keys (D-70, D-173)");
    found.push(...page.data.filter((k) => k.type === 'secret' && k.redacted === listed && k.revoked_at === null));
    if (!page.has_more || !page.last_id || page.last_id === after) break;
    after = page.last_id;
  }
  if (found.length !== 1)
    ctx.fail(
      `api_key (${listed}) is ${found.length === 0 ? 'not' : 'more than once'} among the working secret keys of the admin's team (D-150 signs an endpoint with one named key)`,
      ex,
    );
  return found[0]!.id;
}

interface Hook {
  endpoint: Endpoint;
  /** The receiver's path of this endpoint. */
  path: string;
  receiver: Receiver;
}

/**
 * D-81: registers the receiver as an endpoint of app_id for `events`, answering as `answer` says; runs
 * `fn` with it, then deletes it (the runner deletes it too if this deletion does not happen).
 */
async function withEndpoint(
  ctx: CaseContext,
  name: string,
  events: string[],
  answer: Answerer | undefined,
  fn: (h: Hook) => Promise<void>,
) {
  const receiver = await receiverOf(ctx);
  if (answer) receiver.answer(name, answer);
  const url = receiver.urlFor(name);
  const signing_key_id = await ownKeyId(ctx);
  const ex = await admin(ctx, 'POST', '/webhook_endpoints', {
    app_id: ctx.target.appId,
    url,
    events,
    description: ctx.runId,
    signing_key_id,
  });
  const made = ctx.ok(ex, WebhookEndpointView, 'register the receiver as a webhook endpoint (D-81)');
  ctx.webhooks.endpoints.push(made.id);
  ctx.check(made.enabled, `a new endpoint is enabled (D-81), got ${show(made)}`, ex);
  ctx.check(
    made.signing_key_id === signing_key_id && made.signing_key_state === 'active',
    `a new endpoint is signed with the key it names (D-150: signing_key_id ${signing_key_id}, active), got ${show(made)}`,
    ex,
  );
  // D-115: an endpoint is changed with PATCH; its answer is the endpoint as changed.
  const description = `conformance run ${ctx.runId}: ${ctx.caseDef.id}`;
  const patched = await admin(ctx, 'PATCH', `/webhook_endpoints/${encodeURIComponent(made.id)}`, { description });
  const endpoint = ctx.ok(patched, WebhookEndpointView, 'describe the endpoint with PATCH (D-115)');
  ctx.check(
    endpoint.id === made.id && endpoint.description === description,
    `PATCH changes the endpoint's description (D-115), got ${show(endpoint)}`,
    patched,
  );
  // D-78: answered, the endpoint is in effect on every instance, so a change made next through any of them sends its event.
  await fn({ endpoint, path: new URL(url).pathname, receiver });
  const del = await admin(ctx, 'DELETE', `/webhook_endpoints/${encodeURIComponent(endpoint.id)}`);
  ctx.check(del.status === 200, `deleting the endpoint the case registered: expected HTTP 200, got ${del.status} (D-81)`, del);
  ctx.webhooks.endpoints.splice(ctx.webhooks.endpoints.indexOf(endpoint.id), 1);
}

/** A delivery, shortly, for a failure message. */
function showDelivery(d: Delivery): string {
  const h = ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((k) => `${k}: ${d.headers[k] ?? '(none)'}`).join(', ');
  return `${d.method} ${d.path} [${h}] answered ${d.answered}, body ${d.body.length > 300 ? `${d.body.slice(0, 300)}…` : d.body}`;
}

const eventOf = (d: Delivery) => (d.json && typeof d.json === 'object' ? (d.json as Json) : {});
const dataOf = (d: Delivery) => (eventOf(d).data && typeof eventOf(d).data === 'object' ? (eventOf(d).data as Json) : {});

/** The first delivery to `h` of an event of `type` about resource `id`, waited for up to --settle-timeout. */
async function delivery(ctx: CaseContext, h: Hook, type: string, id: string): Promise<Delivery> {
  const d = await h.receiver.waitFor(
    (x) => x.path === h.path && eventOf(x).type === type && dataOf(x).id === id,
    ctx.settleTimeoutMs,
    ctx.signal,
  );
  if (d) return d;
  const others = h.receiver.deliveries.filter((x) => x.path === h.path);
  return ctx.fail(
    `no ${type} event about ${id} reached the endpoint within --settle-timeout ${ctx.settleTimeoutMs} ms (D-83, D-85)${others.length > 0 ? `; it got ${others.length}: ${others.slice(-3).map(showDelivery).join('; ')}` : ''}`,
  );
}

/** D-80: a POST of the event's JSON with the three headers, the id the event's, the time whole seconds now, a signature under S. */
function checkHeaders(ctx: CaseContext, d: Delivery, what: string): void {
  const at = `${what}: ${showDelivery(d)}`;
  ctx.check(d.method === 'POST', `${what} is a ${d.method}, not a POST (D-80)`);
  ctx.check(
    /^application\/json\b/i.test(d.headers['content-type'] ?? ''),
    `${what}: content-type ${show(d.headers['content-type'])}, not application/json (D-80: the event's JSON)`,
  );
  for (const k of ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
    ctx.check(d.headers[k], `${what} has no ${k} header (D-80, Standard Webhooks) — ${at}`);
  ctx.check(d.json !== undefined, `${what}: the body is not JSON — ${at}`);
  ctx.equal(eventOf(d).id, d.headers['webhook-id'], `${what}: the event's id is its webhook-id (D-80, D-83)`);
  const ts = d.headers['webhook-timestamp']!;
  ctx.check(/^\d+$/.test(ts), `${what}: webhook-timestamp ${show(ts)} is not whole Unix seconds (D-80)`);
  ctx.check(
    Math.abs(Number(ts) - d.at / 1000) <= 300,
    `${what}: webhook-timestamp ${ts} is not the attempt's time: it arrived at ${Math.floor(d.at / 1000)} (D-80; a receiver refuses more than 5 minutes apart)`,
  );
  const wrong = checkSignature(ctx.target.apiKey, d.headers, d.body);
  if (wrong) ctx.fail(`${what}: ${wrong} (D-80) — ${at}`);
}

/** D-83: the envelope of an event of `type` about the app, made between `since` and now. */
function checkEnvelope(ctx: CaseContext, d: Delivery, type: string, since: number): Json {
  const e = eventOf(d);
  const what = `the ${type} event`;
  ctx.equal(Object.keys(e).sort(), ['app_id', 'created_at', 'data', 'id', 'object', 'type'], `${what}: its fields (D-83)`);
  ctx.check(/^evt_/.test(String(e.id)), `${what}: id ${show(e.id)} does not start with evt_ (D-83, D-7)`);
  ctx.equal(e.object, 'event', `${what}: object (D-83)`);
  ctx.equal(e.type, type, `${what}: type (D-83)`);
  ctx.equal(e.app_id, ctx.target.appId, `${what}: app_id (D-83)`);
  const now = Math.ceil(Date.now() / 1000);
  ctx.check(
    Number.isInteger(e.created_at) && (e.created_at as number) >= since - 2 && (e.created_at as number) <= now + 2,
    `${what}: created_at ${show(e.created_at)} is not the Unix time of the change in seconds (between ${since} and ${now}, D-83)`,
  );
  return e.data as Json;
}

/** D-83: `data` is the resource as the API showed it: each field the API answered, with the same value. */
function checkData(ctx: CaseContext, data: Json, shown: Json, fields: string[], what: string, ex: Exchange): void {
  // D-83 (revised): a response's output items too, key for key: no stored item's id or created_at.
  for (const f of fields) ctx.equal(data[f], shown[f], `${what}: data.${f} is the API's (D-83)`, ex);
}

const CONVERSATION_FIELDS = ['id', 'object', 'created_at', 'external_user_id', 'title', 'generated_title', 'metadata'];
const RESPONSE_FIELDS = ['id', 'object', 'created_at', 'conversation_id', 'output', 'status', 'usage'];

export const webhooks: CaseDef[] = defineCases('5.5', [
  {
    id: 'S5.5-webhook-signature',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      'D-80: a delivery (conversation.created, to an endpoint the suite registers) is a POST of the event\'s JSON with webhook-id (the event\'s id), webhook-timestamp (whole seconds, now) and webhook-signature, one of whose "v1," signatures is the HMAC-SHA256 of "{id}.{timestamp}.{body}" under the secret derived from api_key; D-150: the endpoint, registered for api_key\'s key (signing_key_id, found in GET /admin/v1/keys by its listed form), shows that key, active',
    clauses: ['D-80', 'D-81', 'D-150'],
    async run(ctx) {
      await withEndpoint(ctx, 'signature', ['conversation.created'], undefined, async (h) => {
        const { conv } = await createConversation(ctx);
        checkHeaders(ctx, await delivery(ctx, h, 'conversation.created', conv.id), 'the delivery of conversation.created');
      });
    },
  },
  {
    id: 'S5.5-webhook-events',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      'D-83: create, rename, send message, completion and delete each send their event (conversation.created/updated, response.completed, completion.completed, conversation.deleted) to an endpoint that asked for them: {id: the webhook-id, evt_…, object "event", type, created_at, app_id, data}, data the resource as the API answered it (deleted: true on a deletion), each signed (D-80)',
    clauses: ['D-83', 'D-80', 'D-81'],
    async run(ctx) {
      const types = ['conversation.created', 'conversation.updated', 'conversation.deleted', 'response.completed', 'completion.completed'];
      await withEndpoint(ctx, 'events', types, undefined, async (h) => {
        const since = Math.floor(Date.now() / 1000);
        const app = ctx.target.appId;
        const { ex: created, conv } = await createConversation(ctx);
        const renamed = await ctx.send({ method: 'PATCH', path: convPath(app, conv.id), body: { title: `Webhook ${HOSTILE_TEXT}` } });
        const afterRename = ctx.ok(renamed, ctx.schemas.conversation, 'rename the conversation') as Json;
        const sent = await ctx.send({
          method: 'POST',
          path: convPath(app, conv.id),
          body: { message: { content: 'Hello!' }, stream: false },
        });
        const response = ctx.ok(sent, ctx.schemas.response, 'send message') as Json;
        const completed = await ctx.send({ method: 'POST', path: appPath(app, 'completions'), body: { prompt: 'Say hello.' } });
        const completion = ctx.ok(completed, ctx.schemas.completion, 'create completion') as Json;
        const deleted = await ctx.send({ method: 'DELETE', path: convPath(app, conv.id) });
        ctx.check(deleted.status === 200, `delete conversation: expected HTTP 200, got ${deleted.status}`, deleted);
        const ids = new Set<string>();
        const judge = async (type: string, id: string, shown: Json, fields: string[], ex: Exchange) => {
          const d = await delivery(ctx, h, type, id);
          checkHeaders(ctx, d, `the delivery of ${type}`);
          const data = checkEnvelope(ctx, d, type, since);
          checkData(ctx, data, shown, fields, `the ${type} event`, ex);
          ids.add(String(eventOf(d).id));
          return data;
        };
        await judge('conversation.created', conv.id, conv as Json, CONVERSATION_FIELDS, created);
        await judge('conversation.updated', conv.id, afterRename, CONVERSATION_FIELDS, renamed);
        await judge('response.completed', String(response.id), response, RESPONSE_FIELDS, sent);
        await judge('completion.completed', String(completion.id), completion, Object.keys(completion), completed);
        // The reply may have generated a title meanwhile (D-8): the rest is as the rename left it.
        const asItWas = CONVERSATION_FIELDS.filter((f) => f !== 'generated_title');
        const gone = await judge('conversation.deleted', conv.id, afterRename, asItWas, deleted);
        ctx.equal(gone.deleted, true, 'the conversation.deleted event: data.deleted (D-83)', deleted);
        ctx.equal(ids.size, types.length, 'five events of five changes have distinct ids (D-83)');
      });
    },
  },
  {
    id: 'S5.5-webhook-event-filter',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      'D-81: an endpoint that asked for conversation.deleted only gets that event of a conversation created then deleted; its delivery log (D-87) lists no conversation.created',
    clauses: ['D-81', 'D-87'],
    async run(ctx) {
      await withEndpoint(ctx, 'filter', ['conversation.deleted'], undefined, async (h) => {
        const { conv } = await createConversation(ctx);
        const deleted = await ctx.send({ method: 'DELETE', path: convPath(ctx.target.appId, conv.id) });
        ctx.check(deleted.status === 200, `delete conversation: expected HTTP 200, got ${deleted.status}`, deleted);
        await delivery(ctx, h, 'conversation.deleted', conv.id);
        const log = await admin(ctx, 'GET', `/webhook_deliveries?endpoint_id=${encodeURIComponent(h.endpoint.id)}&limit=100`);
        const list = ctx.ok(log, DeliveryList, "the endpoint's delivery log (D-87)");
        const unwanted = list.data.filter((x) => x.event_type !== 'conversation.deleted');
        ctx.check(
          unwanted.length === 0,
          `an endpoint that asked for conversation.deleted only has deliveries of ${unwanted.map((x) => x.event_type).join(', ')} (D-81)`,
          log,
        );
        const sent = h.receiver.deliveries.filter((x) => x.path === h.path && eventOf(x).type !== 'conversation.deleted');
        ctx.check(
          sent.length === 0,
          `an endpoint that asked for conversation.deleted only received ${sent.map(showDelivery).join('; ')} (D-81)`,
        );
      });
    },
  },
  {
    id: 'S5.5-webhook-retry',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      'D-85: a delivery answered 500 is sent again, within --settle-timeout, with the same webhook-id and event, a timestamp and signature of its own that verify (D-80); the delivery log records both attempts (D-87)',
    clauses: ['D-85', 'D-80', 'D-87'],
    async run(ctx) {
      const once500: Answerer = (_d, before) => (before.length === 0 ? 500 : 200);
      await withEndpoint(ctx, 'retry', ['conversation.created'], once500, async (h) => {
        const { conv } = await createConversation(ctx);
        const first = await delivery(ctx, h, 'conversation.created', conv.id);
        checkHeaders(ctx, first, 'the first attempt');
        const id = first.headers['webhook-id']!;
        const again = await h.receiver.waitFor(
          (x) => x.path === h.path && x !== first && x.at >= first.at && (x.headers['webhook-id'] === id || dataOf(x).id === conv.id),
          ctx.settleTimeoutMs,
          ctx.signal,
        );
        if (!again)
          return ctx.fail(
            `no retry of webhook-id ${id} reached the endpoint within --settle-timeout ${ctx.settleTimeoutMs} ms after it answered 500 (D-85; D-109, extended: the implementation's first retry must come sooner than --settle-timeout — Parley's comes 5 s after the first attempt, --webhook-retry-schedule)`,
          );
        ctx.equal(again.headers['webhook-id'], id, 'the retry after a 500: webhook-id (D-85: it stays on every attempt)');
        checkHeaders(ctx, again, 'the retry');
        ctx.equal(again.json, first.json, 'the retry after a 500: the event it carries (D-85)');
        const log = await ctx.poll(
          () =>
            admin(ctx, 'GET', `/webhook_deliveries?event_id=${encodeURIComponent(id)}&endpoint_id=${encodeURIComponent(h.endpoint.id)}`),
          (ex) => ex.status === 200 && JSON.stringify(ex.json).includes('"status":200'),
        );
        const list = ctx.ok(log, DeliveryList, "the event's delivery log (D-87)");
        const statuses = list.data.flatMap((x) => x.attempt_log.map((a) => a.status));
        ctx.check(
          statuses.includes(500) && statuses.includes(200),
          `the delivery log of ${id} records attempts ${show(statuses)}, not the 500 and the 200 the receiver answered (D-87)`,
          log,
        );
      });
    },
  },
  {
    id: 'S5.5-webhook-gone',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      'D-86: an endpoint that answers 410 Gone is disabled at once (enabled false, disabled_reason "gone"); the next event is recorded skipped for it (D-87) and not sent',
    clauses: ['D-86', 'D-87'],
    async run(ctx) {
      await withEndpoint(
        ctx,
        'gone',
        ['conversation.created'],
        () => 410,
        async (h) => {
          const { conv } = await createConversation(ctx);
          const first = await delivery(ctx, h, 'conversation.created', conv.id);
          const read = () => admin(ctx, 'GET', `/webhook_endpoints/${encodeURIComponent(h.endpoint.id)}`);
          const ex = await ctx.poll(read, (x) => (x.json as Json | undefined)?.enabled === false);
          const ep = ctx.ok(ex, WebhookEndpointView, 'read the endpoint (D-81)');
          ctx.check(
            !ep.enabled && ep.disabled_reason === 'gone',
            `after answering 410 to ${first.headers['webhook-id']}, the endpoint reads enabled ${ep.enabled}, disabled_reason ${show(ep.disabled_reason)} within --settle-timeout ${ctx.settleTimeoutMs} ms (D-86: a 410 disables it at once, "gone")`,
            ex,
          );
          const { conv: next } = await createConversation(ctx);
          const logPath = `/webhook_deliveries?endpoint_id=${encodeURIComponent(h.endpoint.id)}&limit=100`;
          const skippedOf = (x: Exchange) =>
            DeliveryList.safeParse(x.json).data?.data.find(
              (d) => d.event_id !== first.headers['webhook-id'] && d.event_type === 'conversation.created',
            );
          const log = await ctx.poll(
            () => admin(ctx, 'GET', logPath),
            (x) => skippedOf(x) !== undefined,
          );
          const later = skippedOf(log);
          ctx.check(
            later?.state === 'skipped',
            `the event after the 410 is recorded ${show(later?.state ?? 'nowhere')} for the disabled endpoint, not skipped (D-86, D-87)`,
            log,
          );
          const sent = h.receiver.deliveries.find((x) => x.path === h.path && dataOf(x).id === next.id);
          ctx.check(
            !sent,
            `the endpoint disabled by a 410 still received ${sent ? showDelivery(sent) : ''} (D-86: a disabled endpoint gets nothing)`,
          );
        },
      );
    },
  },
]);
