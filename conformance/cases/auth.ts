// §5 authentication and §7's access errors on every endpoint (with stream: true as well): 401
// invalid_api_key, 403 access_denied / app_inactive / agent_unavailable, 404 for an unknown app, and
// tenancy: a conversation is out of reach under another app of the team and of another team.
import { defineCases, type CaseContext, type CaseDef } from '../context.ts';
import type { Exchange, OutgoingRequest } from '../http.ts';
import { CONVERSATION_SCOPED, ENDPOINTS, rows, type EndpointKey } from '../interface-clauses.ts';
import {
  appPath,
  baselineCompletion,
  baselineCreate,
  baselineSend,
  convPath,
  createConversation,
  getConversation,
  lookalike,
  unknownConversationId,
  withBody,
} from './common.ts';

const INVALID_KEY = 'sk_live_conformanceInvalidKey0000000000000000';

/** How a request is named in a failure: its method and path, and whether it asked for a stream. */
export function label(r: OutgoingRequest): string {
  return `${r.method} ${r.path}${(r.body as { stream?: unknown } | undefined)?.stream === true ? ' {stream: true}' : ''}`;
}

/**
 * One request per endpoint of §4, each of which passed with the key earlier in the run (the
 * baselines), so that the key is the one thing a case changes; send message and completion also
 * with `stream: true` (their errors are error objects whether they stream or not).
 */
async function everyEndpoint(ctx: CaseContext): Promise<Array<[EndpointKey, OutgoingRequest]>> {
  const app = ctx.target.appId;
  const created = await baselineCreate(ctx);
  const c = created.value;
  const send = await baselineSend(ctx);
  const completion = await baselineCompletion(ctx);
  const reads: Array<[EndpointKey, OutgoingRequest]> = [
    ['list', { method: 'GET', path: convPath(app) }],
    ['get', { method: 'GET', path: convPath(app, c.id) }],
    ['update', { method: 'PATCH', path: convPath(app, c.id), body: { title: c.title } }],
    ['config', { method: 'GET', path: appPath(app, 'config') }],
    ['metrics', { method: 'GET', path: appPath(app, 'metrics') }],
  ];
  for (const [, r] of reads) ctx.check((await ctx.send(r)).status === 200, `${label(r)} with the key: expected HTTP 200`);
  // DELETE last, on a conversation of its own, checked after the unauthenticated attempts.
  const victim = await ctx.send(created.request);
  const victimId = (ctx.ok(victim, ctx.schemas.conversation, 'create conversation') as { id: string }).id;
  const streamed = (r: OutgoingRequest) => withBody(r, (body) => ({ ...body, stream: true }));
  return [
    ['create', created.request],
    ...reads,
    ['delete', { method: 'DELETE', path: convPath(app, victimId) }],
    ['send', send.request],
    ['send-stream', streamed(send.request)],
    ['completion', completion.request],
    ['completion-stream', streamed(completion.request)],
  ];
}

/**
 * The same endpoints on another app (`app`), with `conversationId` for the conversation-scoped ones:
 * for the errors that depend on the app, not on the key.
 */
export function endpointsOn(
  ctx: CaseContext,
  app: string,
  conversationId: string,
  keys: readonly EndpointKey[] = ENDPOINTS.map((e) => e[0]),
): Array<[EndpointKey, OutgoingRequest]> {
  const message = { message: { content: 'Hello!' } };
  const all: Array<[EndpointKey, OutgoingRequest]> = [
    ['create', { method: 'POST', path: convPath(app), body: { external_user_id: ctx.tag, metadata: ctx.tagMetadata } }],
    ['list', { method: 'GET', path: convPath(app) }],
    ['get', { method: 'GET', path: convPath(app, conversationId) }],
    ['update', { method: 'PATCH', path: convPath(app, conversationId), body: { title: 'Changed by conformance' } }],
    ['delete', { method: 'DELETE', path: convPath(app, conversationId) }],
    ['send', { method: 'POST', path: convPath(app, conversationId), body: { ...message, stream: false } }],
    ['send-stream', { method: 'POST', path: convPath(app, conversationId), body: { ...message, stream: true } }],
    ['completion', { method: 'POST', path: appPath(app, 'completions'), body: { prompt: 'Hello' } }],
    ['completion-stream', { method: 'POST', path: appPath(app, 'completions'), body: { prompt: 'Hello', stream: true } }],
    ['config', { method: 'GET', path: appPath(app, 'config') }],
    ['metrics', { method: 'GET', path: appPath(app, 'metrics') }],
  ];
  return all.filter(([k]) => keys.includes(k));
}

