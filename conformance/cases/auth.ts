// §5 authentication and §7's access errors: 401 invalid_api_key, 403 access_denied / app_inactive /
// agent_unavailable, 404 for an unknown app.
import { defineCases, type CaseContext, type CaseDef } from '../context.ts';
import type { OutgoingRequest } from '../http.ts';
import { appPath, baselineCompletion, baselineCreate, baselineSend, convPath, withBody } from './common.ts';

const INVALID_KEY = 'sk_live_conformanceInvalidKey0000000000000000';

/**
 * One request per endpoint of §4, each of which passed with the key earlier in the run (the
 * baselines), so that the key is the one thing a case changes.
 */
async function everyEndpoint(ctx: CaseContext): Promise<OutgoingRequest[]> {
  const app = ctx.target.appId;
  const created = await baselineCreate(ctx);
  const c = created.value;
  const send = await baselineSend(ctx);
  const completion = await baselineCompletion(ctx);
  const reads: OutgoingRequest[] = [
    { method: 'GET', path: convPath(app) },
    { method: 'GET', path: convPath(app, c.id) },
    { method: 'PATCH', path: convPath(app, c.id), body: { title: c.title } },
    { method: 'GET', path: appPath(app, 'config') },
    { method: 'GET', path: appPath(app, 'metrics') },
  ];
  for (const r of reads) ctx.check((await ctx.send(r)).status === 200, `${r.method} ${r.path} with the key: expected HTTP 200`);
  // DELETE last, on a conversation of its own, checked after the unauthenticated attempts.
  const victim = await ctx.send(created.request);
  const victimId = (ctx.ok(victim, ctx.schemas.conversation, 'create conversation') as { id: string }).id;
  // §4.6 documents the endpoint's error objects whether it streams or not.
  const streamed = withBody(send.request, (body) => ({ ...body, stream: true }));
  return [created.request, ...reads, { method: 'DELETE', path: convPath(app, victimId) }, send.request, streamed, completion.request];
}

export const auth: CaseDef[] = defineCases('5', [
  {
    id: 'S5-missing-key-401',
    level: 'MUST',
    description: 'every endpoint answers 401 invalid_api_key without an Authorization header',
    async run(ctx) {
      for (const r of await everyEndpoint(ctx)) {
        const ex = await ctx.send({ ...r, key: null });
        ctx.error(ex, `${r.method} ${r.path} without a key`, { status: 401, type: 'invalid_api_key' });
      }
    },
  },
  {
    id: 'S5-invalid-key-401',
    level: 'MUST',
    description: 'every endpoint answers 401 invalid_api_key to an unknown key',
    async run(ctx) {
      for (const r of await everyEndpoint(ctx)) {
        const ex = await ctx.send({ ...r, key: INVALID_KEY });
        ctx.error(ex, `${r.method} ${r.path} with an unknown key`, { status: 401, type: 'invalid_api_key' });
      }
    },
  },
  {
    id: 'S5-wrong-scheme-401',
    level: 'MUST',
    description: 'the right key under another scheme than Bearer is 401 invalid_api_key',
    async run(ctx) {
      const r: OutgoingRequest = { method: 'GET', path: appPath(ctx.target.appId, 'config') };
      for (const scheme of ['Basic', 'Token']) {
        const ex = await ctx.send({ ...r, key: null, headers: { authorization: `${scheme} ${ctx.target.apiKey}` } });
        ctx.error(ex, `Authorization: ${scheme} <key>`, { status: 401, type: 'invalid_api_key' });
      }
    },
  },
  {
    id: 'S5-other-team-403',
    level: 'MUST',
    needs: ['apps.other_team'],
    description: "another team's app answers 403 access_denied (config, list, completion)",
    async run(ctx) {
      const app = ctx.app('apps.other_team');
      for (const r of [
        { method: 'GET', path: appPath(app, 'config') },
        { method: 'GET', path: convPath(app) },
        { method: 'POST', path: appPath(app, 'completions'), body: { prompt: 'Hello' } },
      ]) {
        const ex = await ctx.send(r);
        ctx.error(ex, `${r.method} ${r.path}`, { status: 403, type: 'access_denied' });
      }
    },
  },
  {
    id: 'S5-publishable-key-refused',
    level: 'MUST',
    needs: ['publishable_key'],
    description: 'a publishable key cannot call the REST API: every endpoint answers 401 or 403 (reference: 403 access_denied, code publishable_key, D-6)',
    async run(ctx) {
      const key = ctx.app('publishable_key');
      for (const r of await everyEndpoint(ctx)) {
        const ex = await ctx.send({ ...r, key });
        const what = `${r.method} ${r.path} with the publishable key`;
        if (ctx.reference) ctx.error(ex, what, { status: 403, type: 'access_denied', code: 'publishable_key' });
        else {
          ctx.check(ex.status === 401 || ex.status === 403, `${what}: expected HTTP 401 or 403, got ${ex.status}`, ex);
          ctx.error(ex, what);
        }
      }
    },
  },
  {
    id: 'S5-auth-before-body',
    level: 'REFERENCE',
    description: 'D-4: a request with no key and an invalid body is 401, not 400',
    async run(ctx) {
      const b = await baselineCreate(ctx);
      const ex = await ctx.send({ ...b.request, key: null, body: { title: 42 } });
      ctx.error(ex, 'no key, invalid body', { status: 401, type: 'invalid_api_key' });
    },
  },
]);

