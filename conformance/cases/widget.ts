// §5.4's messenger widget, as Parley serves it (docs/widget.md, D-45…D-59): REFERENCE cases of the
// refusals that make a publishable key safe in a page. The widget API has its own path space
// (target key widget.base_url), a page origin the main app allows (widget.origin), and visitor tokens
// that reach only their visitor's conversations; identities are signed with widget.identity_secret.
import { createHmac } from 'node:crypto';
import { VisitorSession } from '../../src/contract/widget.ts';
import { defineCases, type CaseContext, type CaseDef } from '../context.ts';
import type { Exchange } from '../http.ts';
import type { WidgetTarget } from '../target.ts';
import { endpointsOn, label } from './auth.ts';
import { convPath, createConversation, HOSTILE_TEXT, lookalike } from './common.ts';

/** An origin no target lists: `.invalid` is reserved (RFC 2606), so no page can have it. */
const NOT_LISTED = 'https://not-listed.conformance.invalid';

interface WidgetRequest {
  method: string;
  /** Below widget.base_url: `/apps/app_1/visitors`. */
  path: string;
  body?: unknown;
  /** The Bearer credential; none unless given (never the target's secret key by default). */
  key?: string | null;
  /** The page's origin; widget.origin unless given, `null` sends no Origin header. */
  origin?: string | null;
  headers?: Record<string, string>;
}

function widgetOf(ctx: CaseContext): WidgetTarget {
  ctx.app('widget');
  return ctx.target.widget!;
}

/** `/apps/{app_id}…` of the main app, below widget.base_url. */
const wpath = (ctx: CaseContext, rest = '') => `/apps/${encodeURIComponent(ctx.target.appId)}${rest}`;

/** How a widget request is named in a failure. */
function wlabel(r: WidgetRequest): string {
  return `widget ${r.method} ${r.path}${(r.body as { stream?: unknown } | undefined)?.stream === true ? ' {stream: true}' : ''}`;
}

function wsend(ctx: CaseContext, r: WidgetRequest): Promise<Exchange> {
  const w = widgetOf(ctx);
  const origin = r.origin === undefined ? w.origin : r.origin;
  return ctx.send({
    method: r.method,
    path: r.path,
    body: r.body,
    key: r.key ?? null,
    baseUrl: w.baseUrl,
    headers: { ...(origin !== null ? { origin } : {}), ...r.headers },
  });
}

/** D-48: a visitor session opened with the publishable key. */
async function visitor(
  ctx: CaseContext,
  what = 'a visitor session',
  body: Record<string, unknown> = {},
  app = ctx.target.appId,
): Promise<{ token: string; visitor_id: string; external_user_id: string | null; expires_at: number; ex: Exchange }> {
  const path = `/apps/${encodeURIComponent(app)}/visitors`;
  const ex = await wsend(ctx, { method: 'POST', path, key: ctx.app('publishable_key'), body });
  return { ...ctx.ok(ex, VisitorSession, `${what} (widget POST ${path} with publishable_key)`), ex };
}

async function visitorConversation(ctx: CaseContext, token: string, what: string): Promise<{ id: string }> {
  const ex = await wsend(ctx, { method: 'POST', path: wpath(ctx, '/conversations'), key: token, body: {} });
  return ctx.ok(ex, ctx.schemas.conversation, what);
}

/** The CORS headers of an answer. */
function corsHeaders(ex: Exchange): string[] {
  return [...ex.headers.keys()].filter((k) => k.startsWith('access-control-'));
}

/** D-53: the answer to a listed origin carries it, and says that it varies by Origin. */
function corsAllowed(ctx: CaseContext, ex: Exchange, what: string, origin: string): void {
  ctx.equal(ex.headers.get('access-control-allow-origin'), origin, `${what}: Access-Control-Allow-Origin`, ex);
  const vary = (ex.headers.get('vary') ?? '').split(',').map((v) => v.trim().toLowerCase());
  ctx.check(
    vary.includes('origin') || vary.includes('*'),
    `${what}: Vary ${JSON.stringify(ex.headers.get('vary'))} does not name Origin`,
    ex,
  );
}