/** Whether the newest 100 conversations of `app` include `id` (a conversation the case just created is among them). */
async function listed(ctx: CaseContext, app: string, id: string): Promise<boolean> {
  const ex = await ctx.send({ method: 'GET', path: `${convPath(app)}?limit=100` });
  return (ctx.ok(ex, ctx.schemas.list, `list of ${app}`) as { data: Array<{ id: string }> }).data.some((c) => c.id === id);
}

/** An app id that no app has, shaped like app_id (§2.10 does not show the format). */
function unknownAppId(ctx: CaseContext): string {
  const known = new Set([ctx.target.appId, ...Object.values(ctx.target.apps)]);
  for (let shift = 1; shift <= 5; shift++) {
    const id = lookalike(ctx.target.appId, shift);
    if (!known.has(id)) return id;
  }
  return `${ctx.target.appId}x`;
}

/**
 * The error an app condition gives (`expected`). On a conversation-scoped path with a made-up
 * conversation id, "conversation not found" holds too and the order of the checks is not shown:
 * profile spec accepts 404 not_found there; profile reference wants the app condition first (D-4).
 */
function appConditionError(
  ctx: CaseContext,
  key: EndpointKey,
  ex: Exchange,
  what: string,
  expected: { status: number; type: string },
): void {
  if (!ctx.reference && CONVERSATION_SCOPED.includes(key) && ex.status === 404) ctx.error(ex, what, { status: 404, type: 'not_found' });
  else ctx.error(ex, what, expected);
}