export const appErrors: CaseDef[] = defineCases('7', [
  {
    id: 'S7-unknown-app-404',
    level: 'MUST',
    description: 'an unknown app_id is 404 not_found (config, list, completion)',
    async run(ctx) {
      const app = 'app_conformance_does_not_exist';
      for (const r of [
        { method: 'GET', path: appPath(app, 'config') },
        { method: 'GET', path: convPath(app) },
        { method: 'POST', path: appPath(app, 'completions'), body: { prompt: 'Hello' } },
      ]) {
        const ex = await ctx.send(r);
        ctx.error(ex, `${r.method} ${r.path}`, { status: 404, type: 'not_found' });
      }
    },
  },
  {
    id: 'S7-app-inactive-403',
    level: 'MUST',
    needs: ['apps.inactive'],
    description: 'a completion on a disabled app is 403 app_inactive',
    async run(ctx) {
      const ex = await ctx.send({ method: 'POST', path: appPath(ctx.app('apps.inactive'), 'completions'), body: { prompt: 'Hello' } });
      ctx.error(ex, 'completion on a disabled app', { status: 403, type: 'app_inactive' });
    },
  },
  {
    id: 'S7-app-inactive-every-endpoint',
    level: 'REFERENCE',
    needs: ['apps.inactive'],
    description: 'D-4: every endpoint of a disabled app answers 403 app_inactive (config, list, create)',
    async run(ctx) {
      const app = ctx.app('apps.inactive');
      for (const r of [
        { method: 'GET', path: appPath(app, 'config') },
        { method: 'GET', path: convPath(app) },
        { method: 'POST', path: convPath(app), body: { external_user_id: ctx.tag } },
      ]) {
        const ex = await ctx.send(r);
        ctx.error(ex, `${r.method} ${r.path}`, { status: 403, type: 'app_inactive' });
      }
    },
  },
  {
    id: 'S7-agent-unavailable-403',
    level: 'MUST',
    needs: ['apps.no_agent'],
    description: 'a completion on an app without an active agent is 403 agent_unavailable',
    async run(ctx) {
      const ex = await ctx.send({ method: 'POST', path: appPath(ctx.app('apps.no_agent'), 'completions'), body: { prompt: 'Hello' } });
      ctx.error(ex, 'completion without an agent', { status: 403, type: 'agent_unavailable' });
    },
  },
  {
    id: 'S7-agent-unavailable-send',
    level: 'REFERENCE',
    needs: ['apps.no_agent'],
    description: 'D-4: a conversation can be created on an app without an agent, but sending to it is 403 agent_unavailable',
    async run(ctx) {
      const app = ctx.app('apps.no_agent');
      const created = await ctx.send({ method: 'POST', path: convPath(app), body: { external_user_id: ctx.tag } });
      const c = ctx.ok(created, ctx.schemas.conversation, 'create on an app without an agent');
      const ex = await ctx.send({ method: 'POST', path: convPath(app, c.id), body: { message: { content: 'Hello' }, stream: false } });
      ctx.error(ex, 'send message without an agent', { status: 403, type: 'agent_unavailable' });
    },
  },
  {
    id: 'S7-unknown-path-404',
    level: 'REFERENCE',
    description: 'D-3: an unknown path is 404 not_found',
    async run(ctx) {
      const ex = await ctx.send({ method: 'GET', path: appPath(ctx.target.appId, 'no-such-resource') });
      ctx.error(ex, 'unknown path', { status: 404, type: 'not_found' });
    },
  },
  {
    id: 'S7-method-not-allowed-405',
    level: 'REFERENCE',
    description: 'D-3: a known path with a wrong method is 405 invalid_request_error, code method_not_allowed, with Allow',
    async run(ctx) {
      const ex = await ctx.send({ method: 'PUT', path: convPath(ctx.target.appId), body: {} });
      ctx.error(ex, 'PUT /conversations', { status: 405, type: 'invalid_request_error', code: 'method_not_allowed' });
      const allow = (ex.headers.get('allow') ?? '').split(',').map((m) => m.trim());
      ctx.check(allow.includes('GET') && allow.includes('POST'), `Allow header ${JSON.stringify(ex.headers.get('allow'))} does not list GET and POST`, ex);
    },
  },
  {
    id: 'S7-unsupported-media-type-415',
    level: 'REFERENCE',
    description: 'D-2: a body that is not declared JSON is 415, code unsupported_media_type',
    async run(ctx) {
      const b = await baselineCreate(ctx);
      const ex = await ctx.send({ ...b.request, body: undefined, raw: JSON.stringify(b.request.body), headers: { 'content-type': 'text/plain' } });
      ctx.error(ex, 'text/plain body', { status: 415, type: 'invalid_request_error', code: 'unsupported_media_type' });
    },
  },
  {
    id: 'S7-body-too-large-413',
    level: 'REFERENCE',
    description: 'D-2: a body over 1 MiB is 413, code body_too_large',
    async run(ctx) {
      const b = await baselineCreate(ctx);
      const body = JSON.stringify({ ...(b.request.body as object), title: 'x'.repeat(1024 * 1024) });
      const ex = await ctx.send({ ...b.request, body: undefined, raw: body, headers: { 'content-type': 'application/json' } });
      ctx.error(ex, 'body of more than 1 MiB', { status: 413, type: 'invalid_request_error', code: 'body_too_large' });
    },
  },
  {
    id: 'S7-request-id',
    level: 'REFERENCE',
    description: 'D-5: responses, errors included, carry an x-request-id header',
    async run(ctx) {
      const ok = await ctx.send({ method: 'GET', path: appPath(ctx.target.appId, 'config') });
      ctx.check(ok.headers.get('x-request-id'), 'no x-request-id on a 200', ok);
      const err = await ctx.send({ method: 'GET', path: appPath(ctx.target.appId, 'config'), key: null });
      ctx.check(err.headers.get('x-request-id'), 'no x-request-id on a 401', err);
    },
  },
]);
