// Test helpers for the widget API (docs/widget.md): visitor sessions and calls under /widget/v1.
import fs from 'node:fs/promises';
import path from 'node:path';
import { signJwt } from '../../src/pipeline/widget-tokens.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { FIXTURES_DIR, TARGET, type TestServer } from './helpers.ts';

export const PK = TARGET.publishable_key;
/** An origin the fixtures list for app_demo and app_genui (and app_limited, app_inactive). */
export const SHOP = 'https://shop.example';

const fixtures = JSON.parse(await fs.readFile(path.join(FIXTURES_DIR, 'fixtures.json'), 'utf8')) as {
  apps: Array<{ id: string; widget?: { identity_secret?: string } }>;
};
/** D-50: the identity secret of an app, as its host's server holds it. */
export function identitySecret(appId: string): string {
  return fixtures.apps.find((a) => a.id === appId)!.widget!.identity_secret!;
}

/** D-49: the server's signing secret, from its data directory or (on PostgreSQL) its database. */
export async function serverSecret(server: TestServer): Promise<string> {
  if (server.store instanceof PgStore)
    return (await server.store.sql<{ value: string }[]>`SELECT value FROM settings WHERE name = 'widget_secret'`)[0]!.value;
  return (await fs.readFile(path.join(server.dataDir, 'widget-secret'), 'utf8')).trim();
}

/** A host server's signed identity (HS256), `iat` now unless given. */
export function signIdentity(appId: string, claims: Record<string, unknown>): string {
  return signJwt({ iat: Math.floor(Date.now() / 1000), ...claims }, identitySecret(appId));
}

export function originOf(server: TestServer): string {
  return server.baseUrl.replace(/\/v1$/, '');
}

export interface WidgetCall {
  status: number;
  headers: Headers;
  body: any;
}

/** A call to the widget API, from `origin` (SHOP unless given; null sends none) with `auth` as the Bearer credential. */
export async function widgetCall(
  server: TestServer,
  method: string,
  urlPath: string,
  opts: { auth?: string | null; body?: unknown; origin?: string | null; headers?: Record<string, string> } = {},
): Promise<WidgetCall> {
  const headers: Record<string, string> = { ...opts.headers };
  const origin = opts.origin === undefined ? SHOP : opts.origin;
  if (origin !== null) headers.origin = origin;
  if (opts.auth) headers.authorization = `Bearer ${opts.auth}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${originOf(server)}/widget/v1${urlPath}`, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // an SSE stream or an empty 204
  }
  return { status: res.status, headers: res.headers, body };
}

/** A visitor session of `appId` (a new anonymous visitor unless `identity` or `previous_token` say otherwise). */
export async function visitor(
  server: TestServer,
  appId: string,
  body: Record<string, unknown> = {},
  origin: string | null = SHOP,
): Promise<{ token: string; visitor_id: string; external_user_id: string | null; expires_at: number }> {
  const r = await widgetCall(server, 'POST', `/apps/${appId}/visitors`, { auth: PK, body, origin });
  if (r.status !== 200) throw new Error(`visitor session: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** A new visitor of `appId` sends `content` to a conversation of their own: the visitor and the streamed answer. */
export async function visitorReply(
  server: TestServer,
  appId: string,
  content: string,
): Promise<{ visitor: Awaited<ReturnType<typeof visitor>>; sent: WidgetCall; responseId: string }> {
  const v = await visitor(server, appId);
  const conv = await widgetCall(server, 'POST', `/apps/${appId}/conversations`, { auth: v.token, body: {} });
  const sent = await widgetCall(server, 'POST', `/apps/${appId}/conversations/${conv.body.id}`, {
    auth: v.token,
    body: { message: { content } },
  });
  return { visitor: v, sent, responseId: sent.headers.get('parley-response-id')! };
}