export const auth: CaseDef[] = defineCases('5', [
  {
    id: 'S5-missing-key-401',
    level: 'MUST',
    clauses: [
      ...rows('§5.6.missing-key'),
      '§7.invalid_api_key',
      '§7.body',
      '§7.body.message',
      '§7.body.type',
      '§7.body.param',
      '§7.body.code',
      'D-17',
    ],
    description:
      'every endpoint (send message and completion also with stream: true) answers 401 invalid_api_key without an Authorization header',
    async run(ctx) {
      for (const [, r] of await everyEndpoint(ctx)) {
        const ex = await ctx.send({ ...r, key: null });
        ctx.error(ex, `${label(r)} without a key`, { status: 401, type: 'invalid_api_key' });
      }
    },
  },
  {
    id: 'S5-invalid-key-401',
    level: 'MUST',
    clauses: [...rows('§5.6.invalid-key'), '§7.invalid_api_key'],
    description: 'every endpoint (send message and completion also with stream: true) answers 401 invalid_api_key to an unknown key',
    async run(ctx) {
      for (const [, r] of await everyEndpoint(ctx)) {
        const ex = await ctx.send({ ...r, key: INVALID_KEY });
        ctx.error(ex, `${label(r)} with an unknown key`, { status: 401, type: 'invalid_api_key' });
      }
    },
  },
  {
    id: 'S5-wrong-scheme-401',
    level: 'MUST',
    clauses: ['§5.1.bearer', 'D-6'],
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
    clauses: [...rows('§5.6.access-denied'), '§7.access_denied', 'D-4'],
    needs: ['apps.other_team'],
    description:
      "every endpoint of another team's app answers 403 access_denied, with stream: true as well (with a made-up conversation id, 404 not_found is accepted too; reference: 403, D-4)",
    async run(ctx) {
      const app = ctx.app('apps.other_team');
      for (const [key, r] of endpointsOn(ctx, app, await unknownConversationId(ctx))) {
        appConditionError(ctx, key, await ctx.send(r), label(r), { status: 403, type: 'access_denied' });
      }
    },
  },
  {
    id: 'S5-other-team-conversation',
    level: 'MUST',
    clauses: [
      ...rows('§5.6.access-denied', CONVERSATION_SCOPED),
      ...rows('§7.other-team-conversation'),
      '§7.access_denied',
      '§7.not_found',
      '§1.app-scoped',
    ],
    needs: ['apps.other_team', 'other_team_api_key'],
    description:
      'a conversation of the other team (created with other_team_api_key) is out of reach of api_key: get, update, delete and send (JSON and stream) answer 403 access_denied under its app and 404 not_found under app_id, and it is left as it was',
    async run(ctx) {
      const app = ctx.app('apps.other_team');
      const otherKey = ctx.app('other_team_api_key');
      const title = 'Owned by the other team';
      const created = await ctx.send({
        method: 'POST',
        path: convPath(app),
        key: otherKey,
        body: { external_user_id: ctx.tag, title, metadata: ctx.tagMetadata },
      });
      const theirs = ctx.ok(
        created,
        ctx.schemas.conversation,
        "create a conversation with other_team_api_key on apps.other_team (the other team's own app)",
      );
      const read = async (what: string) => {
        const ex = await ctx.send({ method: 'GET', path: convPath(app, theirs.id), key: otherKey });
        return {
          ex,
          conv: ctx.ok(ex, ctx.schemas.conversationWithItems, `${what}: get the other team's conversation with other_team_api_key`) as {
            title: unknown;
            items: unknown[];
          },
        };
      };
      const before = await read('before');
      for (const [key, r] of endpointsOn(ctx, app, theirs.id, CONVERSATION_SCOPED)) {
        ctx.error(await ctx.send(r), `${label(r)} (the other team's conversation, under its app)`, { status: 403, type: 'access_denied' });
        const mine = endpointsOn(ctx, ctx.target.appId, theirs.id, [key])[0]![1];
        ctx.error(await ctx.send(mine), `${label(mine)} (the other team's conversation, under app_id)`, { status: 404, type: 'not_found' });
      }
      ctx.check(!(await listed(ctx, ctx.target.appId, theirs.id)), `the other team's conversation ${theirs.id} is listed under app_id`);
      // Read by its owner: nothing of the refused requests shows.
      const after = await read('after the refused requests');
      ctx.equal(after.conv.title, title, "title of the other team's conversation after refused requests", after.ex);
      ctx.equal(
        after.conv.items.length,
        before.conv.items.length,
        "number of items of the other team's conversation after refused messages",
        after.ex,
      );
    },
  },
  {
    id: 'S5-publishable-key-refused',
    level: 'MUST',
    clauses: [...rows('§5.4.publishable'), 'D-6', 'D-45'],
    needs: ['publishable_key'],
    description:
      'a publishable key cannot call the REST API: every endpoint answers 401 or 403 (reference: 403 access_denied, code publishable_key, D-6)',
    async run(ctx) {
      const key = ctx.app('publishable_key');
      for (const [, r] of await everyEndpoint(ctx)) {
        const ex = await ctx.send({ ...r, key });
        const what = `${label(r)} with the publishable key`;
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
    clauses: ['D-4'],
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
    clauses: [
      ...rows('§7.unknown-app'),
      '§7.not_found',
      '§7.body',
      '§7.body.message',
      '§7.body.type',
      '§7.body.param',
      '§7.body.code',
      '§2.10.ids-opaque',
      'D-4',
    ],
    description:
      'every endpoint of an app that does not exist (an id shaped like app_id) answers 404 not_found or 403 access_denied, with stream: true as well (§5.6 and §7 overlap; reference: 404, D-4)',
    async run(ctx) {
      const app = unknownAppId(ctx);
      for (const [key, r] of endpointsOn(ctx, app, await unknownConversationId(ctx))) {
        const ex = await ctx.send(r);
        // A key "without access to the app" (§5.6) and "app not found" (§7) both describe it.
        if (!ctx.reference && ex.status === 403) ctx.error(ex, label(r), { status: 403, type: 'access_denied' });
        else appConditionError(ctx, key, ex, label(r), { status: 404, type: 'not_found' });
      }
    },
  },
  {
    id: 'S7-app-inactive-403',
    level: 'MUST',
    clauses: [...rows('§7.app-inactive'), '§7.app_inactive', 'D-4'],
    needs: ['apps.inactive'],
    description:
      'every endpoint of a disabled app answers 403 app_inactive, with stream: true as well (with a made-up conversation id, 404 not_found is accepted too; reference: 403, D-4)',
    async run(ctx) {
      const app = ctx.app('apps.inactive');
      for (const [key, r] of endpointsOn(ctx, app, await unknownConversationId(ctx))) {
        appConditionError(ctx, key, await ctx.send(r), label(r), { status: 403, type: 'app_inactive' });
      }
    },
  },
  {
    id: 'S7-app-inactive-conversation',
    level: 'MUST',
    clauses: [...rows('§7.app-inactive', CONVERSATION_SCOPED), '§7.app_inactive'],
    needs: ['apps.inactive', 'apps.inactive_conversation'],
    description:
      'a real conversation of the disabled app (apps.inactive_conversation): get, update, delete and send message (JSON and stream) answer 403 app_inactive, the app being disabled; "not found" does not hold, so 404 is no answer here',
    async run(ctx) {
      const app = ctx.app('apps.inactive');
      const id = ctx.app('apps.inactive_conversation');
      for (const [, r] of endpointsOn(ctx, app, id, CONVERSATION_SCOPED)) {
        ctx.error(await ctx.send(r), `${label(r)} (apps.inactive_conversation, a conversation of the disabled app)`, {
          status: 403,
          type: 'app_inactive',
        });
      }
    },
  },
  {
    id: 'S7-agent-unavailable-403',
    level: 'MUST',
    clauses: [...rows('§7.agent-unavailable'), '§7.agent_unavailable', 'D-4'],
    needs: ['apps.no_agent'],
    description:
      'on an app without an active agent, completion and send message answer 403 agent_unavailable, with stream: true as well (send: to a conversation of that app where one can be created, else a made-up id, where 404 not_found is accepted too)',
    async run(ctx) {
      const app = ctx.app('apps.no_agent');
      const created = await ctx.send({
        method: 'POST',
        path: convPath(app),
        body: { external_user_id: ctx.tag, metadata: ctx.tagMetadata },
      });
      // Whether an app without an agent holds conversations is not shown (reference: it does, D-4).
      let conversationId: string;
      if (created.status === 200 || ctx.reference)
        conversationId = ctx.ok(created, ctx.schemas.conversation, 'create a conversation on the app without an agent').id;
      else {
        ctx.error(created, 'create a conversation on the app without an agent (refused)');
        conversationId = await unknownConversationId(ctx);
      }
      for (const [key, r] of endpointsOn(ctx, app, conversationId, ['send', 'send-stream', 'completion', 'completion-stream'])) {
        const ex = await ctx.send(r);
        if (created.status === 200) ctx.error(ex, label(r), { status: 403, type: 'agent_unavailable' });
        else appConditionError(ctx, key, ex, label(r), { status: 403, type: 'agent_unavailable' });
      }
    },
  },
  {
    id: 'S7-other-app-conversation-404',
    level: 'MUST',
    clauses: [...rows('§7.other-app-conversation'), '§7.not_found', '§1.app-scoped'],
    needs: ['apps.knowledge_base'],
    description:
      "a conversation of app_id reached under another app of the same team (apps.knowledge_base): get, update, delete and send (JSON and stream) answer 404 not_found, it is left as it was (still listed, same title and items), and that app's list does not show it",
    async run(ctx) {
      const other = ctx.app('apps.knowledge_base');
      const { conv } = await createConversation(ctx, {
        external_user_id: ctx.tag,
        title: 'Kept by conformance',
        metadata: ctx.tagMetadata,
      });
      const before = await getConversation(ctx, conv.id);
      for (const [, r] of endpointsOn(ctx, other, conv.id, CONVERSATION_SCOPED)) {
        ctx.error(await ctx.send(r), `${label(r)} (a conversation of app_id)`, { status: 404, type: 'not_found' });
      }
      const after = await getConversation(ctx, conv.id);
      ctx.equal(
        [after.title, after.items.length],
        [before.title, before.items.length],
        '[title, number of items] after the refused requests under another app',
      );
      ctx.check(
        await listed(ctx, ctx.target.appId, conv.id),
        `conversation ${conv.id} is no longer listed after a DELETE under another app`,
      );
      ctx.check(!(await listed(ctx, other, conv.id)), `conversation ${conv.id} of app_id is listed under apps.knowledge_base`);
    },
  },
  {
    id: 'S7-agent-unavailable-send',
    level: 'REFERENCE',
    clauses: ['D-4'],
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
    clauses: ['D-3'],
    description: 'D-3: an unknown path is 404 not_found',
    async run(ctx) {
      const ex = await ctx.send({ method: 'GET', path: appPath(ctx.target.appId, 'no-such-resource') });
      ctx.error(ex, 'unknown path', { status: 404, type: 'not_found' });
    },
  },
  {
    id: 'S7-method-not-allowed-405',
    level: 'REFERENCE',
    clauses: ['D-3'],
    description: 'D-3: a known path with a wrong method is 405 invalid_request_error, code method_not_allowed, with Allow',
    async run(ctx) {
      const ex = await ctx.send({ method: 'PUT', path: convPath(ctx.target.appId), body: {} });
      ctx.error(ex, 'PUT /conversations', { status: 405, type: 'invalid_request_error', code: 'method_not_allowed' });
      const allow = (ex.headers.get('allow') ?? '').split(',').map((m) => m.trim());
      ctx.check(
        allow.includes('GET') && allow.includes('POST'),
        `Allow header ${JSON.stringify(ex.headers.get('allow'))} does not list GET and POST`,
        ex,
      );
    },
  },
  {
    id: 'S7-unsupported-media-type-415',
    level: 'REFERENCE',
    clauses: ['D-2'],
    description: 'D-2: a body that is not declared JSON is 415, code unsupported_media_type',
    async run(ctx) {
      const b = await baselineCreate(ctx);
      const ex = await ctx.send({
        ...b.request,
        body: undefined,
        raw: JSON.stringify(b.request.body),
        headers: { 'content-type': 'text/plain' },
      });
      ctx.error(ex, 'text/plain body', { status: 415, type: 'invalid_request_error', code: 'unsupported_media_type' });
    },
  },
  {
    id: 'S7-body-too-large-413',
    level: 'REFERENCE',
    clauses: ['D-2'],
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
    clauses: ['D-5'],
    description: 'D-5: responses, errors included, carry an x-request-id header',
    async run(ctx) {
      const ok = await ctx.send({ method: 'GET', path: appPath(ctx.target.appId, 'config') });
      ctx.check(ok.headers.get('x-request-id'), 'no x-request-id on a 200', ok);
      const err = await ctx.send({ method: 'GET', path: appPath(ctx.target.appId, 'config'), key: null });
      ctx.check(err.headers.get('x-request-id'), 'no x-request-id on a 401', err);
    },
  },
]);
