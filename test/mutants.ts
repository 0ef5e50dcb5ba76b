// The broken implementations that prove the conformance suite: each breaks one rule of the interface
// (or of a D-n decision, judged in profile `reference`) behind a loopback proxy, and names the case
// that must catch it. test/conformance-mutants.test.ts runs them; docs/conformance.md lists them.
import type { Profile } from '../conformance/context.ts';
import { TARGET } from './helpers.ts';
import type { MutantHooks, ProxyRequest, ProxyResponse } from './mutant-proxy.ts';

export interface Mutant {
  id: string;
  /** What is broken, in one line. */
  breaks: string;
  /** The interface section (or decision) it breaks. */
  section: string;
  profile: Profile;
  /** The case that must fail. */
  caughtBy: string;
  /** A shorter per-request timeout for the run (mutants that stall). */
  timeoutMs?: number;
  basePath?: string;
  hooks(): MutantHooks;
}

const CONVS = /^\/apps\/[^/]+\/conversations$/;
const CONV = /^\/apps\/[^/]+\/conversations\/[^/]+$/;
const is = (req: ProxyRequest, method: string, re: RegExp) => req.method === method && re.test(req.path);
const errorBody = (status: number, type: string, message = 'mutant', param: string | null = null, code: string | null = null): ProxyResponse => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: '',
  json: { error: { message, type, param, code } },
});
const jsonBody = (json: unknown): ProxyResponse => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '', json });

/** A response hook on requests that match. */
function onResponse(match: (req: ProxyRequest) => boolean, change: (res: ProxyResponse, req: ProxyRequest) => void): () => MutantHooks {
  return () => ({
    response(res, req) {
      if (match(req)) change(res, req);
    },
  });
}

function onRequest(change: (req: ProxyRequest) => ProxyResponse | void): () => MutantHooks {
  return () => ({ request: change });
}

const ok = (res: ProxyResponse) => res.status === 200;
const COMPLETIONS = /^\/apps\/[^/]+\/completions$/;
const isSend = (r: ProxyRequest) => is(r, 'POST', CONV);
const isCompletion = (r: ProxyRequest) => is(r, 'POST', COMPLETIONS);
const isStream = (res: ProxyResponse) => res.events !== undefined;
const payloads = (res: ProxyResponse, type: string) => (res.events ?? []).filter((e) => e.event === type).map((e) => e.data);

function onStream(match: (req: ProxyRequest) => boolean, change: (res: ProxyResponse, req: ProxyRequest) => void): () => MutantHooks {
  return onResponse((r) => match(r), (res, req) => isStream(res) && change(res, req));
}

function truncate(field: (json: any) => [any, string] | undefined, max: number): () => MutantHooks {
  return onRequest((r) => {
    const at = r.json && field(r.json);
    if (at && typeof at[0]?.[at[1]] === 'string' && at[0][at[1]].length > max) at[0][at[1]] = at[0][at[1]].slice(0, max);
  });
}

