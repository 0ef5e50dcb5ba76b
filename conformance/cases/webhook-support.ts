// What the webhook cases share (docs/webhooks.md, D-80…D-89): the receiver, the admin's session, an
// endpoint registered for a case and deleted after it, and the checks of a delivery's headers, its
// envelope and its data. Every endpoint a case registers is deleted when it ends, and by the runner at
// the end of the run (D-109, extended).
import { z } from 'zod';
import { WebhookDeliveryView, WebhookEndpointView } from '../../src/contract/admin-webhooks.ts';
import { CaseSkip, show, type CaseContext } from '../context.ts';
import type { Exchange } from '../http.ts';
import { checkSignature, isLoopbackUrl, startReceiver, type Answerer, type Delivery, type Receiver } from '../receiver.ts';
import type { Json } from './common.ts';

export type Endpoint = z.infer<typeof WebhookEndpointView>;
export const DeliveryList = z.object({ data: z.array(WebhookDeliveryView) });

/** D-109, extended: the receiver, started once a run; skipped where the implementation cannot reach it. */
export async function receiverOf(ctx: CaseContext): Promise<Receiver> {
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
export function hideSecrets(ex: Exchange): Exchange {
  const req = ex.request;
  const headers = { ...req.headers, ...(req.headers.cookie ? { cookie: 'parley_session=(hidden)' } : {}) };
  let body = req.body;
  if (body?.includes('"password"')) body = JSON.stringify({ ...(JSON.parse(body) as Json), password: '$ADMIN_PASSWORD' });
  const answered = new Headers(ex.headers);
  if (answered.has('set-cookie')) answered.set('set-cookie', 'parley_session=(hidden)');
  return { ...ex, request: { ...req, headers, ...(body !== undefined ? { body } : {}) }, headers: answered };
}

/** D-67: a sign-in of the target's admin, its cookie as Set-Cookie gave it (the report shows neither). */
export async function signIn(ctx: CaseContext): Promise<{ ex: Exchange; setCookie: string | undefined }> {
  const admin = ctx.target.admin;
  if (!admin) throw new CaseSkip('needs target key admin');
  let setCookie: string | undefined;
  const ex = await ctx.send(
    { method: 'POST', path: '/sessions', baseUrl: admin.baseUrl, key: null, body: { email: admin.email, password: admin.password } },
    (sent) => {
      setCookie = sent.headers.getSetCookie().find((c) => c.startsWith('parley_session='));
      return hideSecrets(sent);
    },
  );
  return { ex, setCookie };
}

/** D-67: the target's admin signs in once a run; the runner signs out at its end. */
export async function adminSession(ctx: CaseContext): Promise<Record<string, string>> {
  const w = ctx.webhooks;
  if (w.session) return w.session;
  const { ex, setCookie: cookie } = await signIn(ctx);
  const body = ctx.ok(
    ex,
    z.looseObject({ csrf_token: z.string().min(1) }),
    `sign-in of the target's admin ${ctx.target.admin!.email} (D-67)`,
  );
  if (!cookie) ctx.fail("sign-in of the target's admin: no parley_session cookie was set (D-67)", ex);
  w.session = { cookie: cookie.split(';')[0]!, 'x-csrf-token': body.csrf_token };
  return w.session;
}

/** A request to the admin surface, as the signed-in admin. */
export async function admin(ctx: CaseContext, method: string, path: string, body?: unknown): Promise<Exchange> {
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
export async function ownKeyId(ctx: CaseContext): Promise<string> {
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

export interface Hook {
  endpoint: Endpoint;
  /** The receiver's path of this endpoint. */
  path: string;
  receiver: Receiver;
}

/** What a case sent to register an endpoint (D-81, D-150). */
export interface EndpointSent {
  app_id: string;
  url: string;
  events: string[];
  description: string;
  signing_key_id: string;
}

/**
 * D-81, D-150: every field of an endpoint's answer is what was sent, or the default docs/webhooks.md
 * gives (enabled, no disabled_reason, its key active), its times the Unix seconds of the change.
 */
export function checkEndpoint(ctx: CaseContext, got: Endpoint, sent: EndpointSent, since: number, what: string, ex: Exchange): void {
  const now = Math.ceil(Date.now() / 1000);
  const fields = { ...sent, object: 'webhook_endpoint', enabled: true, disabled_reason: null, signing_key_state: 'active' };
  for (const [k, v] of Object.entries(fields))
    ctx.equal(got[k as keyof Endpoint], v, `${what}: ${k} is ${k in sent ? 'the one sent' : 'its default'} (D-81, D-150)`, ex);
  for (const k of ['created_at', 'updated_at'] as const)
    ctx.check(
      got[k] >= since - 2 && got[k] <= now + 2,
      `${what}: ${k} ${got[k]} is not the Unix time of the change in seconds (between ${since} and ${now}, D-81)`,
      ex,
    );
}

/**
 * D-81: registers the receiver as an endpoint of `app` (app_id by default) for `events`, answering as
 * `answer` says, and checks the answer against what was sent.
 */
export async function registerEndpoint(
  ctx: CaseContext,
  name: string,
  events: string[],
  answer?: Answerer,
  app = ctx.target.appId,
): Promise<Hook & { sent: EndpointSent; ex: Exchange }> {
  const receiver = await receiverOf(ctx);
  if (answer) receiver.answer(name, answer);
  const since = Math.floor(Date.now() / 1000);
  const sent: EndpointSent = {
    app_id: app,
    url: receiver.urlFor(name),
    events,
    description: `conformance run ${ctx.runId}`,
    signing_key_id: await ownKeyId(ctx),
  };
  const ex = await admin(ctx, 'POST', '/webhook_endpoints', sent);
  const endpoint = ctx.ok(ex, WebhookEndpointView, 'register the receiver as a webhook endpoint (D-81)');
  ctx.webhooks.endpoints.push(endpoint.id);
  checkEndpoint(ctx, endpoint, sent, since, 'the answer of the registration', ex);
  return { endpoint, path: new URL(sent.url).pathname, receiver, sent, ex };
}

/** D-81: deletes an endpoint the case registered, which the runner then need not delete. */
export async function deleteEndpoint(ctx: CaseContext, id: string): Promise<Exchange> {
  const del = await admin(ctx, 'DELETE', `/webhook_endpoints/${encodeURIComponent(id)}`);
  ctx.check(del.status === 200, `deleting the endpoint the case registered: expected HTTP 200, got ${del.status} (D-81)`, del);
  ctx.webhooks.endpoints.splice(ctx.webhooks.endpoints.indexOf(id), 1);
  return del;
}

/**
 * D-81: registers the receiver as an endpoint (registerEndpoint), describes it with PATCH (D-115), runs
 * `fn` with it, then deletes it (the runner deletes it too if this deletion does not happen).
 */
export async function withEndpoint(
  ctx: CaseContext,
  name: string,
  events: string[],
  answer: Answerer | undefined,
  fn: (h: Hook) => Promise<void>,
  app?: string,
) {
  const made = await registerEndpoint(ctx, name, events, answer, app);
  // D-115: an endpoint is changed with PATCH; its answer is the endpoint as changed, and only that.
  const description = `conformance run ${ctx.runId}: ${ctx.caseDef.id}`;
  const patched = await admin(ctx, 'PATCH', `/webhook_endpoints/${encodeURIComponent(made.endpoint.id)}`, { description });
  const endpoint = ctx.ok(patched, WebhookEndpointView, 'describe the endpoint with PATCH (D-115)');
  ctx.equal(
    { ...endpoint, updated_at: made.endpoint.updated_at },
    { ...made.endpoint, description },
    "PATCH {description} changes the endpoint's description and nothing else (D-115)",
    patched,
  );
  // D-78: answered, the endpoint is in effect on every instance, so a change made next through any of them sends its event.
  await fn({ endpoint, path: made.path, receiver: made.receiver });
  await deleteEndpoint(ctx, endpoint.id);
}

/** A delivery, shortly, for a failure message. */
export function showDelivery(d: Delivery): string {
  const h = ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((k) => `${k}: ${d.headers[k] ?? '(none)'}`).join(', ');
  return `${d.method} ${d.path} [${h}] answered ${d.answered}, body ${d.body.length > 300 ? `${d.body.slice(0, 300)}…` : d.body}`;
}

export const eventOf = (d: Delivery) => (d.json && typeof d.json === 'object' ? (d.json as Json) : {});
export const dataOf = (d: Delivery) => (eventOf(d).data && typeof eventOf(d).data === 'object' ? (eventOf(d).data as Json) : {});

/** The first delivery to `h` of an event of `type` about resource `id`, waited for up to --settle-timeout. */
export async function delivery(ctx: CaseContext, h: Hook, type: string, id: string): Promise<Delivery> {
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
export function checkHeaders(ctx: CaseContext, d: Delivery, what: string): void {
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
export function checkEnvelope(ctx: CaseContext, d: Delivery, type: string, since: number): Json {
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

/**
 * D-83: `data` is the resource as the API showed it: each field the API answered, with the same value,
 * and no field the API does not show (`extra`: what the event adds, a deletion's `deleted`).
 */
export function checkData(
  ctx: CaseContext,
  data: Json,
  shown: Json,
  fields: string[],
  what: string,
  ex: Exchange,
  extra: string[] = [],
): void {
  // D-83 (revised): a response's output items too, key for key: no stored item's id or created_at.
  for (const f of fields) ctx.equal(data[f], shown[f], `${what}: data.${f} is the API's (D-83)`, ex);
  const more = Object.keys(data).filter((k) => !(k in shown) && !extra.includes(k));
  ctx.check(
    more.length === 0,
    `${what}: data has fields the API does not show: ${more.join(', ')} (D-83: data is the resource as the API shows it)`,
    ex,
  );
}

export const CONVERSATION_FIELDS = ['id', 'object', 'created_at', 'external_user_id', 'title', 'generated_title', 'metadata'];
export const RESPONSE_FIELDS = ['id', 'object', 'created_at', 'conversation_id', 'output', 'status', 'usage'];