const listOf = (v: string | null) =>
  (v ?? '')
    .split(',')
    .map((x) => x.trim().toLowerCase())
    .filter(Boolean);

// JSON Web Tokens (RFC 7519) signed HS256, written here rather than taken from the server's code: the
// suite judges an implementation, it does not share one.
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

function hs256(claims: Record<string, unknown>, secret: string): string {
  const signed = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
  return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`;
}

/** The same claims, unsigned (`alg: none`): what a verifier that trusts the header would take. */
const unsigned = (claims: Record<string, unknown>) => `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;

/** A signed token whose payload is replaced after signing, its header and signature kept. */
function tampered(token: string, claims: Record<string, unknown>): string {
  const [head, , sig] = token.split('.');
  return `${head}.${b64(claims)}.${sig}`;
}

function claimsOf(token: string): Record<string, unknown> | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const c = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as unknown;
    return c && typeof c === 'object' && !Array.isArray(c) ? (c as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The server's clock (its Date header, RFC 9110 §6.6.1), in Unix seconds: an identity's age is the server's to judge. */
function serverSeconds(ex: Exchange): number {
  const date = Date.parse(ex.headers.get('date') ?? '');
  return Math.floor((Number.isNaN(date) ? Date.now() : date) / 1000);
}

export const widget: CaseDef[] = defineCases('5.4', [
  {
    id: 'S5.4-widget-credentials',
    level: 'REFERENCE',
    capability: 'widget',
    clauses: ['D-45', 'D-48'],
    needs: ['widget', 'publishable_key'],
    description:
      "D-45: each credential stays in its own path space: a visitor token is 401 invalid_api_key on every REST endpoint (send message and completion also with stream: true), its own conversation's included, which api_key reads; the secret key is refused a visitor session (403 access_denied); the publishable key where a visitor token belongs is 401 invalid_visitor_token (D-48)",
    async run(ctx) {
      const v = await visitor(ctx);
      const conv = await visitorConversation(ctx, v.token, 'a visitor creates a conversation');
      for (const [, r] of endpointsOn(ctx, ctx.target.appId, conv.id)) {
        ctx.error(await ctx.send({ ...r, key: v.token }), `${label(r)} with a visitor token`, { status: 401, type: 'invalid_api_key' });
      }
      // D-48: the team's backend sees every widget conversation, with its own key.
      ctx.ok(
        await ctx.send({ method: 'GET', path: convPath(ctx.target.appId, conv.id) }),
        ctx.schemas.conversationWithItems,
        "the visitor's conversation read through the REST API with api_key",
      );
      const session: WidgetRequest = { method: 'POST', path: wpath(ctx, '/visitors'), key: ctx.target.apiKey, body: {} };
      ctx.error(await wsend(ctx, session), `${wlabel(session)} with the secret key (api_key)`, { status: 403, type: 'access_denied' });
      const pk = ctx.app('publishable_key');
      const visitorPaths: WidgetRequest[] = [
        { method: 'GET', path: wpath(ctx, '/config') },
        { method: 'GET', path: wpath(ctx, `/conversations/${encodeURIComponent(conv.id)}`) },
        {
          method: 'POST',
          path: wpath(ctx, `/conversations/${encodeURIComponent(conv.id)}`),
          body: { message: { content: 'Hello!' }, stream: false },
        },
      ];
      for (const r of visitorPaths) {
        ctx.error(await wsend(ctx, { ...r, key: pk }), `${wlabel(r)} with the publishable key instead of a visitor token`, {
          status: 401,
          type: 'invalid_api_key',
          code: 'invalid_visitor_token',
        });
      }
    },
  },
  {
    id: 'S5.4-widget-origins',
    level: 'REFERENCE',
    capability: 'widget',
    clauses: ['D-53', 'D-54'],
    needs: ['widget', 'publishable_key'],
    description:
      'D-53: widget.origin gets its CORS answer (a preflight 204 with the methods, headers and max age; Access-Control-Allow-Origin and Vary: Origin on the answers); an unlisted origin and `null` are 403 origin_not_allowed with no CORS header, preflight included, before the credential is looked at (D-54); a request without Origin is not refused',
    async run(ctx) {
      const w = widgetOf(ctx);
      const preflight = (origin: string): WidgetRequest => ({
        method: 'OPTIONS',
        path: wpath(ctx, '/visitors'),
        origin,
        headers: { 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      });
      const pre = await wsend(ctx, preflight(w.origin));
      const preWhat = `preflight (OPTIONS ${wpath(ctx, '/visitors')}) from ${w.origin}`;
      ctx.check(pre.status === 204, `${preWhat}: expected HTTP 204, got ${pre.status}`, pre);
      corsAllowed(ctx, pre, preWhat, w.origin);
      ctx.check(
        listOf(pre.headers.get('access-control-allow-methods')).includes('post'),
        `${preWhat}: Access-Control-Allow-Methods ${JSON.stringify(pre.headers.get('access-control-allow-methods'))} does not list POST`,
        pre,
      );
      const allowHeaders = listOf(pre.headers.get('access-control-allow-headers'));
      ctx.check(
        allowHeaders.includes('authorization') && allowHeaders.includes('content-type'),
        `${preWhat}: Access-Control-Allow-Headers ${JSON.stringify(pre.headers.get('access-control-allow-headers'))} does not list authorization and content-type`,
        pre,
      );
      ctx.equal(pre.headers.get('access-control-max-age'), '600', `${preWhat}: Access-Control-Max-Age`, pre);

      const v = await visitor(ctx, `a visitor session from ${w.origin}`);
      corsAllowed(ctx, v.ex, `visitor session from ${w.origin}`, w.origin);
      ctx.check(
        listOf(v.ex.headers.get('access-control-expose-headers')).includes('x-request-id'),
        `visitor session from ${w.origin}: Access-Control-Expose-Headers ${JSON.stringify(v.ex.headers.get('access-control-expose-headers'))} does not expose x-request-id`,
        v.ex,
      );
      const config: WidgetRequest = { method: 'GET', path: wpath(ctx, '/config'), key: v.token };
      const read = await wsend(ctx, config);
      ctx.ok(read, ctx.schemas.config, `${wlabel(config)} from ${w.origin}`);
      corsAllowed(ctx, read, `${wlabel(config)} from ${w.origin}`, w.origin);
      // No Origin: not a browser's cross-origin request; the credential decides.
      ctx.ok(await wsend(ctx, { ...config, origin: null }), ctx.schemas.config, `${wlabel(config)} without an Origin header`);

      for (const origin of [NOT_LISTED, 'null']) {
        const refused: Array<[WidgetRequest, string]> = [
          [preflight(origin), 'preflight'],
          [{ method: 'POST', path: wpath(ctx, '/visitors'), key: ctx.app('publishable_key'), body: {}, origin }, 'with publishable_key'],
          // D-54: the origin is judged before the credential.
          [{ method: 'POST', path: wpath(ctx, '/visitors'), key: null, body: {}, origin }, 'without a key'],
          [{ ...config, origin }, 'with a visitor token'],
          [{ method: 'POST', path: wpath(ctx, '/conversations'), key: v.token, body: {}, origin }, 'with a visitor token'],
        ];
        for (const [r, how] of refused) {
          const what = `${wlabel(r)} from Origin ${origin}, ${how}`;
          const ex = await wsend(ctx, r);
          ctx.error(ex, what, { status: 403, type: 'access_denied', code: 'origin_not_allowed' });
          const cors = corsHeaders(ex);
          ctx.check(cors.length === 0, `${what}: a refused origin got CORS headers (${cors.join(', ')})`, ex);
        }
      }
    },
  },
  {
    id: 'S5.4-widget-other-visitor',
    level: 'REFERENCE',
    capability: 'widget',
    clauses: ['D-48'],
    needs: ['widget', 'publishable_key'],
    description:
      "D-48: another visitor's conversation answers get and send message (JSON and stream) with 404 not_found, the same error as an unknown id, and is left as it was; a conversation created through the REST API is 404 to a visitor",
    async run(ctx) {
      const a = await visitor(ctx, "visitor A's session");
      const conv = await visitorConversation(ctx, a.token, 'visitor A creates a conversation');
      const convAt = wpath(ctx, `/conversations/${encodeURIComponent(conv.id)}`);
      const message = { message: { content: 'Hello, this is visitor A.' } };
      ctx.ok(
        await wsend(ctx, { method: 'POST', path: convAt, key: a.token, body: { ...message, stream: false } }),
        ctx.schemas.response,
        "visitor A's message (stream: false)",
      );
      const readByA = async (what: string) => {
        const ex = await wsend(ctx, { method: 'GET', path: convAt, key: a.token });
        return { ex, items: (ctx.ok(ex, ctx.schemas.conversationWithItems, what) as { items: unknown[] }).items };
      };
      const before = await readByA('visitor A reads their conversation');

      const b = await visitor(ctx, "visitor B's session");
      const unknownId = lookalike(conv.id, 1);
      const unknown = await wsend(ctx, {
        method: 'GET',
        path: wpath(ctx, `/conversations/${encodeURIComponent(unknownId)}`),
        key: b.token,
      });
      const unknownError = ctx.error(unknown, 'visitor B reads an unknown conversation id', { status: 404, type: 'not_found' });
      const attempts: WidgetRequest[] = [
        { method: 'GET', path: convAt, key: b.token },
        { method: 'POST', path: convAt, key: b.token, body: { message: { content: 'Hello, this is visitor B.' }, stream: false } },
        { method: 'POST', path: convAt, key: b.token, body: { message: { content: 'Hello, this is visitor B.' }, stream: true } },
      ];
      for (const r of attempts) {
        const ex = await wsend(ctx, r);
        const e = ctx.error(ex, `${wlabel(r)} (visitor A's conversation, as visitor B)`, { status: 404, type: 'not_found' });
        // Not even its existence shows: the message is an unknown id's, the id aside.
        if (r.method === 'GET')
          ctx.equal(
            e.message.split(conv.id).join('{id}'),
            unknownError.message.split(unknownId).join('{id}'),
            "error.message for visitor A's conversation and for an unknown id (the id aside)",
            ex,
          );
      }
      const after = await readByA("visitor A reads their conversation after visitor B's attempts");
      ctx.equal(after.items.length, before.items.length, "items of visitor A's conversation after visitor B's refused messages", after.ex);

      // A conversation of the team's backend belongs to no visitor.
      const rest = (await createConversation(ctx)).conv;
      const restAt = wpath(ctx, `/conversations/${encodeURIComponent(rest.id)}`);
      for (const r of [
        { method: 'GET', path: restAt, key: a.token },
        { method: 'POST', path: restAt, key: a.token, body: { ...message, stream: false } },
      ] satisfies WidgetRequest[]) {
        ctx.error(await wsend(ctx, r), `${wlabel(r)} (a conversation created through the REST API, as a visitor)`, {
          status: 404,
          type: 'not_found',
        });
      }
    },
  },
  {
    id: 'S5.4-widget-identity',
    level: 'REFERENCE',
    capability: 'widget',
    clauses: ['D-50'],
    needs: ['widget', 'publishable_key', 'widget.identity_secret'],
    description:
      "D-50: an identity signed HS256 with widget.identity_secret opens a session with its sub as external_user_id, the same sub the same visitor, its metadata the conversation's; one signed 601 s ago or dated an hour ahead (by the server's Date) is 403 identity_expired, one changed after signing, signed with another secret or unsigned is 403 invalid_identity, each with param identity",
    async run(ctx) {
      const secret = ctx.app('widget.identity_secret');
      const sub = `${ctx.tag}-user`;
      const now = Math.floor(Date.now() / 1000);
      const metadata = { plan: 'gold', note: HOSTILE_TEXT };
      const good = await visitor(ctx, 'a visitor session with an identity signed now', {
        identity: hs256({ sub, iat: now, metadata }, secret),
      });
      ctx.equal(good.external_user_id, sub, 'external_user_id of a session with a signed identity', good.ex);
      // The same sub is the same visitor, wherever it signs in from.
      const again = await visitor(ctx, 'a second session with an identity of the same sub', { identity: hs256({ sub, iat: now }, secret) });
      ctx.equal(again.visitor_id, good.visitor_id, 'visitor_id of a second session of the same sub', again.ex);
      // Its metadata is the conversation's, as the team's backend reads it.
      const conv = await visitorConversation(ctx, good.token, 'a verified visitor creates a conversation');
      const read = await ctx.send({ method: 'GET', path: convPath(ctx.target.appId, conv.id) });
      const got = ctx.ok(read, ctx.schemas.conversationWithItems, "the verified visitor's conversation read with api_key") as {
        external_user_id: unknown;
        metadata: unknown;
      };
      ctx.equal(
        [got.external_user_id, got.metadata],
        [sub, metadata],
        "[external_user_id, metadata] of the verified visitor's conversation (the identity's sub and metadata)",
        read,
      );
      const serverNow = serverSeconds(good.ex);
      const refused: Array<[string, string, string]> = [
        [hs256({ sub, iat: serverNow - 601 }, secret), 'an identity signed 601 s ago', 'identity_expired'],
        [hs256({ sub, iat: serverNow + 3600 }, secret), 'an identity dated an hour ahead', 'identity_expired'],
        [
          tampered(hs256({ sub, iat: now }, secret), { sub: `${sub}-admin`, iat: now }),
          'an identity whose payload was changed after signing (another sub)',
          'invalid_identity',
        ],
        [hs256({ sub, iat: now }, `${secret}-guessed`), 'an identity signed with another secret', 'invalid_identity'],
        [unsigned({ sub, iat: now }), 'an unsigned identity (alg none)', 'invalid_identity'],
      ];
      for (const [identity, what, code] of refused) {
        const ex = await wsend(ctx, { method: 'POST', path: wpath(ctx, '/visitors'), key: ctx.app('publishable_key'), body: { identity } });
        ctx.error(ex, `visitor session with ${what}`, { status: 403, type: 'access_denied', code, param: 'identity' });
      }
    },
  },
  {
    id: 'S5.4-widget-forged-token',
    level: 'REFERENCE',
    capability: 'widget',
    clauses: ['D-49', 'D-54'],
    needs: ['widget', 'publishable_key'],
    description:
      "D-49: a visitor token changed after signing (another visitor), signed with another key, unsigned (alg none), malformed or missing is 401 invalid_api_key, code invalid_visitor_token, on reads and writes, the visitor's own conversation included; on an unknown conversation too, the credential being judged before the conversation (D-54)",
    async run(ctx) {
      const v = await visitor(ctx);
      const conv = await visitorConversation(ctx, v.token, 'a visitor creates a conversation');
      const config: WidgetRequest = { method: 'GET', path: wpath(ctx, '/config') };
      ctx.ok(await wsend(ctx, { ...config, key: v.token }), ctx.schemas.config, `${wlabel(config)} with the visitor token`);
      const claims = claimsOf(v.token) ?? ctx.fail('the visitor token is not a JSON Web Token (D-49)', v.ex);
      const forged: Array<[string | null, string]> = [
        [tampered(v.token, { ...claims, sub: `${String(claims.sub)}x` }), 'a visitor token changed after signing (another visitor)'],
        [hs256(claims, 'conformance-guessed-secret'), 'a visitor token signed with another key'],
        [unsigned(claims), 'an unsigned visitor token (alg none)'],
        ['not-a-visitor-token', 'a malformed visitor token'],
        [null, 'no visitor token'],
      ];
      const requests: WidgetRequest[] = [
        config,
        { method: 'GET', path: wpath(ctx, `/conversations/${encodeURIComponent(conv.id)}`) },
        // D-54: the credential before the conversation, which would be 404.
        { method: 'GET', path: wpath(ctx, `/conversations/${encodeURIComponent(lookalike(conv.id, 1))}`) },
        { method: 'POST', path: wpath(ctx, '/conversations'), body: {} },
      ];
      for (const [key, what] of forged) {
        for (const r of requests)
          ctx.error(await wsend(ctx, { ...r, key }), `${wlabel(r)} with ${what}`, {
            status: 401,
            type: 'invalid_api_key',
            code: 'invalid_visitor_token',
          });
      }
    },
  },
  {
    id: 'S5.4-widget-token-lifetime',
    level: 'REFERENCE',
    capability: 'widget',
    clauses: ['D-49'],
    needs: ['widget', 'publishable_key', 'widget.short_token_app'],
    description:
      'D-49: a visitor token of widget.short_token_app (its tokens live seconds) is taken until its expires_at, then 401 invalid_api_key, code visitor_token_expired (read again until then, within --settle-timeout); sent as previous_token it renews the same visitor; a token of one app is 403 access_denied on another, both ways',
    async run(ctx) {
      const short = ctx.app('widget.short_token_app');
      const configOf = (app: string): WidgetRequest => ({ method: 'GET', path: `/apps/${encodeURIComponent(app)}/config` });
      const session = () => visitor(ctx, 'a visitor session of widget.short_token_app', {}, short);
      let v = await session();
      // The short token lives seconds: a request that a busy machine sent once it had expired shows
      // nothing of what it checks, so it is sent again with a new token (a server's Date may lag its
      // clock under load, so the suite's clock and the answer's code count too).
      const expired = (ex: Exchange) =>
        ex.status === 401 &&
        ((ex.json as { error?: { code?: unknown } } | undefined)?.error?.code === 'visitor_token_expired' ||
          Date.now() / 1000 >= v.expires_at ||
          serverSeconds(ex) >= v.expires_at);
      const whileFresh = async (r: WidgetRequest): Promise<Exchange> => {
        for (let i = 0; ; i++) {
          const ex = await wsend(ctx, { ...r, key: v.token });
          if (i === 4 || !expired(ex)) return ex;
          v = await session();
        }
      };
      const main = await visitor(ctx);
      const onShort = configOf(short);
      ctx.error(
        await wsend(ctx, { ...onShort, key: main.token }),
        `${wlabel(onShort)} with app_id's visitor token on widget.short_token_app`,
        {
          status: 403,
          type: 'access_denied',
        },
      );
      const onMain = configOf(ctx.target.appId);
      ctx.error(await whileFresh(onMain), `${wlabel(onMain)} with widget.short_token_app's visitor token on app_id`, {
        status: 403,
        type: 'access_denied',
      });
      const config = configOf(short);
      const first = await whileFresh(config);
      ctx.ok(first, ctx.schemas.config, `${wlabel(config)} with its visitor token, before its expires_at (${v.expires_at})`);
      // Its lifetime is the app's: read again until it is refused.
      const after = await ctx.poll(
        () => wsend(ctx, { ...config, key: v.token }),
        (ex) => ex.status !== 200,
      );
      const what = `${wlabel(config)} with a visitor token whose expires_at (${v.expires_at}) passed`;
      if (after.status === 200) return ctx.fail(`${what}: still taken after --settle-timeout`, after);
      // A second of leeway: Date has whole seconds, and a busy server's may lag its clock.
      ctx.check(
        serverSeconds(after) + 1 >= v.expires_at,
        `${what}: refused at ${serverSeconds(after)} by the server's Date, more than a second before it expired`,
        after,
      );
      ctx.error(after, what, { status: 401, type: 'invalid_api_key', code: 'visitor_token_expired' });
      const renewed = await visitor(
        ctx,
        'a visitor session renewed with the expired token as previous_token',
        { previous_token: v.token },
        short,
      );
      ctx.equal(renewed.visitor_id, v.visitor_id, 'visitor_id of the session renewed with previous_token (the same visitor)', renewed.ex);
    },
  },
  {
    id: 'S5.4-widget-browser-fields',
    level: 'REFERENCE',
    capability: 'widget',
    clauses: ['D-51'],
    needs: ['widget', 'publishable_key'],
    description:
      "D-51: what a browser may send: external_user_id or metadata on the widget's create conversation, and metadata on its send message, are 400 unknown_parameter naming the field, and create nothing",
    async run(ctx) {
      const v = await visitor(ctx);
      const conv = await visitorConversation(ctx, v.token, 'a visitor creates a conversation');
      const refused: WidgetRequest[] = [
        {
          method: 'POST',
          path: wpath(ctx, '/conversations'),
          key: v.token,
          body: { title: 'Mine', external_user_id: `${ctx.tag}-forged` },
        },
        { method: 'POST', path: wpath(ctx, '/conversations'), key: v.token, body: { title: 'Mine', metadata: { plan: 'gold' } } },
        {
          method: 'POST',
          path: wpath(ctx, `/conversations/${encodeURIComponent(conv.id)}`),
          key: v.token,
          body: { message: { content: 'Hello!' }, stream: false, metadata: { plan: 'gold' } },
        },
      ];
      for (const r of refused) {
        const field = 'external_user_id' in (r.body as object) ? 'external_user_id' : 'metadata';
        ctx.error(await wsend(ctx, r), `${wlabel(r)} with ${field}`, {
          status: 400,
          type: 'invalid_request_error',
          param: field,
          code: 'unknown_parameter',
        });
      }
      const read = await wsend(ctx, { method: 'GET', path: wpath(ctx, `/conversations/${encodeURIComponent(conv.id)}`), key: v.token });
      ctx.equal(
        (ctx.ok(read, ctx.schemas.conversationWithItems, 'the visitor reads their conversation') as { items: unknown[] }).items,
        [],
        'items of the conversation after the refused message',
        read,
      );
    },
  },
  {
    id: 'S5.4-widget-script',
    level: 'REFERENCE',
    capability: 'widget',
    clauses: ['D-55'],
    needs: ['widget'],
    description:
      "D-55: the widget's script, /widget.js on the widget API's host, is served as JavaScript that any page may load (Cross-Origin-Resource-Policy: cross-origin), and is not empty",
    async run(ctx) {
      const w = widgetOf(ctx);
      const origin = new URL(w.baseUrl).origin;
      const ex = await ctx.send({ method: 'GET', path: '/widget.js', key: null, baseUrl: origin });
      ctx.equal(ex.status, 200, 'GET /widget.js: status', ex);
      const type = (ex.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      ctx.check(
        type === 'text/javascript' || type === 'application/javascript',
        `GET /widget.js: Content-Type ${JSON.stringify(ex.headers.get('content-type'))} is not JavaScript`,
        ex,
      );
      ctx.equal(ex.headers.get('cross-origin-resource-policy'), 'cross-origin', 'GET /widget.js: Cross-Origin-Resource-Policy', ex);
      ctx.check(ex.text.length > 1000, `GET /widget.js: ${ex.text.length} bytes, not the widget's script`, ex);
    },
  },
]);