export const MUTANTS: Mutant[] = [
  // §4.1 create conversation
  {
    id: 'create-no-object',
    breaks: 'create answers a conversation without `object`',
    section: '4.1',
    profile: 'spec',
    caughtBy: 'S4.1-create-shape',
    hooks: onResponse((r) => is(r, 'POST', CONVS), (res) => ok(res) && delete res.json.object),
  },
  {
    id: 'create-drops-metadata',
    breaks: 'create ignores the metadata it was given',
    section: '4.1',
    profile: 'spec',
    caughtBy: 'S4.1-create-shape',
    hooks: onResponse((r) => is(r, 'POST', CONVS), (res) => ok(res) && (res.json.metadata = {})),
  },
  {
    id: 'create-created-at-ms',
    breaks: 'created_at in milliseconds instead of seconds',
    section: '4.1',
    profile: 'spec',
    caughtBy: 'S4.1-create-shape',
    hooks: onResponse((r) => is(r, 'POST', CONVS), (res) => ok(res) && (res.json.created_at *= 1000)),
  },
  {
    id: 'create-requires-fields',
    breaks: 'create refuses an empty body {} although every field is optional',
    section: '4.1',
    profile: 'spec',
    caughtBy: 'S4.1-create-empty-body',
    hooks: onRequest((r) => (is(r, 'POST', CONVS) && r.json && Object.keys(r.json).length === 0 ? errorBody(400, 'invalid_request_error', 'title is required', 'title') : undefined)),
  },
  {
    id: 'create-accepts-malformed-json',
    breaks: 'a body that is not JSON is taken as {}',
    section: '4.1',
    profile: 'spec',
    caughtBy: 'S4.1-create-malformed-json',
    hooks: onRequest((r) => {
      if (is(r, 'POST', CONVS) && r.body && r.json === undefined) {
        r.body = '{}';
        r.json = {};
      }
    }),
  },
  {
    id: 'create-ignores-unknown-field',
    breaks: 'an unknown field is silently dropped instead of a 400 (D-1)',
    section: 'D-1',
    profile: 'reference',
    caughtBy: 'S4.1-create-unknown-field',
    hooks: onRequest((r) => {
      if (is(r, 'POST', CONVS) && r.json && 'colour' in r.json) delete r.json.colour;
    }),
  },
  {
    id: 'create-omits-defaults',
    breaks: 'external_user_id and metadata left out instead of null and {} (D-9, D-10)',
    section: 'D-9',
    profile: 'reference',
    caughtBy: 'S4.1-create-defaults',
    hooks: onResponse((r) => is(r, 'POST', CONVS), (res, req) => {
      if (!ok(res)) return;
      if (!('metadata' in (req.json ?? {}))) delete res.json.metadata;
      if (!('external_user_id' in (req.json ?? {}))) delete res.json.external_user_id;
    }),
  },
  // §4.2 list
  {
    id: 'list-no-has-more',
    breaks: 'the list has no `has_more`',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-shape',
    hooks: onResponse((r) => is(r, 'GET', CONVS), (res) => ok(res) && delete res.json.has_more),
  },
  {
    id: 'list-first-id-wrong',
    breaks: 'first_id names the last conversation of the page',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-shape',
    hooks: onResponse((r) => is(r, 'GET', CONVS), (res) => ok(res) && (res.json.first_id = res.json.last_id)),
  },
  {
    id: 'list-empty-ids-not-null',
    breaks: 'an empty page has first_id/last_id "" instead of null',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-empty',
    hooks: onResponse((r) => is(r, 'GET', CONVS), (res) => {
      if (ok(res) && res.json.data.length === 0) res.json.first_id = res.json.last_id = '';
    }),
  },
  {
    id: 'list-after-skips-one',
    breaks: 'pages after a cursor skip their first conversation',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-after-walk-asc',
    hooks: onResponse((r) => is(r, 'GET', CONVS) && r.query.has('after'), (res) => {
      if (!ok(res) || res.json.data.length === 0) return;
      res.json.data.shift();
      res.json.first_id = res.json.data[0]?.id ?? null;
      res.json.last_id = res.json.data.at(-1)?.id ?? null;
    }),
  },
  {
    id: 'list-desc-after-goes-back',
    breaks: '`after` in desc order returns newer conversations (the literal "created after"), so last_id walks loop',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-after-walk-desc',
    hooks: onRequest((r) => {
      if (is(r, 'GET', CONVS) && r.query.has('after') && r.query.get('order') !== 'asc') {
        r.query.set('before', r.query.get('after')!);
        r.query.delete('after');
      }
    }),
  },
  {
    id: 'list-has-more-false',
    breaks: 'has_more is always false',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-limit',
    hooks: onResponse((r) => is(r, 'GET', CONVS), (res) => ok(res) && (res.json.has_more = false)),
  },
  {
    id: 'list-default-limit-10',
    breaks: 'the default page size is 10, not 20',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-default-limit',
    hooks: onRequest((r) => {
      if (is(r, 'GET', CONVS) && !r.query.has('limit')) r.query.set('limit', '10');
    }),
  },
  {
    id: 'list-default-order-asc',
    breaks: 'the default order is asc, not desc',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-order-default-desc',
    hooks: onRequest((r) => {
      if (is(r, 'GET', CONVS) && !r.query.has('order')) r.query.set('order', 'asc');
    }),
  },
  {
    id: 'list-ignores-before',
    breaks: 'the `before` cursor is ignored',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-before-asc',
    hooks: onRequest((r) => {
      if (is(r, 'GET', CONVS)) r.query.delete('before');
    }),
  },
  {
    id: 'list-before-desc-wrong-side',
    breaks: '`before` in desc order returns older conversations instead of the preceding page (D-12)',
    section: 'D-12',
    profile: 'reference',
    caughtBy: 'S4.2-list-before-desc',
    hooks: onRequest((r) => {
      if (is(r, 'GET', CONVS) && r.query.has('before') && r.query.get('order') === 'desc') {
        r.query.set('after', r.query.get('before')!);
        r.query.delete('before');
      }
    }),
  },
  {
    id: 'list-unknown-cursor-empty',
    breaks: 'an unknown cursor gives an empty page instead of 400 invalid_cursor (D-12)',
    section: 'D-12',
    profile: 'reference',
    caughtBy: 'S4.2-list-unknown-cursor',
    hooks: onResponse((r) => is(r, 'GET', CONVS), (res) => {
      if (res.status === 400 && res.json?.error?.code === 'invalid_cursor') Object.assign(res, jsonBody({ object: 'list', data: [], first_id: null, last_id: null, has_more: false }));
    }),
  },
  {
    id: 'list-limit-clamped',
    breaks: 'limit=101 is clamped to 100 instead of a 400 (D-12)',
    section: 'D-12',
    profile: 'reference',
    caughtBy: 'S8-list-limit-101',
    hooks: onRequest((r) => {
      if (is(r, 'GET', CONVS) && Number(r.query.get('limit')) > 100) r.query.set('limit', '100');
    }),
  },
  // §4.3 get
  {
    id: 'get-no-items',
    breaks: 'GET conversation has no `items`',
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.3-get-shape',
    hooks: onResponse((r) => is(r, 'GET', CONV), (res) => ok(res) && delete res.json.items),
  },
  {
    id: 'get-unknown-500',
    breaks: 'an unknown conversation is 500 instead of 404 not_found',
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.3-get-unknown-404',
    hooks: onResponse((r) => is(r, 'GET', CONV), (res) => res.status === 404 && Object.assign(res, errorBody(500, 'internal_error'))),
  },
  // §4.4 update
  {
    id: 'update-not-persisted',
    breaks: 'PATCH answers the new title but does not store it',
    section: '4.4',
    profile: 'spec',
    caughtBy: 'S4.4-update-title',
    hooks: () => ({
      async request(r, { forward }) {
        if (!is(r, 'PATCH', CONV) || typeof r.json?.title !== 'string') return;
        const current = await forward({ ...r, method: 'GET', body: '', json: undefined });
        if (current.status === 200) return jsonBody({ ...current.json, items: undefined, title: r.json.title });
      },
    }),
  },
  {
    id: 'update-null-refused',
    breaks: 'PATCH {title: null} is refused',
    section: '4.4',
    profile: 'spec',
    caughtBy: 'S4.4-update-title-null',
    hooks: onRequest((r) => (is(r, 'PATCH', CONV) && r.json?.title === null ? errorBody(400, 'invalid_request_error', 'title must be a string', 'title') : undefined)),
  },
  {
    id: 'update-unknown-200',
    breaks: 'PATCH of an unknown conversation answers 200',
    section: '4.4',
    profile: 'spec',
    caughtBy: 'S4.4-update-unknown-404',
    hooks: onResponse((r) => is(r, 'PATCH', CONV), (res, req) => {
      if (res.status === 404) Object.assign(res, jsonBody({ id: req.path.split('/').pop(), object: 'conversation', created_at: 1, title: 'x', generated_title: {}, metadata: {} }));
    }),
  },
  {
    id: 'update-extra-field-ignored',
    breaks: 'PATCH ignores fields other than title instead of a 400 (D-13)',
    section: 'D-13',
    profile: 'reference',
    caughtBy: 'S4.4-update-other-field',
    hooks: onRequest((r) => {
      if (is(r, 'PATCH', CONV) && r.json && 'metadata' in r.json) delete r.json.metadata;
    }),
  },
  // §4.5 delete
  {
    id: 'delete-no-deleted-flag',
    breaks: 'the deletion result has no `deleted`',
    section: '4.5',
    profile: 'spec',
    caughtBy: 'S4.5-delete-shape',
    hooks: onResponse((r) => is(r, 'DELETE', CONV), (res) => ok(res) && delete res.json.deleted),
  },
  {
    id: 'delete-unknown-200',
    breaks: 'DELETE of an unknown conversation answers 200',
    section: '4.5',
    profile: 'spec',
    caughtBy: 'S4.5-delete-unknown-404',
    hooks: onResponse((r) => is(r, 'DELETE', CONV), (res, req) => res.status === 404 && Object.assign(res, jsonBody({ id: req.path.split('/').pop(), object: 'conversation', deleted: true }))),
  },
  {
    id: 'delete-is-noop',
    breaks: 'DELETE answers 200 but the conversation stays listed',
    section: '3',
    profile: 'spec',
    caughtBy: 'S4.2-list-excludes-deleted',
    hooks: onRequest((r) => (is(r, 'DELETE', CONV) ? jsonBody({ id: r.path.split('/').pop(), object: 'conversation', deleted: true }) : undefined)),
  },
  // §4.8 config, §4.9 metrics
  {
    id: 'config-no-secondary-color',
    breaks: 'config.agent.config has no secondary_color',
    section: '4.8',
    profile: 'spec',
    caughtBy: 'S4.8-config-shape',
    hooks: onResponse((r) => r.path.endsWith('/config'), (res) => ok(res) && delete res.json.agent.config.secondary_color),
  },
  {
    id: 'config-text-plain',
    breaks: 'config is served as text/plain',
    section: '1',
    profile: 'spec',
    caughtBy: 'S4.8-config-shape',
    hooks: onResponse((r) => r.path.endsWith('/config'), (res) => ok(res) && (res.headers['content-type'] = 'text/plain')),
  },
  {
    id: 'config-generative-ui-false',
    breaks: 'the generative-UI app reports generative_ui: false',
    section: '4.8',
    profile: 'spec',
    caughtBy: 'S4.8-config-generative-ui',
    hooks: onResponse((r) => r.path.endsWith('/config'), (res) => ok(res) && (res.json.generative_ui = false)),
  },
  {
    id: 'metrics-string-counts',
    breaks: 'total_users is a string',
    section: '4.9',
    profile: 'spec',
    caughtBy: 'S4.9-metrics-shape',
    hooks: onResponse((r) => r.path.endsWith('/metrics'), (res) => ok(res) && (res.json.total_users = String(res.json.total_users))),
  },
  {
    id: 'metrics-stale',
    breaks: 'metrics are cached and never change',
    section: '4.9',
    profile: 'spec',
    caughtBy: 'S4.9-metrics-conversations',
    hooks: () => {
      let first: unknown;
      return {
        response(res, req) {
          if (!req.path.endsWith('/metrics') || !ok(res)) return;
          first ??= res.json;
          res.json = first;
        },
      };
    },
  },
  {
    id: 'metrics-uncount-deleted',
    breaks: 'deleting a conversation lowers total_conversations (D-24)',
    section: 'D-24',
    profile: 'reference',
    caughtBy: 'S4.9-metrics-keep-deleted',
    hooks: () => {
      let deleted = 0;
      return {
        response(res, req) {
          if (is(req, 'DELETE', CONV) && ok(res)) deleted++;
          if (req.path.endsWith('/metrics') && ok(res)) res.json.total_conversations -= deleted;
        },
      };
    },
  },
  // §5 authentication
  {
    id: 'auth-metrics-open',
    breaks: 'metrics can be read without a key',
    section: '5',
    profile: 'spec',
    caughtBy: 'S5-missing-key-401',
    hooks: onRequest((r) => {
      if (r.path.endsWith('/metrics') && !r.headers.authorization) r.headers.authorization = `Bearer ${TARGET.api_key}`;
    }),
  },
  {
    id: 'auth-invalid-key-403',
    breaks: 'an unknown key is 403 access_denied instead of 401 invalid_api_key',
    section: '5',
    profile: 'spec',
    caughtBy: 'S5-invalid-key-401',
    hooks: onResponse((r) => Boolean(r.headers.authorization), (res) => res.status === 401 && Object.assign(res, errorBody(403, 'access_denied'))),
  },
  {
    id: 'auth-any-scheme',
    breaks: 'the key is accepted under any scheme (Basic, Token)',
    section: '5',
    profile: 'spec',
    caughtBy: 'S5-wrong-scheme-401',
    hooks: onRequest((r) => {
      const m = /^(?:Basic|Token) (.+)$/.exec(r.headers.authorization ?? '');
      if (m) r.headers.authorization = `Bearer ${m[1]}`;
    }),
  },
  {
    id: 'auth-other-team-404',
    breaks: "another team's app is 404 instead of 403 access_denied",
    section: '5',
    profile: 'spec',
    caughtBy: 'S5-other-team-403',
    hooks: onResponse(() => true, (res) => res.status === 403 && res.json?.error?.type === 'access_denied' && Object.assign(res, errorBody(404, 'not_found'))),
  },
  {
    id: 'auth-publishable-accepted',
    breaks: 'a publishable key can call the REST API',
    section: '5',
    profile: 'spec',
    caughtBy: 'S5-publishable-key-refused',
    hooks: onRequest((r) => {
      if (r.headers.authorization === `Bearer ${TARGET.publishable_key}`) r.headers.authorization = `Bearer ${TARGET.api_key}`;
    }),
  },
  {
    id: 'auth-error-type-renamed',
    breaks: 'a missing key is 401 with type "unauthorized"',
    section: '7',
    profile: 'spec',
    caughtBy: 'S5-missing-key-401',
    hooks: onResponse(() => true, (res) => res.status === 401 && (res.json.error.type = 'unauthorized')),
  },
  // §7 errors
  {
    id: 'error-no-message',
    breaks: 'error objects have no `message`',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-unknown-app-404',
    hooks: onResponse(() => true, (res) => res.status >= 400 && res.json?.error && delete res.json.error.message),
  },
  {
    id: 'error-html',
    breaks: 'errors are served as text/html',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-unknown-app-404',
    hooks: onResponse(() => true, (res) => res.status >= 400 && (res.headers['content-type'] = 'text/html')),
  },
  {
    id: 'unknown-app-403',
    breaks: 'an unknown app is 403 access_denied instead of 404 not_found',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-unknown-app-404',
    hooks: onResponse(() => true, (res) => res.status === 404 && res.json?.error?.param === 'app_id' && Object.assign(res, errorBody(403, 'access_denied'))),
  },
  {
    id: 'inactive-app-access-denied',
    breaks: 'a disabled app is 403 access_denied instead of app_inactive (D-4)',
    section: '7',
    profile: 'reference',
    caughtBy: 'S7-app-inactive-every-endpoint',
    hooks: onResponse(() => true, (res) => res.json?.error?.type === 'app_inactive' && (res.json.error.type = 'access_denied')),
  },
  {
    id: 'method-no-allow',
    breaks: '405 without an Allow header (D-3)',
    section: 'D-3',
    profile: 'reference',
    caughtBy: 'S7-method-not-allowed-405',
    hooks: onResponse(() => true, (res) => res.status === 405 && delete res.headers.allow),
  },
  {
    id: 'any-content-type',
    breaks: 'a text/plain body is parsed as JSON instead of a 415 (D-2)',
    section: 'D-2',
    profile: 'reference',
    caughtBy: 'S7-unsupported-media-type-415',
    hooks: onRequest((r) => {
      if (r.headers['content-type'] === 'text/plain') r.headers['content-type'] = 'application/json';
    }),
  },
  {
    id: 'body-too-large-400',
    breaks: 'a body over 1 MiB is 400 instead of 413 (D-2)',
    section: 'D-2',
    profile: 'reference',
    caughtBy: 'S7-body-too-large-413',
    hooks: onResponse(() => true, (res) => res.status === 413 && (res.status = 400)),
  },
  {
    id: 'no-request-id',
    breaks: 'no x-request-id header (D-5)',
    section: 'D-5',
    profile: 'reference',
    caughtBy: 'S7-request-id',
    hooks: onResponse(() => true, (res) => delete res.headers['x-request-id']),
  },
  // §4.6 send message
  {
    id: 'send-no-conversation-id',
    breaks: 'the Response has no conversation_id',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-send-json-shape',
    hooks: onResponse(isSend, (res) => ok(res) && !isStream(res) && delete res.json.conversation_id),
  },
  {
    id: 'send-status-failed',
    breaks: 'every Response says status "failed"',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-send-json-shape',
    hooks: onResponse(isSend, (res) => ok(res) && !isStream(res) && (res.json.status = 'failed')),
  },
  {
    id: 'send-stream-true-ignored',
    breaks: 'stream:true answers JSON',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-stream-true-gives-sse',
    hooks: onRequest((r) => {
      if (isSend(r) && r.json?.stream === true) r.json.stream = false;
    }),
  },
  {
    id: 'send-default-streams',
    breaks: 'without stream, every app streams (the app default is ignored)',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-app-default-json',
    hooks: onRequest((r) => {
      if (isSend(r) && r.json && !('stream' in r.json)) r.json.stream = true;
    }),
  },
  {
    id: 'send-stream-false-ignored',
    breaks: 'stream:false does not override a streaming app default',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-stream-false-overrides-default',
    hooks: onRequest((r) => {
      if (isSend(r) && r.json?.stream === false) delete r.json.stream;
    }),
  },
  {
    id: 'send-any-role',
    breaks: 'role "assistant" is accepted as if it were "user"',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-role-not-user',
    hooks: onRequest((r) => {
      if (isSend(r) && r.json?.message?.role) r.json.message.role = 'user';
    }),
  },
  {
    id: 'send-metadata-dropped',
    breaks: 'metadata sent with a message is not kept',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-metadata-snapshot',
    hooks: onRequest((r) => {
      if (isSend(r) && r.json) delete r.json.metadata;
    }),
  },
  {
    id: 'send-unknown-conversation-400',
    breaks: 'sending to an unknown conversation is 400 instead of 404 not_found',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-unknown-conversation-404',
    hooks: onResponse(isSend, (res) => res.status === 404 && Object.assign(res, errorBody(400, 'invalid_request_error'))),
  },
  {
    id: 'title-never-generated',
    breaks: 'generated_title stays {} after the first exchange',
    section: '2.1',
    profile: 'spec',
    caughtBy: 'S4.6-generated-title',
    hooks: onResponse((r) => is(r, 'GET', CONV), (res) => ok(res) && (res.json.generated_title = {})),
  },
  {
    id: 'items-only-user-messages',
    breaks: "the history keeps the user's messages but not the agent's",
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.6-persisted-items',
    hooks: onResponse((r) => is(r, 'GET', CONV), (res) => ok(res) && (res.json.items = res.json.items.filter((i: any) => i.role === 'user'))),
  },
  {
    id: 'items-without-function-calls',
    breaks: 'function_call items are not persisted (D-14)',
    section: 'D-14',
    profile: 'reference',
    caughtBy: 'S4.6-persisted-items-agree',
    hooks: onResponse((r) => is(r, 'GET', CONV), (res) => ok(res) && (res.json.items = res.json.items.filter((i: any) => i.type !== 'function_call'))),
  },
  {
    id: 'metrics-messages-not-counted',
    breaks: 'total_messages never grows',
    section: '4.9',
    profile: 'spec',
    caughtBy: 'S4.9-metrics-messages',
    hooks: onResponse((r) => r.path.endsWith('/metrics'), (res) => ok(res) && (res.json.total_messages = 0)),
  },
  // §6 events
  {
    id: 'sse-stalls',
    breaks: 'a stream sends response.created, then nothing, and never ends',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-content-type',
    timeoutMs: 500,
    hooks: () => ({
      takeover(req, res) {
        if (!isSend(req) || req.json?.stream !== true) return false;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: response.created\ndata: {"id":"resp_1","object":"response","status":"in_progress"}\n\n');
        return true;
      },
    }),
  },
  {
    id: 'sse-cut-short',
    breaks: 'the connection drops in the middle of a stream',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-content-type',
    hooks: () => ({
      takeover(req, res) {
        if (!isSend(req) || req.json?.stream !== true) return false;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: response.created\ndata: {"id":"resp_1","object":"response","status":"in_progress"}\n\n', () => res.destroy());
        return true;
      },
    }),
  },
  {
    id: 'sse-text-plain',
    breaks: 'the stream is served as text/plain',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-content-type',
    hooks: onStream(isSend, (res) => (res.headers['content-type'] = 'text/plain')),
  },
  {
    id: 'sse-created-late',
    breaks: 'response.created comes after the first text delta',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-starts-created-ends-completed',
    hooks: onStream(isSend, (res) => {
      const [created, first, ...rest] = res.events!;
      res.events = [first!, created!, ...rest];
    }),
  },
  {
    id: 'sse-no-completed',
    breaks: 'the stream ends without response.completed',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-starts-created-ends-completed',
    hooks: onStream(isSend, (res) => (res.events = res.events!.filter((e) => e.event !== 'response.completed'))),
  },
  {
    id: 'sse-delta-dropped',
    breaks: 'one text delta is lost',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-text-assembles',
    hooks: onStream(isSend, (res) => {
      const i = res.events!.findIndex((e) => e.event === 'response.output_text.delta');
      if (i !== -1) res.events!.splice(i, 1);
    }),
  },
  {
    id: 'sse-delta-no-output-index',
    breaks: 'text deltas carry no output_index',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-payloads',
    hooks: onStream(isSend, (res) => payloads(res, 'response.output_text.delta').forEach((p) => delete p.output_index)),
  },
  {
    id: 'sse-no-event-line',
    breaks: 'events are sent as data: lines only (no event: line)',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-framing',
    hooks: onStream(isSend, (res) => (res.body = res.body.replace(/^event: .*\n/gm, ''))),
  },
  {
    id: 'sse-data-split',
    breaks: 'a payload is split over two data: lines (valid SSE, not the two-line framing of §6, D-16)',
    section: 'D-16',
    profile: 'reference',
    caughtBy: 'S6-conv-raw-framing',
    hooks: onStream(isSend, (res) => (res.body = res.body.replace(/^data: \{/gm, 'data: {\ndata: '))),
  },
  {
    id: 'sse-no-sequence-number',
    breaks: 'payloads carry no sequence_number (D-16)',
    section: 'D-16',
    profile: 'reference',
    caughtBy: 'S6-conv-sequence-numbers',
    hooks: onStream(isSend, (res) => res.events!.forEach((e) => delete e.data.sequence_number)),
  },
  {
    id: 'sse-sequence-from-1',
    breaks: 'sequence_number counts from 1 in completion streams (D-16)',
    section: 'D-16',
    profile: 'reference',
    caughtBy: 'S6-cmpl-sequence-numbers',
    hooks: onStream(isCompletion, (res) => res.events!.forEach((e) => (e.data.sequence_number += 1))),
  },
  {
    id: 'sse-no-cache-control',
    breaks: 'streams are sent without Cache-Control: no-cache (D-18)',
    section: 'D-18',
    profile: 'reference',
    caughtBy: 'S6-conv-headers',
    hooks: onStream(isSend, (res) => delete res.headers['cache-control']),
  },
  {
    id: 'sse-persisted-text-differs',
    breaks: 'the persisted assistant message differs from the streamed text (D-14)',
    section: 'D-14',
    profile: 'reference',
    caughtBy: 'S6-conv-persisted-agree',
    hooks: onResponse((r) => is(r, 'GET', CONV), (res) => {
      if (!ok(res)) return;
      for (const i of res.json.items) if (i.role === 'assistant') i.content = [{ type: 'text', text: 'something else' }];
    }),
  },
  {
    id: 'cmpl-stream-conversation-id',
    breaks: "a completion stream's response.created carries a conversation_id",
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-cmpl-stream',
    hooks: onStream(isCompletion, (res) => (res.events![0]!.data.conversation_id = 'conv_x')),
  },
  {
    id: 'cmpl-stream-object-response',
    breaks: "a completion stream's response.created says object \"response\"",
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-cmpl-stream',
    hooks: onStream(isCompletion, (res) => (res.events![0]!.data.object = 'response')),
  },
  {
    id: 'cmpl-stream-done-text-wrong',
    breaks: "a completion stream's output_text.done differs from its deltas",
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-cmpl-text-assembles',
    hooks: onStream(isCompletion, (res) => payloads(res, 'response.output_text.done').forEach((p) => (p.text += '!'))),
  },
  {
    id: 'data-spec-bad-path',
    breaks: 'a data_spec patch adds below a path that does not exist (D-22)',
    section: 'D-22',
    profile: 'reference',
    caughtBy: 'S6-data-spec-stream',
    hooks: onStream(isSend, (res) => {
      const specs = payloads(res, 'response.data_spec');
      if (specs[1]) specs[1].data.patch.path = '/nowhere/fields/-';
    }),
  },
  {
    id: 'data-spec-on-plain-app',
    breaks: 'an app without generative UI streams a data_spec event',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-no-data-spec-without-generative-ui',
    hooks: onStream((r) => isSend(r) && r.path.startsWith(`/apps/${TARGET.app_id}/`), (res) => {
      res.events!.splice(1, 0, { event: 'response.data_spec', data: { type: 'response.data_spec', data: { type: 'patch', patch: { op: 'add', path: '/form', value: {} } }, output_index: 9 } });
    }),
  },
  {
    id: 'function-call-args-not-json',
    breaks: 'function_call arguments are not JSON-encoded',
    section: '2.4',
    profile: 'spec',
    caughtBy: 'S6-function-call-items',
    hooks: onResponse(isSend, (res) => {
      if (ok(res) && !isStream(res)) for (const o of res.json.output) if (o.type === 'function_call') o.arguments = `query=${o.arguments}`;
    }),
  },
  {
    id: 'function-call-deltas-lost',
    breaks: 'function call argument deltas do not add up to arguments.done (D-16)',
    section: 'D-16',
    profile: 'reference',
    caughtBy: 'S6-function-call-events',
    hooks: onStream(isSend, (res) => (res.events = res.events!.filter((e) => e.event !== 'response.function_call_arguments.delta'))),
  },
  // §4.7 completions
  {
    id: 'cmpl-id-prefix',
    breaks: 'completion ids are resp_ ids, not cmpl_',
    section: '2.5',
    profile: 'spec',
    caughtBy: 'S4.7-completion-shape',
    hooks: onResponse(isCompletion, (res) => ok(res) && !isStream(res) && (res.json.id = res.json.id.replace(/^cmpl_/, 'resp_'))),
  },
  {
    id: 'cmpl-streams-by-default',
    breaks: 'completions stream unless stream:false',
    section: '4.7',
    profile: 'spec',
    caughtBy: 'S4.7-completion-shape',
    hooks: onRequest((r) => {
      if (isCompletion(r) && r.json && !('stream' in r.json)) r.json.stream = true;
    }),
  },
  {
    id: 'cmpl-creates-conversation',
    breaks: 'a completion is counted as a conversation',
    section: '4.7',
    profile: 'spec',
    caughtBy: 'S4.7-completion-no-conversation',
    hooks: () => {
      let n = 0;
      return {
        response(res, req) {
          if (isCompletion(req) && ok(res)) n++;
          if (req.path.endsWith('/metrics') && ok(res)) res.json.total_conversations += n;
        },
      };
    },
  },
  {
    id: 'cmpl-prompt-optional',
    breaks: 'a completion without prompt is answered',
    section: '4.7',
    profile: 'spec',
    caughtBy: 'S4.7-completion-missing-prompt',
    hooks: onRequest((r) => {
      if (isCompletion(r) && r.json && r.json.prompt === undefined) r.json.prompt = 'Say hello.';
    }),
  },
  {
    id: 'cmpl-options-refused',
    breaks: 'fast:true is refused',
    section: '4.7',
    profile: 'spec',
    caughtBy: 'S4.7-completion-options',
    hooks: onRequest((r) => (isCompletion(r) && r.json?.fast === true ? errorBody(400, 'invalid_request_error', 'fast is not supported', 'fast') : undefined)),
  },
  // §7 and §8 on the agent endpoints
  {
    id: 'agent-unavailable-404',
    breaks: 'an app without an agent is 404 instead of 403 agent_unavailable',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-agent-unavailable-403',
    hooks: onResponse(() => true, (res) => res.json?.error?.type === 'agent_unavailable' && Object.assign(res, errorBody(404, 'not_found'))),
  },
  {
    id: 'inactive-completion-access-denied',
    breaks: 'a completion on a disabled app is 403 access_denied instead of app_inactive',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-app-inactive-403',
    hooks: onResponse(isCompletion, (res) => res.json?.error?.type === 'app_inactive' && (res.json.error.type = 'access_denied')),
  },
  {
    id: 'prompt-limit-not-enforced',
    breaks: 'a prompt over 32,000 characters is accepted (truncated)',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-prompt-past-limit',
    hooks: truncate((j) => [j, 'prompt'], 32_000),
  },
  {
    id: 'prompt-limit-in-bytes',
    breaks: 'the prompt limit counts UTF-8 bytes, not characters',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-prompt-at-limits',
    hooks: onRequest((r) => (isCompletion(r) && Buffer.byteLength(String(r.json?.prompt ?? '')) > 32_000 ? errorBody(400, 'invalid_request_error', 'prompt too long', 'prompt') : undefined)),
  },
  {
    id: 'prompt-empty-accepted',
    breaks: 'an empty prompt is accepted',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-prompt-empty',
    hooks: onRequest((r) => {
      if (isCompletion(r) && r.json?.prompt === '') r.json.prompt = 'Say hello.';
    }),
  },
  {
    id: 'prompt-limit-too-low',
    breaks: 'prompts are limited to 30,000 characters',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-prompt-at-limits',
    hooks: onRequest((r) => (isCompletion(r) && String(r.json?.prompt ?? '').length > 30_000 ? errorBody(400, 'invalid_request_error', 'prompt too long', 'prompt') : undefined)),
  },
  {
    id: 'send-metadata-limit-not-enforced',
    breaks: 'send message accepts metadata over 16KB (truncated)',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-metadata-send-past-limit',
    hooks: onRequest((r) => {
      if (isSend(r) && typeof r.json?.metadata?.pad === 'string') r.json.metadata.pad = r.json.metadata.pad.slice(0, 15_000);
    }),
  },
  {
    id: 'cmpl-metadata-limit-not-enforced',
    breaks: 'completions accept metadata over 16KB (truncated)',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-metadata-completion-past-limit',
    hooks: onRequest((r) => {
      if (isCompletion(r) && typeof r.json?.metadata?.pad === 'string') r.json.metadata.pad = r.json.metadata.pad.slice(0, 15_000);
    }),
  },
  {
    id: 'content-limit-not-enforced',
    breaks: 'message content over 32,000 characters is accepted (truncated, D-15)',
    section: 'D-15',
    profile: 'reference',
    caughtBy: 'S8-content-limits',
    hooks: truncate((j) => (j.message ? [j.message, 'content'] : undefined), 32_000),
  },
  {
    id: 'rate-limit-403',
    breaks: 'a request over the rate limit is 403 instead of 429 rate_limit_exceeded',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-rate-limit-429',
    hooks: onResponse(() => true, (res) => res.status === 429 && Object.assign(res, errorBody(403, 'access_denied'))),
  },
  {
    id: 'rate-limit-no-retry-after',
    breaks: 'a 429 without Retry-After (D-23)',
    section: 'D-23',
    profile: 'reference',
    caughtBy: 'S8-rate-limit-429',
    hooks: onResponse(() => true, (res) => res.status === 429 && delete res.headers['retry-after']),
  },
  // §8 limits, §9 versioning
  {
    id: 'metadata-limit-not-enforced',
    breaks: 'metadata over 16KB is accepted (silently truncated)',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-metadata-create-past-limit',
    hooks: onRequest((r) => {
      if (r.method === 'POST' && typeof r.json?.metadata?.pad === 'string' && r.json.metadata.pad.length > 16_000) r.json.metadata.pad = r.json.metadata.pad.slice(0, 16_000);
    }),
  },
  {
    id: 'metadata-limit-in-characters',
    breaks: 'the metadata limit counts characters, not bytes (16,385 bytes of é pass)',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-metadata-create-past-limit',
    hooks: onRequest((r) => {
      const m = r.method === 'POST' ? r.json?.metadata : undefined;
      // What such an implementation accepts is passed on shrunk, so that the reference accepts it too.
      if (m && typeof m.pad === 'string' && JSON.stringify(m).length <= 16_384 && Buffer.byteLength(JSON.stringify(m)) > 16_384) m.pad = m.pad.slice(0, 4_000);
    }),
  },
  {
    id: 'metadata-limit-too-low',
    breaks: 'metadata is limited to 15,000 bytes',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-metadata-create-at-limit',
    hooks: onRequest((r) =>
      r.method === 'POST' && r.json?.metadata && JSON.stringify(r.json.metadata).length > 15_000 ? errorBody(400, 'invalid_request_error', 'metadata too large', 'metadata', 'too_large') : undefined,
    ),
  },
  {
    id: 'base-url-v2',
    breaks: 'the API is served under /v2',
    section: '9',
    profile: 'spec',
    caughtBy: 'S9-base-url-v1',
    basePath: '/v2',
    hooks: () => ({}),
  },
];
