// The broken implementations that prove the conformance suite: each breaks one rule of the interface
// (or of a D-n decision, judged in profile `reference`) behind a loopback proxy, and names the case
// that must catch it and why. The variants do what the interface leaves open another way, which
// profile spec must accept. test/conformance-mutants.test.ts runs both; docs/conformance-reference.md lists them.
import type { Profile } from '../../conformance/context.ts';
import { OTHER_TEAM_KEY, TARGET } from './helpers.ts';
import { serializeSse, type MutantHooks, type ProxyRequest, type ProxyResponse } from './mutant-proxy.ts';
import { isWidget, WIDGET_PATH } from './mutant-proxy.ts';
import { identitySecret, SHOP } from './widget.ts';
import { signJwt, verifyJwt } from '../../src/pipeline/widget-tokens.ts';
import { IDEMPOTENCY_MUTANTS } from './idempotency-mutants.ts';
import { WEBHOOK_MUTANTS, WEBHOOK_VARIANTS } from './webhook-mutants.ts';
import { READ_MUTANTS } from './read-mutants.ts';

export interface Mutant {
  id: string;
  /** What is broken, in one line (the section is added where it is shown). */
  breaks: string;
  /** The interface section (or decision) it breaks. */
  section: string;
  /** spec: it breaks the interface. reference: it breaks only a D-n decision, so profile spec must pass it. */
  profile: Profile;
  /** The case that must fail. */
  caughtBy: string;
  /** What that failure must say: the defect itself, not a side effect of it. */
  because: RegExp;
  /** A shorter per-request timeout for the run (mutants that stall). */
  timeoutMs?: number;
  /** A shorter --settle-timeout for the run (values read again until they settle, which never come). */
  settleTimeoutMs?: number;
  basePath?: string;
  /** Repetitions of profile spec that a reference-level mutant must pass (a limit that outlives a run). */
  repeat?: number;
  /** Left out of the combined run of every reference-level mutant (it answers the same requests as another). */
  alone?: string;
  hooks(): MutantHooks;
}

/**
 * What the interface leaves open, done otherwise than the reference does: profile spec must pass it,
 * and profile reference too unless a decision fixes it otherwise (then that decision's case catches it).
 */
export interface Variant {
  id: string;
  /** What it does differently, in one line. */
  does: string;
  /** Where the interface leaves it open. */
  section: string;
  /** The decision it departs from, and the case of profile reference that must catch it, for its reason. */
  decision?: { id: string; caughtBy: string; because: RegExp };
  /** Runs alone over these cases with these timeouts, not with the others (a lag that needs --settle-timeout). */
  alone?: { only: string; timeoutMs: number; settleTimeoutMs: number; failsWithin?: number };
  hooks(): MutantHooks;
}

const CONVS = /^\/apps\/[^/]+\/conversations$/;
const CONV = /^\/apps\/[^/]+\/conversations\/[^/]+$/;
const is = (req: ProxyRequest, method: string, re: RegExp) => req.method === method && re.test(req.path);
const jsonBody = (json: unknown, status = 200): ProxyResponse => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(json),
  json,
});
const errorBody = (
  status: number,
  type: string,
  message = 'mutant',
  param: string | null = null,
  code: string | null = null,
): ProxyResponse => jsonBody({ error: { message, type, param, code } }, status);

/** A response hook on requests that match. */
function onResponse(match: (req: ProxyRequest) => boolean, change: (res: ProxyResponse, req: ProxyRequest) => void): () => MutantHooks {
  return () => ({
    response(res, req) {
      if (match(req)) change(res, req);
    },
  });
}

function onRequest(change: NonNullable<MutantHooks['request']>): () => MutantHooks {
  return () => ({ request: change });
}

const ok = (res: ProxyResponse) => res.status === 200;

/** Every string of a JSON value changed by `f` (keys included). */
function mapStrings(v: any, f: (s: string) => string): any {
  if (typeof v === 'string') return f(v);
  if (Array.isArray(v)) return v.map((x) => mapStrings(x, f));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [f(k), mapStrings(x, f)]));
  return v;
}

/** JSON as Python's json.dumps writes it by default: a space after ":" and ",". */
function spaced(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(spaced).join(', ')}]`;
  if (v && typeof v === 'object')
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}: ${spaced(x)}`)
      .join(', ')}}`;
  return JSON.stringify(v);
}
const COMPLETIONS = /^\/apps\/[^/]+\/completions$/;
const W_CONVS = /^\/widget\/v1\/apps\/[^/]+\/conversations$/;
const W_CONV = /^\/widget\/v1\/apps\/[^/]+\/conversations\/[^/]+$/;
/** A JSON Web Token's shape: a visitor token (D-49). */
const JWT = /^[\w-]+\.[\w-]+\.[\w-]*$/;
const bearer = (r: ProxyRequest) => /^Bearer (\S+)$/.exec(r.headers.authorization ?? '')?.[1];

/** D-53 broken: the widget answers the origins `match` picks as if they were listed (the request reaches it from SHOP). */
function originAllowed(match: (origin: string) => boolean): () => MutantHooks {
  return () => {
    const asked = new WeakMap<ProxyRequest, string>();
    return {
      request(r) {
        const o = r.headers.origin;
        if (!isWidget(r) || o === undefined || !match(o)) return;
        asked.set(r, o);
        r.headers.origin = SHOP;
      },
      response(res, r) {
        const o = asked.get(r);
        if (o !== undefined && res.headers['access-control-allow-origin']) res.headers['access-control-allow-origin'] = o;
      },
    };
  };
}
const RESUME = /^\/apps\/[^/]+\/responses\/[^/]+\/events$/;
const CANCEL = /^\/apps\/[^/]+\/responses\/[^/]+\/cancel$/;
const isSend = (r: ProxyRequest) => is(r, 'POST', CONV);
const isCompletion = (r: ProxyRequest) => is(r, 'POST', COMPLETIONS);
const isStream = (res: ProxyResponse) => res.events !== undefined;
const payloads = (res: ProxyResponse, type: string) => (res.events ?? []).filter((e) => e.event === type).map((e) => e.data);

function onStream(match: (req: ProxyRequest) => boolean, change: (res: ProxyResponse, req: ProxyRequest) => void): () => MutantHooks {
  return onResponse(
    (r) => match(r),
    (res, req) => isStream(res) && change(res, req),
  );
}

function truncate(field: (json: any) => [any, string] | undefined, max: number): () => MutantHooks {
  return onRequest((r) => {
    const at = r.json && field(r.json);
    if (at && typeof at[0]?.[at[1]] === 'string' && at[0][at[1]].length > max) at[0][at[1]] = at[0][at[1]].slice(0, max);
  });
}

/**
 * List conversations done by the proxy over the reference's conversations (read in asc pages of
 * 100), with ties within one second in creation order or reversed, and `before` in asc order as the
 * page just before the cursor (D-12) or the oldest conversations before it. What it does not
 * handle (a bad limit or order, both cursors, an unknown cursor) goes to the reference unchanged.
 */
function listedBy(how: { ties?: 'creation' | 'reversed'; beforeAsc?: 'adjacent' | 'oldest' }): () => MutantHooks {
  return () => ({
    async request(req, { forward }) {
      if (!is(req, 'GET', CONVS)) return;
      const q = req.query;
      const limit = q.has('limit') ? Number(q.get('limit')) : 20;
      const order = q.get('order') ?? 'desc';
      if (!Number.isInteger(limit) || limit < 1 || limit > 100 || !['asc', 'desc'].includes(order) || (q.has('after') && q.has('before')))
        return;
      const all: any[] = [];
      for (let after: string | undefined; ; ) {
        const query = new URLSearchParams({ order: 'asc', limit: '100', ...(after ? { after } : {}) });
        if (q.has('external_user_id')) query.set('external_user_id', q.get('external_user_id')!);
        const page = await forward({ ...req, query });
        if (page.status !== 200) return;
        all.push(...page.json.data);
        if (!page.json.has_more) break;
        after = page.json.last_id;
      }
      const created = new Map(all.map((c, i) => [c.id, i]));
      all.sort((a, b) => a.created_at - b.created_at || (how.ties === 'reversed' ? -1 : 1) * (created.get(a.id)! - created.get(b.id)!));
      if (order === 'desc') all.reverse();
      const cursor = q.get('after') ?? q.get('before');
      const at = cursor ? all.findIndex((c) => c.id === cursor) : -1;
      if (cursor && at === -1) return;
      let data: any[];
      let hasMore: boolean;
      if (q.has('after')) {
        data = all.slice(at + 1, at + 1 + limit);
        hasMore = all.length > at + 1 + limit;
      } else if (q.has('before')) {
        const start = order === 'asc' && how.beforeAsc === 'oldest' ? 0 : Math.max(0, at - limit);
        data = all.slice(start, Math.min(at, start + limit));
        hasMore = start > 0;
      } else {
        data = all.slice(0, limit);
        hasMore = all.length > limit;
      }
      return jsonBody({ object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore });
    },
  });
}

/** The error the reference answered, turned into a 200 stream that fails at once. */
function asFailedStream(res: ProxyResponse): void {
  const error = res.json.error;
  Object.assign(res, {
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    json: undefined,
    events: [
      { event: 'response.created', data: { type: 'response.created', id: 'resp_mutant', object: 'response', status: 'in_progress' } },
      {
        event: 'response.failed',
        data: {
          type: 'response.failed',
          id: 'resp_mutant',
          status: 'failed',
          error: { type: error.type, message: error.message, code: null },
        },
      },
    ],
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
    because: /object: Invalid input: expected "conversation"/,
    hooks: onResponse(
      (r) => is(r, 'POST', CONVS),
      (res) => ok(res) && delete res.json.object,
    ),
  },
  {
    id: 'create-drops-metadata',
    breaks: 'create ignores the metadata it was given',
    section: '4.1',
    profile: 'spec',
    caughtBy: 'S4.1-create-shape',
    because: /^metadata: expected \{"conformance_run":"[^"]+","conformance_text":"[^"]*"\}, got \{\}/,
    hooks: onResponse(
      (r) => is(r, 'POST', CONVS),
      (res) => ok(res) && (res.json.metadata = {}),
    ),
  },
  {
    id: 'create-created-at-ms',
    breaks: 'created_at in milliseconds instead of seconds',
    section: '4.1',
    profile: 'spec',
    caughtBy: 'S4.1-create-shape',
    because: /Conversation: created_at \d{13} is not the Unix time of its creation in seconds/,
    hooks: onResponse(
      (r) => is(r, 'POST', CONVS),
      (res) => ok(res) && (res.json.created_at *= 1000),
    ),
  },
  {
    id: 'create-requires-fields',
    breaks: 'create refuses an empty body {} although every field is optional',
    section: '4.1',
    profile: 'spec',
    caughtBy: 'S4.1-create-empty-body',
    because: /create conversation: expected HTTP 200, got 400/,
    hooks: onRequest((r) =>
      is(r, 'POST', CONVS) && r.json && Object.keys(r.json).length === 0
        ? errorBody(400, 'invalid_request_error', 'title is required', 'title')
        : undefined,
    ),
  },
  {
    id: 'create-accepts-malformed-json',
    breaks: 'a body that is not JSON is taken as {}',
    section: '4.1',
    profile: 'spec',
    caughtBy: 'S4.1-create-malformed-json',
    because: /malformed JSON: expected a 4xx error, got HTTP 200/,
    hooks: onRequest((r) => {
      if (is(r, 'POST', CONVS) && r.body && r.json === undefined) {
        r.body = '{}';
        r.json = {};
      }
    }),
  },
  {
    id: 'create-ignores-unknown-field',
    breaks: 'an unknown field is silently dropped instead of a 400',
    section: 'D-1',
    profile: 'reference',
    caughtBy: 'S4.1-create-unknown-field',
    because: /unknown field: expected HTTP 400, got 200/,
    hooks: onRequest((r) => {
      if (is(r, 'POST', CONVS) && r.json && 'colour' in r.json) delete r.json.colour;
    }),
  },
  {
    id: 'create-omits-defaults',
    breaks: 'external_user_id and metadata left out instead of null and {}',
    section: 'D-9',
    profile: 'reference',
    caughtBy: 'S4.1-create-defaults',
    because: /create conversation: external_user_id: Invalid input: expected string, received undefined/,
    hooks: onResponse(
      (r) => is(r, 'POST', CONVS),
      (res, req) => {
        if (!ok(res)) return;
        if (!('metadata' in (req.json ?? {}))) delete res.json.metadata;
        if (!('external_user_id' in (req.json ?? {}))) delete res.json.external_user_id;
      },
    ),
  },
  // §4.2 list
  {
    id: 'list-no-has-more',
    breaks: 'the list has no `has_more`',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-shape',
    because: /has_more: Invalid input: expected boolean, received undefined/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONVS),
      (res) => ok(res) && delete res.json.has_more,
    ),
  },
  {
    id: 'list-first-id-wrong',
    breaks: 'first_id names the last conversation of the page',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-shape',
    because: /first_id \(the first conversation of the page\): expected "conv_\w+", got "conv_\w+"/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONVS),
      (res) => ok(res) && (res.json.first_id = res.json.last_id),
    ),
  },
  {
    id: 'list-empty-ids-not-null',
    breaks: 'an empty page has first_id/last_id "" instead of null',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-empty',
    because: /first_id \(the first conversation of the page\): expected null, got ""/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONVS),
      (res) => {
        if (ok(res) && res.json.data.length === 0) res.json.first_id = res.json.last_id = '';
      },
    ),
  },
  {
    id: 'list-after-skips-one',
    breaks: 'pages after a cursor skip their first conversation',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-after-walk-asc',
    because: /the asc walk never met the run's conversation/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONVS) && r.query.has('after'),
      (res) => {
        if (!ok(res) || res.json.data.length === 0) return;
        res.json.data.shift();
        res.json.first_id = res.json.data[0]?.id ?? null;
        res.json.last_id = res.json.data.at(-1)?.id ?? null;
      },
    ),
  },
  {
    id: 'list-desc-after-goes-back',
    breaks: '`after` in desc order returns newer conversations (the literal "created after"), so last_id walks loop',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-after-walk-desc',
    because: /was seen twice during the desc walk/,
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
    because: /has_more with more than 2 conversations: expected true, got false/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONVS),
      (res) => ok(res) && (res.json.has_more = false),
    ),
  },
  {
    id: 'list-default-limit-10',
    breaks: 'the default page size is 10, not 20',
    section: '4.2',
    profile: 'spec',
    caughtBy: 'S4.2-list-default-limit',
    because: /conversations in a default page: expected 20, got 10/,
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
    because: /created_at is not descending along the default page/,
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
    because: /asc page before the 3rd oldest conversation of the app: expected 2 entries, got 5/,
    hooks: onRequest((r) => {
      if (is(r, 'GET', CONVS)) r.query.delete('before');
    }),
  },
  {
    id: 'list-before-desc-wrong-side',
    breaks: '`before` in desc order returns older conversations instead of the preceding page',
    section: 'D-12',
    profile: 'reference',
    caughtBy: 'S4.2-list-before-desc',
    because: /desc page before the 2nd conversation of the run: expected 2 entries, got 2; first difference at \[0\]/,
    hooks: onRequest((r) => {
      if (is(r, 'GET', CONVS) && r.query.has('before') && r.query.get('order') === 'desc') {
        r.query.set('after', r.query.get('before')!);
        r.query.delete('before');
      }
    }),
  },
  {
    id: 'list-unknown-cursor-empty',
    breaks: 'an unknown cursor gives an empty page instead of 400 invalid_cursor',
    section: 'D-12',
    profile: 'reference',
    caughtBy: 'S4.2-list-unknown-cursor',
    because: /unknown after cursor: expected HTTP 400, got 200/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONVS),
      (res) => {
        if (res.status === 400 && res.json?.error?.code === 'invalid_cursor')
          Object.assign(res, jsonBody({ object: 'list', data: [], first_id: null, last_id: null, has_more: false }));
      },
    ),
  },
  {
    id: 'list-limit-clamped',
    breaks: 'limit=101 is clamped to 100 instead of a 400',
    section: 'D-12',
    profile: 'reference',
    caughtBy: 'S8-list-limit-101',
    because: /limit=101: expected HTTP 400, got 200/,
    hooks: onRequest((r) => {
      if (is(r, 'GET', CONVS) && Number(r.query.get('limit')) > 100) r.query.set('limit', '100');
    }),
  },
  {
    id: 'list-created-at-ms',
    breaks: 'list items carry created_at in milliseconds (create answers seconds)',
    section: '2.6',
    profile: 'spec',
    caughtBy: 'S4.2-list-shape',
    because: /created_at of conv_\S+ in the list \(create answered \d+\): expected \d+, got \d{13}/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONVS),
      (res) => {
        if (ok(res)) for (const c of res.json.data) c.created_at *= 1000;
      },
    ),
  },
  {
    id: 'list-ties-reversed',
    breaks:
      'conversations created in the same second are listed newest first in asc order (a tie-break other than creation order, applied consistently)',
    section: 'D-7',
    profile: 'reference',
    caughtBy: 'S4.2-list-after-walk-asc',
    because: /the run's conversations as the asc walk met them \(creation order, D-7\)/,
    hooks: listedBy({ ties: 'reversed' }),
  },
  {
    id: 'list-before-asc-oldest',
    breaks: '`before` in asc order gives the oldest conversations created before the cursor, not the page just before it',
    section: 'D-12',
    profile: 'reference',
    caughtBy: 'S4.2-list-before-asc',
    because: /page before the 5th conversation of the run \(the page just before it, D-12\)/,
    alone: 'it answers the same list requests as list-ties-reversed',
    hooks: listedBy({ beforeAsc: 'oldest' }),
  },
  // §4.3 get
  {
    id: 'get-no-items',
    breaks: 'GET conversation has no `items`',
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.3-get-shape',
    because: /items: Invalid input: expected array, received undefined/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => ok(res) && delete res.json.items,
    ),
  },
  {
    id: 'get-unknown-500',
    breaks: 'an unknown conversation is 500 instead of 404 not_found',
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.3-get-unknown-404',
    because: /unknown conversation: expected HTTP 404, got 500/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => res.status === 404 && Object.assign(res, errorBody(500, 'internal_error')),
    ),
  },
  // §4.4 update
  {
    id: 'update-not-persisted',
    breaks: 'PATCH answers the new title but does not store it',
    section: '4.4',
    profile: 'spec',
    caughtBy: 'S4.4-update-title',
    because: /title read back: expected "Renamed by conformance", got null/,
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
    because: /clear title: expected HTTP 200, got 400/,
    hooks: onRequest((r) =>
      is(r, 'PATCH', CONV) && r.json?.title === null
        ? errorBody(400, 'invalid_request_error', 'title must be a string', 'title')
        : undefined,
    ),
  },
  {
    id: 'update-unknown-200',
    breaks: 'PATCH of an unknown conversation answers 200',
    section: '4.4',
    profile: 'spec',
    caughtBy: 'S4.4-update-unknown-404',
    because: /unknown conversation: expected HTTP 404, got 200/,
    hooks: onResponse(
      (r) => is(r, 'PATCH', CONV),
      (res, req) => {
        if (res.status === 404)
          Object.assign(
            res,
            jsonBody({
              id: req.path.split('/').pop(),
              object: 'conversation',
              created_at: 1,
              title: 'x',
              generated_title: {},
              metadata: {},
            }),
          );
      },
    ),
  },
  {
    id: 'update-extra-field-ignored',
    breaks: 'PATCH ignores fields other than title instead of a 400',
    section: 'D-13',
    profile: 'reference',
    caughtBy: 'S4.4-update-other-field',
    because: /PATCH with metadata: expected HTTP 400, got 200/,
    hooks: onRequest((r) => {
      if (is(r, 'PATCH', CONV) && r.json && 'metadata' in r.json) delete r.json.metadata;
    }),
  },
  {
    id: 'update-applies-metadata',
    breaks: 'PATCH applies the metadata it is given, although only the title can be updated',
    section: '4.4',
    profile: 'spec',
    caughtBy: 'S4.4-update-only-title',
    because:
      /metadata in the PATCH response: expected \{"conformance_run":"[^"]+","conformance_text":"[^"]*"\}, got \{"conformance_run":"[^"]+","conformance_text":"[^"]*","changed":true\}/,
    hooks: () => {
      const kept = new Map<string, unknown>();
      return {
        request(r) {
          if (is(r, 'PATCH', CONV) && r.json && 'metadata' in r.json) {
            kept.set(r.path, r.json.metadata);
            delete r.json.metadata;
          }
        },
        response(res, req) {
          if (ok(res) && kept.has(req.path) && (is(req, 'PATCH', CONV) || is(req, 'GET', CONV))) res.json.metadata = kept.get(req.path);
        },
      };
    },
  },
  // §4.5 delete
  {
    id: 'delete-no-deleted-flag',
    breaks: 'the deletion result has no `deleted`',
    section: '4.5',
    profile: 'spec',
    caughtBy: 'S4.5-delete-shape',
    because: /deleted: Invalid input: expected true/,
    hooks: onResponse(
      (r) => is(r, 'DELETE', CONV),
      (res) => ok(res) && delete res.json.deleted,
    ),
  },
  {
    id: 'delete-unknown-200',
    breaks: 'DELETE of an unknown conversation answers 200',
    section: '4.5',
    profile: 'spec',
    caughtBy: 'S4.5-delete-unknown-404',
    because: /unknown conversation: expected HTTP 404, got 200/,
    hooks: onResponse(
      (r) => is(r, 'DELETE', CONV),
      (res, req) =>
        res.status === 404 && Object.assign(res, jsonBody({ id: req.path.split('/').pop(), object: 'conversation', deleted: true })),
    ),
  },
  {
    id: 'delete-is-noop',
    breaks: 'DELETE answers 200 but the conversation stays listed',
    section: '3',
    profile: 'spec',
    caughtBy: 'S4.2-list-excludes-deleted',
    because: /deleted conversation conv_\w+ is still listed/,
    hooks: onRequest((r) =>
      is(r, 'DELETE', CONV) ? jsonBody({ id: r.path.split('/').pop(), object: 'conversation', deleted: true }) : undefined,
    ),
  },
  // §4.8 config, §4.9 metrics
  {
    id: 'config-no-secondary-color',
    breaks: 'config.agent.config has no secondary_color',
    section: '4.8',
    profile: 'spec',
    caughtBy: 'S4.8-config-shape',
    because: /agent\.config\.secondary_color: Invalid input: expected string, received undefined/,
    hooks: onResponse(
      (r) => r.path.endsWith('/config'),
      (res) => ok(res) && delete res.json.agent.config.secondary_color,
    ),
  },
  {
    id: 'config-text-plain',
    breaks: 'config is served as text/plain',
    section: '1',
    profile: 'spec',
    caughtBy: 'S4.8-config-shape',
    because: /get config: expected a JSON content type, got "text\/plain"/,
    hooks: onResponse(
      (r) => r.path.endsWith('/config'),
      (res) => ok(res) && (res.headers['content-type'] = 'text/plain'),
    ),
  },
  {
    id: 'config-generative-ui-false',
    breaks: 'the generative-UI app reports generative_ui: false',
    section: '4.8',
    profile: 'spec',
    caughtBy: 'S4.8-config-generative-ui',
    because: /^generative_ui: expected true, got false/,
    hooks: onResponse(
      (r) => r.path.endsWith('/config'),
      (res) => ok(res) && (res.json.generative_ui = false),
    ),
  },
  {
    id: 'metrics-string-counts',
    breaks: 'total_users is a string',
    section: '4.9',
    profile: 'spec',
    caughtBy: 'S4.9-metrics-shape',
    because: /total_users: Invalid input: expected number, received string/,
    hooks: onResponse(
      (r) => r.path.endsWith('/metrics'),
      (res) => ok(res) && (res.json.total_users = String(res.json.total_users)),
    ),
  },
  {
    id: 'metrics-stale',
    settleTimeoutMs: 3000,
    breaks: 'metrics are cached and never change',
    section: '4.9',
    profile: 'spec',
    caughtBy: 'S4.9-metrics-conversations',
    because: /change of total_conversations after one creation: expected 1, got 0/,
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
    settleTimeoutMs: 3000,
    breaks: 'deleting a conversation lowers total_conversations',
    section: 'D-24',
    profile: 'reference',
    caughtBy: 'S4.9-metrics-keep-deleted',
    because: /change of total_conversations after a delete and one creation: expected 1, got 0/,
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
    because: /GET \S+\/metrics without a key: expected HTTP 401, got 200/,
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
    because: /with an unknown key: expected HTTP 401, got 403/,
    hooks: onResponse(
      (r) => Boolean(r.headers.authorization),
      (res) => res.status === 401 && Object.assign(res, errorBody(403, 'access_denied')),
    ),
  },
  {
    id: 'auth-any-scheme',
    breaks: 'the key is accepted under any scheme (Basic, Token)',
    section: '5',
    profile: 'spec',
    caughtBy: 'S5-wrong-scheme-401',
    because: /Authorization: Basic <key>: expected HTTP 401, got 200/,
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
    because: /POST \/apps\/app_other\/conversations: expected HTTP 403, got 404/,
    hooks: onResponse(
      () => true,
      (res) => res.status === 403 && res.json?.error?.type === 'access_denied' && Object.assign(res, errorBody(404, 'not_found')),
    ),
  },
  {
    id: 'auth-publishable-accepted',
    breaks: 'a publishable key can call the REST API',
    section: '5',
    profile: 'spec',
    caughtBy: 'S5-publishable-key-refused',
    because: /with the publishable key: expected HTTP 401 or 403, got 200/,
    hooks: onRequest((r) => {
      if (r.headers.authorization === `Bearer ${TARGET.publishable_key}`) r.headers.authorization = `Bearer ${TARGET.api_key}`;
    }),
  },
  {
    id: 'auth-publishable-can-post',
    breaks: 'a publishable key is refused on reads but may create, send and complete',
    section: '5',
    profile: 'spec',
    caughtBy: 'S5-publishable-key-refused',
    because: /POST \S+ with the publishable key: expected HTTP 401 or 403, got 200/,
    hooks: onRequest((r) => {
      if (r.method === 'POST' && r.headers.authorization === `Bearer ${TARGET.publishable_key}`)
        r.headers.authorization = `Bearer ${TARGET.api_key}`;
    }),
  },
  {
    id: 'stream-no-key-200',
    breaks: 'stream:true without a key answers a 200 stream that fails, not the 401 error object',
    section: '5',
    profile: 'spec',
    caughtBy: 'S5-missing-key-401',
    because: /POST \S+conversations\/\S+ \{stream: true\} without a key: expected HTTP 401, got 200/,
    hooks: onResponse(
      (r) => isSend(r) && r.json?.stream === true,
      (res) => res.status === 401 && asFailedStream(res),
    ),
  },
  {
    id: 'auth-error-type-renamed',
    breaks: 'a missing key is 401 with type "unauthorized"',
    section: '7',
    profile: 'spec',
    caughtBy: 'S5-missing-key-401',
    because: /without a key: error\.type: expected "invalid_api_key", got "unauthorized"/,
    hooks: onResponse(
      () => true,
      (res) => res.status === 401 && (res.json.error.type = 'unauthorized'),
    ),
  },
  // §7 errors
  {
    id: 'error-no-message',
    breaks: 'error objects have no `message`',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-unknown-app-404',
    because: /error\.message: Invalid input: expected string, received undefined/,
    hooks: onResponse(
      () => true,
      (res) => res.status >= 400 && res.json?.error && delete res.json.error.message,
    ),
  },
  {
    id: 'error-html',
    breaks: 'errors are served as text/html',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-unknown-app-404',
    because: /error: expected a JSON content type, got "text\/html"/,
    hooks: onResponse(
      () => true,
      (res) => res.status >= 400 && (res.headers['content-type'] = 'text/html'),
    ),
  },
  {
    id: 'inactive-app-access-denied',
    breaks: 'every endpoint of a disabled app answers 403 access_denied instead of app_inactive',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-app-inactive-403',
    because: /POST \/apps\/app_inactive\/conversations: error\.type: expected "app_inactive", got "access_denied"/,
    hooks: onResponse(
      () => true,
      (res) => res.json?.error?.type === 'app_inactive' && (res.json.error.type = 'access_denied'),
    ),
  },
  {
    id: 'method-no-allow',
    breaks: '405 without an Allow header',
    section: 'D-3',
    profile: 'reference',
    caughtBy: 'S7-method-not-allowed-405',
    because: /Allow header null does not list GET and POST/,
    hooks: onResponse(
      () => true,
      (res) => res.status === 405 && delete res.headers.allow,
    ),
  },
  {
    id: 'any-content-type',
    breaks: 'a text/plain body is parsed as JSON instead of a 415',
    section: 'D-2',
    profile: 'reference',
    caughtBy: 'S7-unsupported-media-type-415',
    because: /text\/plain body: expected HTTP 415, got 200/,
    hooks: onRequest((r) => {
      if (r.headers['content-type'] === 'text/plain') r.headers['content-type'] = 'application/json';
    }),
  },
  {
    id: 'body-too-large-400',
    breaks: 'a body over 1 MiB is 400 instead of 413',
    section: 'D-2',
    profile: 'reference',
    caughtBy: 'S7-body-too-large-413',
    because: /body of more than 1 MiB: expected HTTP 413, got 400/,
    hooks: onResponse(
      () => true,
      (res) => res.status === 413 && (res.status = 400),
    ),
  },
  {
    id: 'no-request-id',
    breaks: 'no x-request-id header',
    section: 'D-5',
    profile: 'reference',
    caughtBy: 'S7-request-id',
    because: /no x-request-id on a 200/,
    hooks: onResponse(
      () => true,
      (res) => delete res.headers['x-request-id'],
    ),
  },
  // §4.6 send message
  {
    id: 'send-no-conversation-id',
    breaks: 'the Response has no conversation_id',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-send-json-shape',
    because: /conversation_id: Invalid input: expected string, received undefined/,
    hooks: onResponse(isSend, (res) => ok(res) && !isStream(res) && delete res.json.conversation_id),
  },
  {
    id: 'send-status-failed',
    breaks: 'every Response says status "failed"',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-send-json-shape',
    because: /^status: expected "completed", got "failed"/,
    hooks: onResponse(isSend, (res) => ok(res) && !isStream(res) && (res.json.status = 'failed')),
  },
  {
    id: 'send-stream-true-ignored',
    breaks: 'stream:true answers JSON',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-stream-true-gives-sse',
    because: /expected text\/event-stream, got "application\/json/,
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
    because: /send message without stream: expected a JSON content type, got "text\/event-stream/,
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
    because: /stream:false: expected a JSON content type, got "text\/event-stream/,
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
    because: /role assistant: expected a 4xx error, got HTTP 200/,
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
    because:
      /conversation metadata after the message: expected \{[^}]*"step":"checkout"[^}]*\}, got \{"conformance_run":"[^"]+","conformance_text":"[^"]*"\}/,
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
    because: /^unknown conversation: expected HTTP 404, got 400/,
    hooks: onResponse(isSend, (res) => res.status === 404 && Object.assign(res, errorBody(400, 'invalid_request_error'))),
  },
  {
    id: 'title-never-generated',
    settleTimeoutMs: 3000,
    breaks: 'generated_title stays {} after the first exchange',
    section: '2.1',
    profile: 'spec',
    caughtBy: 'S4.6-generated-title',
    because: /generated_title is \{\} after the first exchange/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => ok(res) && (res.json.generated_title = {}),
    ),
  },
  {
    id: 'items-only-user-messages',
    breaks: "the history keeps the user's messages but not the agent's",
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.6-persisted-items',
    because: /the exchange added 1 items; its output has \d+ messages and function calls/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => ok(res) && (res.json.items = res.json.items.filter((i: any) => i.role === 'user')),
    ),
  },
  {
    id: 'items-without-function-calls',
    breaks: 'the history keeps messages but not function calls',
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.6-persisted-items',
    because:
      /the exchange added \d+ items; its output has \d+ messages and function calls|output #\d+ \(function_call call_\w+\) is not among the items/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => ok(res) && (res.json.items = res.json.items.filter((i: any) => i.type !== 'function_call')),
    ),
  },
  {
    id: 'metrics-messages-not-counted',
    settleTimeoutMs: 3000,
    breaks: 'total_messages never grows',
    section: '4.9',
    profile: 'spec',
    caughtBy: 'S4.9-metrics-messages',
    because: /total_messages did not grow after an exchange/,
    hooks: onResponse(
      (r) => r.path.endsWith('/metrics'),
      (res) => ok(res) && (res.json.total_messages = 0),
    ),
  },
  {
    id: 'response-created-at-ms',
    breaks: "the Response's created_at is in milliseconds",
    section: '2.3',
    profile: 'spec',
    caughtBy: 'S4.6-send-json-shape',
    because: /Response: created_at \d{13} is not the Unix time of its creation in seconds/,
    hooks: onResponse(isSend, (res) => ok(res) && !isStream(res) && (res.json.created_at *= 1000)),
  },
  {
    id: 'send-metadata-null-refused',
    breaks: 'metadata: null on send message is refused with a 400',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-metadata-null-accepted',
    because: /send with metadata null: expected HTTP 200, got 400/,
    hooks: onRequest((r) =>
      isSend(r) && r.json && r.json.metadata === null
        ? errorBody(400, 'invalid_request_error', 'metadata must be an object', 'metadata')
        : undefined,
    ),
  },
  {
    id: 'stream-unknown-conversation-200',
    breaks: 'stream:true to an unknown conversation answers a 200 stream that fails, not the 404 error object',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-unknown-conversation-404',
    because: /unknown conversation, stream:true: expected HTTP 404, got 200/,
    hooks: onResponse(
      (r) => isSend(r) && r.json?.stream === true,
      (res) => res.status === 404 && asFailedStream(res),
    ),
  },
  {
    id: 'items-reply-before-question',
    breaks: "the history lists the agent's reply before the user's message",
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.6-persisted-items',
    because: /output #0 \(\w+.*\) is not among the items after the user's message/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => {
        if (ok(res))
          res.json.items = [
            ...res.json.items.filter((i: any) => i.role !== 'user'),
            ...res.json.items.filter((i: any) => i.role === 'user'),
          ];
      },
    ),
  },
  {
    id: 'json-drops-function-calls',
    breaks: 'in JSON mode the output leaves out the function calls that a stream carries',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-json-output-matches-stream-shape',
    because: /the stream carried \{[^}]*"function_call":1[^}]*\} but the JSON output holds \{"message":1\}/,
    hooks: onResponse(isSend, (res) => {
      if (ok(res) && !isStream(res)) res.json.output = res.json.output.filter((o: any) => o.type !== 'function_call');
    }),
  },
  {
    id: 'function-call-name-null',
    breaks: 'function_call output items carry name: null (§2.4 allows it)',
    section: 'D-21',
    profile: 'reference',
    caughtBy: 'S6-function-call-items',
    because: /output function_call #0 has no name \(D-21\)/,
    hooks: onResponse(isSend, (res) => {
      if (ok(res) && !isStream(res)) for (const o of res.json.output) if (o.type === 'function_call') o.name = null;
    }),
  },
  {
    id: 'items-call-id-renamed',
    breaks: 'history items name the call id tool_call_id (item fields are not shown)',
    section: 'D-14',
    profile: 'reference',
    caughtBy: 'S6-function-call-items',
    because: /items\.\d+\.call_id: Invalid input: expected string, received undefined|D-14/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => {
        if (!ok(res)) return;
        for (const it of res.json.items) {
          if (!('call_id' in it)) continue;
          it.tool_call_id = it.call_id;
          delete it.call_id;
        }
      },
    ),
  },
  // Resumable responses, an extension (docs/responses.md, D-30…D-39): profile reference only.
  {
    id: 'resume-skips-first',
    breaks: 'a resume leaves out the first event after starting_after',
    section: 'D-32',
    profile: 'reference',
    caughtBy: 'S4.6-resume-cut-points',
    because: /events after -1 compared with the first stream's: expected \d+ entries, got \d+; first difference at \[0\]/,
    hooks: onResponse(
      (r) => is(r, 'GET', RESUME),
      (res) => ok(res) && res.events?.shift(),
    ),
  },
  {
    id: 'resume-no-id-lines',
    breaks: 'the resumed events carry no id line',
    section: 'D-32',
    profile: 'reference',
    caughtBy: 'S4.6-resume-cut-points',
    because: /id lines of the events after -1: expected \d+ entries, got \d+; first difference at \[0\]: expected "0", got undefined/,
    hooks: onResponse(
      (r) => is(r, 'GET', RESUME),
      (res) => {
        if (ok(res) && res.events) res.body = serializeSse(res.events);
      },
    ),
  },
  {
    id: 'resume-ignores-last-event-id',
    breaks: 'a resume ignores Last-Event-ID',
    section: 'D-32',
    profile: 'reference',
    caughtBy: 'S4.6-resume-cut-points',
    because: /events after Last-Event-ID 1 \(the query says 0\): expected \d+ entries/,
    hooks: onRequest((req) => {
      if (is(req, 'GET', RESUME)) delete req.headers['last-event-id'];
    }),
  },
  {
    id: 'response-other-app-reachable',
    breaks: "another app's response is answered through this app's path",
    section: 'D-32',
    profile: 'reference',
    caughtBy: 'S4.6-response-not-found',
    because: /another app's response: expected HTTP 404, got 200/,
    hooks: onRequest((req) => {
      const m = /^\/apps\/([^/]+)\/responses\/([^/]+)$/.exec(req.path);
      if (req.method === 'GET' && m && m[1] === TARGET.apps.knowledge_base) req.path = `/apps/${TARGET.app_id}/responses/${m[2]}`;
    }),
  },
  {
    id: 'no-response-id-header',
    breaks: 'send message does not name its response in a header',
    section: 'D-31',
    profile: 'reference',
    caughtBy: 'S4.6-response-id-header',
    because: /parley-response-id header \(the id of response\.created\): expected "resp_\w+", got null/,
    hooks: onResponse(isSend, (res) => {
      delete res.headers['parley-response-id'];
    }),
  },
  {
    id: 'cancel-fails-finished',
    breaks: 'cancelling a finished response answers it failed',
    section: 'D-33',
    profile: 'reference',
    caughtBy: 'S4.6-cancel-finished',
    because: /status in the answer of cancelling a finished response: expected "completed", got "failed"/,
    hooks: onResponse(
      (r) => is(r, 'POST', CANCEL),
      (res) => {
        if (ok(res)) res.json = { ...res.json, status: 'failed', error: { type: 'request_aborted', code: 'cancelled', message: 'mutant' } };
      },
    ),
  },
  {
    id: 'items-status-on-completed',
    breaks: 'the items of a completed reply say incomplete',
    section: 'D-39',
    profile: 'reference',
    caughtBy: 'S4.6-response-lookup',
    because: /status of the items of a completed reply \(D-39: none\): expected 0 entries, got \d+/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => {
        if (ok(res)) for (const i of res.json.items) if (i.role !== 'user') i.status = 'incomplete';
      },
    ),
  },
  {
    id: 'second-message-409',
    breaks: 'a message sent while a reply of the conversation runs is refused instead of waiting in line',
    section: 'D-37',
    profile: 'reference',
    caughtBy: 'S4.6-messages-wait-in-line',
    because: /the second message: expected HTTP 200, got 409/,
    hooks: onRequest((req) => {
      if (isSend(req) && String(req.json?.message?.content ?? '').startsWith('Second question'))
        return errorBody(409, 'invalid_request_error', 'busy', null, 'conversation_busy');
    }),
  },
  // §6 events
  {
    id: 'sse-stalls',
    breaks: 'a stream sends response.created, then nothing, and never ends',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-content-type',
    because: /the stream did not end \(idle timeout\)/,
    timeoutMs: 2000,
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
    because: /the stream did not end \(cut short\)/,
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
    because: /expected Content-Type text\/event-stream, got "text\/plain"/,
    hooks: onStream(isSend, (res) => (res.headers['content-type'] = 'text/plain')),
  },
  {
    id: 'sse-created-late',
    breaks: 'response.created comes after the first text delta',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-starts-created-ends-completed',
    because: /first event: expected "response\.created", got "response\.[\w.]+"/,
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
    because: /last event: expected "response\.completed", got/,
    hooks: onStream(isSend, (res) => (res.events = res.events!.filter((e) => e.event !== 'response.completed'))),
  },
  {
    id: 'sse-delta-dropped',
    breaks: 'one text delta is lost',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-text-assembles',
    because: /concatenated deltas of output\/content index \d+:\d+ compared with output_text\.done/,
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
    because: /\(response\.output_text\.delta\) payload: output_index: Invalid input: expected number, received undefined/,
    hooks: onStream(isSend, (res) => {
      for (const p of payloads(res, 'response.output_text.delta')) delete p.output_index;
    }),
  },
  {
    id: 'sse-no-event-line',
    breaks: 'events are sent as data: lines only (no event: line)',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-framing',
    because: /event #0 has no "event:" line/,
    hooks: onStream(isSend, (res) => (res.body = res.body.replace(/^event: .*\n/gm, ''))),
  },
  {
    id: 'sse-data-split',
    breaks: 'a payload is split over two data: lines (valid SSE, but not the two lines of §6)',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-conv-framing',
    because: /event block #0 is not the two lines "event: <type>" and "data: <json>" \(§6\)/,
    hooks: onStream(isSend, (res) => (res.body = res.body.replace(/^data: \{/gm, 'data: {\ndata: '))),
  },
  {
    id: 'cmpl-sse-data-split',
    breaks: 'completion stream payloads are split over two data: lines',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-cmpl-framing',
    because: /event block #0 is not the two lines "event: <type>" and "data: <json>" \(§6\)/,
    hooks: onStream(isCompletion, (res) => (res.body = res.body.replace(/^data: \{/gm, 'data: {\ndata: '))),
  },
  {
    id: 'sse-crlf-comments',
    breaks: 'streams use CR LF line ends and carry ": keep-alive" comments between events (valid SSE)',
    section: 'D-16',
    profile: 'reference',
    caughtBy: 'S6-conv-raw-framing',
    because: /the stream uses CR line endings/,
    hooks: onStream(
      (r) => isSend(r) || isCompletion(r),
      (res) => (res.body = `: hello\n\n${res.body.replace(/\n\n/g, '\n\n: keep-alive\n\n')}`.replace(/\n/g, '\r\n')),
    ),
  },
  {
    id: 'sse-no-sequence-number',
    breaks: 'payloads carry no sequence_number',
    section: 'D-16',
    profile: 'reference',
    caughtBy: 'S6-conv-sequence-numbers',
    because: /event #0 sequence_number: expected 0, got undefined/,
    hooks: onStream(isSend, (res) => {
      for (const e of res.events!) delete e.data.sequence_number;
    }),
  },
  {
    id: 'sse-sequence-from-1',
    breaks: 'sequence_number counts from 1 in completion streams',
    section: 'D-16',
    profile: 'reference',
    caughtBy: 'S6-cmpl-sequence-numbers',
    because: /event #0 sequence_number: expected 0, got 1/,
    hooks: onStream(isCompletion, (res) => {
      for (const e of res.events!) e.data.sequence_number += 1;
    }),
  },
  {
    id: 'sse-no-cache-control',
    breaks: 'streams are sent without Cache-Control: no-cache',
    section: 'D-18',
    profile: 'reference',
    caughtBy: 'S6-conv-headers',
    because: /Cache-Control is null/,
    hooks: onStream(isSend, (res) => delete res.headers['cache-control']),
  },
  {
    id: 'items-text-differs',
    breaks: "the persisted assistant message is not the reply's text",
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.6-persisted-items',
    because: /output #\d+ \(message\) is not among the items after the user's message/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => {
        if (!ok(res)) return;
        for (const i of res.json.items) if (i.role === 'assistant') i.content = [{ type: 'text', text: 'something else' }];
      },
    ),
  },
  {
    id: 'items-no-response-id',
    breaks: 'persisted items do not say which response they belong to (item fields are not shown)',
    section: 'D-14',
    profile: 'reference',
    caughtBy: 'S6-conv-persisted-agree',
    because: /items of response resp_\w+ compared with the stream: expected \d+ entries, got 0/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => {
        if (ok(res)) for (const i of res.json.items) delete i.response_id;
      },
    ),
  },
  {
    id: 'cmpl-stream-conversation-id',
    breaks: "a completion stream's response.created carries a conversation_id",
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-cmpl-stream',
    because: /response\.created carries conversation_id conv_x/,
    hooks: onStream(isCompletion, (res) => (res.events![0]!.data.conversation_id = 'conv_x')),
  },
  {
    id: 'cmpl-stream-object-response',
    breaks: 'a completion stream\'s response.created says object "response"',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-cmpl-stream',
    because: /response\.created object: expected "completion", got "response"/,
    hooks: onStream(isCompletion, (res) => (res.events![0]!.data.object = 'response')),
  },
  {
    id: 'cmpl-stream-done-text-wrong',
    breaks: "a completion stream's output_text.done differs from its deltas",
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-cmpl-text-assembles',
    because: /concatenated deltas of output\/content index 0:0 compared with output_text\.done/,
    hooks: onStream(isCompletion, (res) => {
      for (const p of payloads(res, 'response.output_text.done')) p.text += '!';
    }),
  },
  {
    id: 'data-spec-bad-path',
    breaks: 'a data_spec patch adds below a path that does not exist',
    section: 'D-22',
    profile: 'reference',
    caughtBy: 'S6-data-spec-stream',
    because: /data_spec patch #1 .* does not apply to the document built so far: OPERATION_PATH_CANNOT_ADD/,
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
    because: /a response\.data_spec event on an app without generative UI/,
    hooks: onStream(
      (r) => isSend(r) && r.path.startsWith(`/apps/${TARGET.app_id}/`),
      (res) => {
        res.events!.splice(1, 0, {
          event: 'response.data_spec',
          data: { type: 'response.data_spec', data: { type: 'patch', patch: { op: 'add', path: '/form', value: {} } }, output_index: 9 },
        });
      },
    ),
  },
  {
    id: 'function-call-args-not-json',
    breaks: 'function_call arguments are not JSON-encoded',
    section: '2.4',
    profile: 'spec',
    caughtBy: 'S6-function-call-items',
    because: /output function_call #0 arguments are not JSON-encoded/,
    hooks: onResponse(isSend, (res) => {
      if (ok(res) && !isStream(res)) for (const o of res.json.output) if (o.type === 'function_call') o.arguments = `query=${o.arguments}`;
    }),
  },
  {
    id: 'function-call-deltas-lost',
    breaks: 'function call argument deltas do not add up to arguments.done',
    section: 'D-16',
    profile: 'reference',
    caughtBy: 'S6-function-call-events',
    because: /concatenated argument deltas of call_\w+ compared with arguments\.done: expected .*, got ""/,
    hooks: onStream(isSend, (res) => (res.events = res.events!.filter((e) => e.event !== 'response.function_call_arguments.delta'))),
  },
  // §4.7 completions
  {
    id: 'cmpl-id-prefix',
    breaks: 'completion ids are resp_ ids, not cmpl_',
    section: '2.5',
    profile: 'spec',
    caughtBy: 'S4.7-completion-shape',
    because: /id: Invalid string: must start with "cmpl_"/,
    hooks: onResponse(isCompletion, (res) => ok(res) && !isStream(res) && (res.json.id = res.json.id.replace(/^cmpl_/, 'resp_'))),
  },
  {
    id: 'completion-created-at-ms',
    breaks: "the Completion's created_at is in milliseconds",
    section: '2.5',
    profile: 'spec',
    caughtBy: 'S4.7-completion-shape',
    because: /Completion: created_at \d{13} is not the Unix time of its creation in seconds/,
    hooks: onResponse(isCompletion, (res) => ok(res) && !isStream(res) && (res.json.created_at *= 1000)),
  },
  {
    id: 'cmpl-streams-by-default',
    breaks: 'completions stream unless stream:false',
    section: '4.7',
    profile: 'spec',
    caughtBy: 'S4.7-completion-shape',
    because: /create completion: the body is not JSON/,
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
    because: /change of total_conversations after a completion and one creation: expected 1, got 2/,
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
    because: /no prompt: expected a 4xx error, got HTTP 200/,
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
    because: /completion with \{"fast":true\}: expected HTTP 200, got 400/,
    hooks: onRequest((r) =>
      isCompletion(r) && r.json?.fast === true ? errorBody(400, 'invalid_request_error', 'fast is not supported', 'fast') : undefined,
    ),
  },
  // §7 and §8 on the agent endpoints
  {
    id: 'agent-unavailable-404',
    breaks: 'an app without an agent is 404 instead of 403 agent_unavailable',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-agent-unavailable-403',
    because: /POST \/apps\/app_noagent\/conversations\/conv_\w+: expected HTTP 403, got 404/,
    hooks: onResponse(
      () => true,
      (res) => res.json?.error?.type === 'agent_unavailable' && Object.assign(res, errorBody(404, 'not_found')),
    ),
  },
  {
    id: 'inactive-completion-access-denied',
    breaks: 'a completion on a disabled app is 403 access_denied instead of app_inactive',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-app-inactive-403',
    because: /POST \/apps\/app_inactive\/completions: error\.type: expected "app_inactive", got "access_denied"/,
    hooks: onResponse(isCompletion, (res) => res.json?.error?.type === 'app_inactive' && (res.json.error.type = 'access_denied')),
  },
  {
    id: 'prompt-limit-not-enforced',
    breaks: 'a prompt over 32,000 characters is accepted (truncated)',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-prompt-past-limit',
    because: /prompt of 32,001 characters: expected a 4xx error, got HTTP 200/,
    hooks: truncate((j) => [j, 'prompt'], 32_000),
  },
  {
    id: 'prompt-limit-in-bytes',
    breaks: 'the prompt limit counts UTF-8 bytes, not characters',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-prompt-at-limits',
    because: /prompt of 32000 two-byte characters: expected HTTP 200, got 400/,
    hooks: onRequest((r) =>
      isCompletion(r) && Buffer.byteLength(String(r.json?.prompt ?? '')) > 32_000
        ? errorBody(400, 'invalid_request_error', 'prompt too long', 'prompt')
        : undefined,
    ),
  },
  {
    id: 'prompt-empty-accepted',
    breaks: 'an empty prompt is accepted',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-prompt-empty',
    because: /empty prompt: expected a 4xx error, got HTTP 200/,
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
    because: /prompt of 32000 characters: expected HTTP 200, got 400/,
    hooks: onRequest((r) =>
      isCompletion(r) && String(r.json?.prompt ?? '').length > 30_000
        ? errorBody(400, 'invalid_request_error', 'prompt too long', 'prompt')
        : undefined,
    ),
  },
  {
    id: 'send-metadata-limit-not-enforced',
    breaks: 'send message accepts metadata over 16KB (truncated)',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-metadata-send-past-limit',
    because: /metadata of 16,896 bytes \(ASCII\): expected a 4xx error, got HTTP 200/,
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
    because: /metadata of 16,896 bytes \(ASCII\): expected a 4xx error, got HTTP 200/,
    hooks: onRequest((r) => {
      if (isCompletion(r) && typeof r.json?.metadata?.pad === 'string') r.json.metadata.pad = r.json.metadata.pad.slice(0, 15_000);
    }),
  },
  {
    id: 'content-limit-not-enforced',
    breaks: 'message content over 32,000 characters is accepted (truncated)',
    section: 'D-15',
    profile: 'reference',
    caughtBy: 'S8-content-limits',
    because: /content of 32001 characters: expected HTTP 400, got 200/,
    hooks: truncate((j) => (j.message ? [j.message, 'content'] : undefined), 32_000),
  },
  {
    id: 'rate-limit-403',
    breaks: 'a request over the rate limit is 403 instead of 429 rate_limit_exceeded',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-rate-limit-429',
    because: /on the rate-limited app: expected HTTP 200 until the limit, then 429 rate_limit_exceeded; got 403/,
    hooks: onResponse(
      () => true,
      (res) => res.status === 429 && Object.assign(res, errorBody(403, 'access_denied')),
    ),
  },
  {
    id: 'rate-limit-no-retry-after',
    breaks: 'a 429 without Retry-After',
    section: 'D-23',
    profile: 'reference',
    caughtBy: 'S8-rate-limit-429',
    because: /Retry-After is null, not a number of seconds/,
    hooks: onResponse(
      () => true,
      (res) => res.status === 429 && delete res.headers['retry-after'],
    ),
  },
  {
    id: 'rate-limit-every-endpoint',
    breaks: 'once the limit is reached, every endpoint of the app answers 429 for a minute (§8 does not say which are limited)',
    section: 'D-23',
    profile: 'reference',
    caughtBy: 'S8-rate-limit-429',
    because: /get conversation: expected HTTP 200, got 429/,
    repeat: 2,
    settleTimeoutMs: 75_000,
    hooks: () => {
      let until = 0;
      const limited = (r: ProxyRequest) => r.path.startsWith(`/apps/${TARGET.apps.rate_limited}/`);
      return {
        request(r) {
          if (limited(r) && Date.now() < until)
            return { ...errorBody(429, 'rate_limit_exceeded'), headers: { 'content-type': 'application/json', 'retry-after': '60' } };
        },
        response(res, r) {
          if (limited(r) && res.status === 429) until = Date.now() + 60_000;
        },
      };
    },
  },
  {
    id: 'create-no-rate-limit-headers',
    breaks: 'a create conversation answers without the x-ratelimit-* headers, as if it were not counted',
    section: 'D-110',
    profile: 'reference',
    caughtBy: 'S8-rate-limit-429',
    because: /the create \(counted, D-110\) lacks the x-ratelimit-limit-requests header/,
    hooks: onResponse(
      (r) => is(r, 'POST', CONVS),
      (res) => {
        for (const h of ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests'])
          delete res.headers[h];
      },
    ),
  },
  {
    id: 'create-not-limited',
    breaks: 'create conversation is not counted: past the limit it still creates',
    section: 'D-110',
    profile: 'reference',
    caughtBy: 'S8-rate-limit-429',
    because: /create conversation past the limit \(D-110\): expected HTTP 429, got 200/,
    hooks: onResponse(
      (r) => is(r, 'POST', CONVS),
      (res) =>
        res.status === 429 &&
        Object.assign(
          res,
          jsonBody({
            id: 'conv_0123456789abcdef01234567',
            object: 'conversation',
            created_at: Math.floor(Date.now() / 1000),
            external_user_id: null,
            title: null,
            generated_title: {},
            metadata: {},
          }),
        ),
    ),
  },
  // Tenancy: a conversation is reached through its app and its team only.
  {
    id: 'conversation-by-id-alone',
    breaks: 'a conversation is resolved by its id alone: under another app of the same team it answers as under its own',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-other-app-conversation-404',
    because: /\(a conversation of app_id\): expected HTTP 404, got 200/,
    hooks: () => {
      const owner = new Map<string, string>();
      return {
        request(r) {
          if (!CONV.test(r.path)) return;
          const [, , app, , id] = r.path.split('/');
          const home = owner.get(id!);
          if (home && home !== app) r.path = `/apps/${home}/conversations/${id}`;
        },
        response(res, r) {
          if (is(r, 'POST', CONVS) && ok(res)) owner.set(res.json.id, r.path.split('/')[2]!);
        },
      };
    },
  },
  {
    id: 'list-every-app',
    breaks: "an app's list shows the conversations of every app of the team",
    section: '1',
    profile: 'spec',
    caughtBy: 'S7-other-app-conversation-404',
    because: /conversation conv_\w+ of app_id is listed under apps\.knowledge_base/,
    hooks: () => ({
      async response(res, r, { forward }) {
        if (!is(r, 'GET', CONVS) || !ok(res) || !r.path.startsWith(`/apps/${TARGET.apps.knowledge_base}/`)) return;
        const demo = await forward({ ...r, path: `/apps/${TARGET.app_id}/conversations` });
        res.json.data = [...demo.json.data, ...res.json.data].slice(0, Number(r.query.get('limit') ?? 20));
        res.json.first_id = res.json.data[0]?.id ?? null;
        res.json.last_id = res.json.data.at(-1)?.id ?? null;
      },
    }),
  },
  {
    id: 'other-team-conversation-readable',
    breaks: "a conversation of another team is served to any valid key under that team's app (only the conversation is looked up)",
    section: '5',
    profile: 'spec',
    caughtBy: 'S5-other-team-conversation',
    because: /GET \/apps\/app_other\/conversations\/conv_\w+ \(the other team's conversation, under its app\): expected HTTP 403, got 200/,
    hooks: onRequest((r) => {
      if (
        CONV.test(r.path) &&
        r.path.startsWith(`/apps/${TARGET.apps.other_team}/`) &&
        r.headers.authorization === `Bearer ${TARGET.api_key}`
      )
        r.headers.authorization = `Bearer ${OTHER_TEAM_KEY}`;
    }),
  },
  {
    id: 'send-other-team-404',
    breaks:
      "send message looks the conversation up before the app's access: another team's conversation answers 404 instead of 403 access_denied",
    section: '5',
    profile: 'spec',
    caughtBy: 'S5-other-team-conversation',
    because: /POST \/apps\/app_other\/conversations\/conv_\w+ \(the other team's conversation, under its app\): expected HTTP 403, got 404/,
    hooks: onResponse(isSend, (res) => res.json?.error?.type === 'access_denied' && Object.assign(res, errorBody(404, 'not_found'))),
  },
  // §5.6 and §7 on every endpoint, with stream: true as well
  {
    id: 'inactive-config-readable',
    breaks: "a disabled app's config is served (only send and completion check that the app is active)",
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-app-inactive-403',
    because: /GET \/apps\/app_inactive\/config: expected HTTP 403, got 200/,
    hooks: () => ({
      async request(r, { forward }) {
        if (r.method !== 'GET' || r.path !== `/apps/${TARGET.apps.inactive}/config`) return;
        const demo = await forward({ ...r, path: `/apps/${TARGET.app_id}/config` });
        return jsonBody({ ...demo.json, app_id: TARGET.apps.inactive });
      },
    }),
  },
  {
    id: 'inactive-completion-stream-200',
    breaks: 'a streamed completion on a disabled app answers a 200 stream that fails, not the 403 error object',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-app-inactive-403',
    because: /POST \/apps\/app_inactive\/completions \{stream: true\}: expected HTTP 403, got 200/,
    hooks: onResponse(
      (r) => isCompletion(r) && r.json?.stream === true,
      (res) => res.status === 403 && asFailedStream(res),
    ),
  },
  {
    id: 'no-agent-send-stream-200',
    breaks: 'a streamed message on an app without an agent answers a 200 stream that fails, not the 403 error object',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-agent-unavailable-403',
    because: /POST \/apps\/app_noagent\/conversations\/conv_\w+ \{stream: true\}: expected HTTP 403, got 200/,
    hooks: onResponse(
      (r) => isSend(r) && r.json?.stream === true,
      (res) => res.json?.error?.type === 'agent_unavailable' && asFailedStream(res),
    ),
  },
  {
    id: 'unknown-app-metrics-zero',
    breaks: 'the metrics of an app that does not exist are zeros',
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-unknown-app-404',
    because: /GET \/apps\/\w+\/metrics: expected HTTP 404, got 200/,
    hooks: onResponse(
      (r) => r.path.endsWith('/metrics'),
      (res) => res.status === 404 && Object.assign(res, jsonBody({ total_conversations: 0, total_messages: 0, total_users: 0 })),
    ),
  },
  {
    id: 'rate-limit-stream-200',
    breaks: 'a streamed message past the rate limit answers a 200 stream that fails, not the 429 error object',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-rate-limit-429',
    because: /message past the limit, \{stream: true\}: expected HTTP 429, got 200/,
    hooks: onResponse(
      (r) => isSend(r) && r.json?.stream === true,
      (res) => res.status === 429 && asFailedStream(res),
    ),
  },
  {
    id: 'completion-stream-no-key-200',
    breaks: 'a streamed completion without a key answers a 200 stream that fails, not the 401 error object',
    section: '5',
    profile: 'spec',
    caughtBy: 'S5-missing-key-401',
    because: /POST \S+\/completions \{stream: true\} without a key: expected HTTP 401, got 200/,
    hooks: onResponse(
      (r) => isCompletion(r) && r.json?.stream === true,
      (res) => res.status === 401 && asFailedStream(res),
    ),
  },
  {
    id: 'function-call-stream-unfinished',
    breaks: 'a stream in which the agent calls a function ends without response.completed',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-function-call-stream',
    because: /last event: expected "response\.completed", got/,
    hooks: onStream(isSend, (res) => {
      if (res.events!.some((e) => e.event === 'response.function_call.start')) res.events = res.events!.slice(0, -1);
    }),
  },
  // State built over several exchanges
  {
    id: 'history-last-10-items',
    breaks: 'the history keeps only the last 10 items of a conversation',
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.6-ten-exchanges',
    because: /the user message of exchange #1 is not in the history/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => ok(res) && (res.json.items = res.json.items.slice(-10)),
    ),
  },
  {
    id: 'stream-created-first-five-only',
    breaks: 'from the sixth exchange of a conversation on, its streams leave out response.created',
    section: '6',
    profile: 'spec',
    caughtBy: 'S4.6-ten-exchanges',
    because: /first event: expected "response\.created", got/,
    hooks: () => {
      const sends = new Map<string, number>();
      return {
        response(res, r) {
          if (!isSend(r) || !ok(res)) return;
          const n = (sends.get(r.path) ?? 0) + 1;
          sends.set(r.path, n);
          if (n > 5 && isStream(res)) res.events = res.events!.slice(1);
        },
      };
    },
  },
  {
    id: 'metadata-first-snapshot-only',
    breaks: 'only the first metadata sent with a message is kept; later snapshots are ignored',
    section: '4.6',
    profile: 'spec',
    caughtBy: 'S4.6-ten-exchanges',
    because: /metadata after ten exchanges \(the last snapshot sent\): expected \{[^}]*"exchange":10\}, got \{[^}]*"exchange":1\}/,
    hooks: () => {
      const seen = new Set<string>();
      return onRequest((r) => {
        if (!isSend(r) || !r.json?.metadata) return;
        if (seen.has(r.path)) delete r.json.metadata;
        seen.add(r.path);
      })();
    },
  },
  // §8 limits, §9 versioning
  {
    id: 'metadata-limit-not-enforced',
    breaks: 'metadata over 16KB is accepted (silently truncated)',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-metadata-create-past-limit',
    because: /metadata of 16,896 bytes \(ASCII\): expected a 4xx error, got HTTP 200/,
    hooks: onRequest((r) => {
      if (r.method === 'POST' && typeof r.json?.metadata?.pad === 'string' && r.json.metadata.pad.length > 16_000)
        r.json.metadata.pad = r.json.metadata.pad.slice(0, 16_000);
    }),
  },
  {
    id: 'metadata-limit-in-characters',
    breaks: 'the metadata limit counts characters, not bytes (16,896 bytes of é pass)',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-metadata-create-past-limit',
    because: /metadata of 16,896 bytes \(two-byte characters\): expected a 4xx error, got HTTP 200/,
    hooks: onRequest((r) => {
      const m = r.method === 'POST' ? r.json?.metadata : undefined;
      // What such an implementation accepts is passed on shrunk, so that the reference accepts it too.
      if (m && typeof m.pad === 'string' && JSON.stringify(m).length <= 16_384 && Buffer.byteLength(JSON.stringify(m)) > 16_384)
        m.pad = m.pad.slice(0, 4_000);
    }),
  },
  {
    id: 'metadata-limit-too-low',
    breaks: 'metadata is limited to 15,000 bytes',
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-metadata-create-at-limit',
    because: /create with metadata at the limit: expected HTTP 200, got 400/,
    hooks: onRequest((r) =>
      r.method === 'POST' && r.json?.metadata && JSON.stringify(r.json.metadata).length > 15_000
        ? errorBody(400, 'invalid_request_error', 'metadata too large', 'metadata', 'too_large')
        : undefined,
    ),
  },
  {
    id: 'base-url-v2',
    breaks: 'the API is served under /v2',
    section: '9',
    profile: 'spec',
    caughtBy: 'S9-base-url-v1',
    because: /base_url \S+\/v2 does not end in \/v1/,
    basePath: '/v2',
    hooks: () => ({}),
  },
  // The messenger widget (docs/widget.md): its refusals, judged by the REFERENCE cases of §5.4.
  {
    id: 'widget-token-opens-rest',
    breaks: "the REST API takes a visitor token as the team's key",
    section: 'D-45',
    profile: 'reference',
    caughtBy: 'S5.4-widget-credentials',
    because: /POST \/apps\/app_demo\/conversations with a visitor token: expected HTTP 401, got 200/,
    hooks: onRequest((r) => {
      if (!isWidget(r) && JWT.test(bearer(r) ?? '')) r.headers.authorization = `Bearer ${TARGET.api_key}`;
    }),
  },
  {
    id: 'widget-cors-any-origin',
    breaks: 'the widget answers every origin, reflected in Access-Control-Allow-Origin',
    section: 'D-53',
    profile: 'reference',
    caughtBy: 'S5.4-widget-origins',
    because:
      /widget OPTIONS \/apps\/app_demo\/visitors from Origin https:\/\/not-listed\.conformance\.invalid, preflight: expected HTTP 403, got 204/,
    hooks: originAllowed((o) => o !== SHOP),
  },
  {
    id: 'widget-origin-null-allowed',
    breaks: 'the widget takes the origin `null` (sandboxed frames, file: pages) as allowed',
    section: 'D-53',
    profile: 'reference',
    caughtBy: 'S5.4-widget-origins',
    because: /widget OPTIONS \/apps\/app_demo\/visitors from Origin null, preflight: expected HTTP 403, got 204/,
    hooks: originAllowed((o) => o === 'null'),
  },
  {
    id: 'widget-refusal-with-cors',
    breaks: "a refused origin's 403 carries Access-Control-Allow-Origin, so that the foreign page reads it",
    section: 'D-53',
    profile: 'reference',
    caughtBy: 'S5.4-widget-origins',
    because:
      /from Origin https:\/\/not-listed\.conformance\.invalid, preflight: a refused origin got CORS headers \(access-control-allow-origin\)/,
    hooks: onResponse(
      isWidget,
      (res, r) =>
        res.json?.error?.code === 'origin_not_allowed' &&
        r.headers.origin &&
        (res.headers['access-control-allow-origin'] = r.headers.origin),
    ),
  },
  {
    id: 'widget-credential-before-origin',
    breaks: 'the widget judges the credential before the origin: no key from an unlisted origin is 401',
    section: 'D-54',
    profile: 'reference',
    caughtBy: 'S5.4-widget-origins',
    because:
      /widget POST \/apps\/app_demo\/visitors from Origin https:\/\/not-listed\.conformance\.invalid, without a key: expected HTTP 403, got 401/,
    hooks: onResponse(isWidget, (res, r) => {
      if (r.method !== 'OPTIONS' && !r.headers.authorization && res.json?.error?.code === 'origin_not_allowed')
        Object.assign(res, errorBody(401, 'invalid_api_key', 'mutant', null, 'invalid_visitor_token'));
    }),
  },
  {
    id: 'widget-conversation-any-visitor',
    breaks: 'a widget conversation is served to any visitor (its owner is not checked)',
    section: 'D-48',
    profile: 'reference',
    caughtBy: 'S5.4-widget-other-visitor',
    because: /widget GET \/apps\/app_demo\/conversations\/conv_\w+ \(visitor A's conversation, as visitor B\): expected HTTP 404, got 200/,
    hooks: () => {
      const owner = new Map<string, string>();
      return {
        request(r) {
          const creator = isWidget(r) && W_CONV.test(r.path) ? owner.get(r.path.split('/').pop()!) : undefined;
          if (creator) r.headers.authorization = creator;
        },
        response(res, r) {
          if (isWidget(r) && is(r, 'POST', W_CONVS) && ok(res)) owner.set(res.json.id, r.headers.authorization!);
        },
      };
    },
  },
  {
    id: 'widget-other-visitor-403',
    breaks: "another visitor's conversation is 403 access_denied, which tells that it exists, not 404 as an unknown id",
    section: 'D-48',
    profile: 'reference',
    caughtBy: 'S5.4-widget-other-visitor',
    because: /widget GET \/apps\/app_demo\/conversations\/conv_\w+ \(visitor A's conversation, as visitor B\): expected HTTP 404, got 403/,
    hooks: () => {
      const created = new Set<string>();
      return onResponse(isWidget, (res, r) => {
        if (is(r, 'POST', W_CONVS) && ok(res)) created.add(res.json.id);
        else if (W_CONV.test(r.path) && res.status === 404 && created.has(r.path.split('/').pop()!))
          Object.assign(res, errorBody(403, 'access_denied', 'This conversation belongs to another visitor.'));
      })();
    },
  },
  {
    id: 'widget-rest-conversation-open',
    breaks: 'a conversation created through the REST API, owned by no visitor, is open to every visitor',
    section: 'D-48',
    profile: 'reference',
    caughtBy: 'S5.4-widget-other-visitor',
    because:
      /widget GET \/apps\/app_demo\/conversations\/conv_\w+ \(a conversation created through the REST API, as a visitor\): expected HTTP 404, got 200/,
    hooks: () => {
      const rest = new Set<string>();
      return {
        async response(res, r, { forward }) {
          if (is(r, 'POST', CONVS) && ok(res)) rest.add(res.json.id);
          if (!isWidget(r) || !W_CONV.test(r.path) || res.status !== 404 || !rest.has(r.path.split('/').pop()!)) return;
          Object.assign(
            res,
            await forward({
              ...r,
              path: r.path.slice(WIDGET_PATH.length),
              headers: { ...r.headers, authorization: `Bearer ${TARGET.api_key}` },
            }),
          );
        },
      };
    },
  },
  {
    id: 'widget-identity-never-expires',
    breaks: 'a signed identity is taken however old it is (its iat is not checked)',
    section: 'D-50',
    profile: 'reference',
    caughtBy: 'S5.4-widget-identity',
    because: /visitor session with an identity signed 601 s ago: expected HTTP 403, got 200/,
    // What the server would take if it did not look at iat: the same identity, signed now.
    hooks: onRequest((r) => {
      const identity = isWidget(r) && r.path.endsWith('/visitors') ? r.json?.identity : undefined;
      if (typeof identity !== 'string') return;
      const secret = identitySecret(r.path.split('/')[4]!);
      const claims = verifyJwt(identity, secret);
      if (claims) r.json.identity = signJwt({ ...claims, iat: Math.floor(Date.now() / 1000) }, secret);
    }),
  },
  {
    id: 'widget-conversation-before-credential',
    breaks: 'the widget looks the conversation up before the visitor token: an unknown one is 404 whatever the token',
    section: 'D-54',
    profile: 'reference',
    caughtBy: 'S5.4-widget-forged-token',
    because:
      /widget GET \/apps\/app_demo\/conversations\/conv_\w+ with a visitor token changed after signing \(another visitor\): expected HTTP 401, got 404/,
    hooks: () => {
      const created = new Set<string>();
      return onResponse(isWidget, (res, r) => {
        if (is(r, 'POST', W_CONVS) && ok(res)) created.add(res.json.id);
        else if (W_CONV.test(r.path) && res.status === 401 && !created.has(r.path.split('/').pop()!))
          Object.assign(res, errorBody(404, 'not_found', 'Conversation not found.', 'conversation_id'));
      })();
    },
  },
  {
    id: 'widget-token-signature-unchecked',
    breaks: 'visitor tokens are decoded without checking their signature',
    section: 'D-49',
    profile: 'reference',
    caughtBy: 'S5.4-widget-forged-token',
    because:
      /widget GET \/apps\/app_demo\/config with a visitor token changed after signing \(another visitor\): expected HTTP 401, got 200/,
    // A token the server never issued but whose claims decode is answered as a token it issued would be.
    hooks: () => {
      const issued = new Set<string>();
      let last: string | undefined;
      return {
        request(r) {
          const t = bearer(r);
          if (!isWidget(r) || r.path.endsWith('/visitors') || !t || !last || issued.has(t) || !JWT.test(t)) return;
          try {
            JSON.parse(Buffer.from(t.split('.')[1]!, 'base64url').toString('utf8'));
            r.headers.authorization = `Bearer ${last}`;
          } catch {
            // not JSON claims: refused as the reference refuses it
          }
        },
        response(res, r) {
          if (isWidget(r) && r.path.endsWith('/visitors') && ok(res)) issued.add((last = res.json.token));
        },
      };
    },
  },
  // Text round trips (§1): what a careless implementation does to Unicode.
  {
    id: 'text-nfc-normalized',
    breaks: 'text in requests is NFC-normalized before it is stored (e + U+0301 becomes é)',
    section: '1',
    profile: 'spec',
    caughtBy: 'S4.1-create-text-round-trip',
    because: /title in the create answer: the text sent comes back changed at code point \d+: U\+0065 sent, U\+00E9 back/,
    hooks: onRequest((r) => {
      if (r.json !== undefined) r.json = mapStrings(r.json, (t) => t.normalize('NFC'));
    }),
  },
  {
    id: 'text-astral-replaced',
    breaks: 'characters beyond the BMP (emoji, mathematical letters) come back as U+FFFD once stored, as in a 3-byte UTF-8 column',
    section: '1',
    profile: 'spec',
    caughtBy: 'S4.1-create-text-round-trip',
    because: /title read back: the text sent comes back changed at code point \d+: U\+1F9EA sent, U\+FFFD back/,
    hooks: onResponse(
      (r) => r.method === 'GET' && (CONV.test(r.path) || CONVS.test(r.path)),
      (res) => ok(res) && (res.json = mapStrings(res.json, (t) => t.replace(/[\u{10000}-\u{10FFFF}]/gu, '\uFFFD'))),
    ),
  },
  {
    id: 'update-title-bidi-stripped',
    breaks: 'a renamed title loses its right-to-left override and pop directional formatting characters',
    section: '4.4',
    profile: 'spec',
    caughtBy: 'S4.4-update-text-round-trip',
    because: /title in the PATCH answer: the text sent comes back changed at code point \d+: U\+202E sent, U\+0061 back/,
    hooks: onRequest((r) => {
      if (is(r, 'PATCH', CONV) && typeof r.json?.title === 'string') r.json.title = r.json.title.replace(/[\u202A-\u202E]/g, '');
    }),
  },
  {
    id: 'history-text-nfkc',
    breaks: "the history keeps the user's messages NFKC-normalized (𝔘 becomes U)",
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.6-text-round-trip',
    because:
      /the history does not hold the message as sent: the text sent comes back changed at code point \d+: U\+0065 sent, U\+00E9 back/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => ok(res) && (res.json.items = mapStrings(res.json.items, (t) => t.normalize('NFKC'))),
    ),
  },
  {
    id: 'cmpl-prompt-ascii-only',
    breaks: 'a completion whose prompt is not ASCII is refused with 400',
    section: '4.7',
    profile: 'spec',
    caughtBy: 'S4.7-completion-text',
    because: /completion: expected HTTP 200, got 400|completion of a prompt of such text: status: expected 200, got 400/,
    hooks: onRequest((r) =>
      isCompletion(r) && typeof r.json?.prompt === 'string' && /[^\x20-\x7e]/.test(r.json.prompt)
        ? errorBody(400, 'invalid_request_error', 'prompt must be ASCII', 'prompt')
        : undefined,
    ),
  },
  {
    id: 'created-at-hour-ahead',
    breaks: "created_at is an hour ahead (local time taken for UTC): seconds, but not the creation's",
    section: '2.1',
    profile: 'spec',
    caughtBy: 'S4.1-create-shape',
    because: /Conversation: created_at \d+ is not the Unix time of its creation in seconds: the answer's Date header says \d+/,
    hooks: onResponse(
      (r) => is(r, 'POST', CONVS),
      (res) => ok(res) && (res.json.created_at += 3600),
    ),
  },
  // Streams and their history
  {
    id: 'cmpl-follows-app-default',
    breaks: "a completion without stream follows the app's streaming default, as send message does",
    section: '4.7',
    profile: 'spec',
    caughtBy: 'S4.7-completion-json-on-streaming-app',
    because: /completion without stream on apps\.stream_default: expected a JSON content type, got "text\/event-stream/,
    hooks: onRequest((r) => {
      if (isCompletion(r) && r.path.startsWith(`/apps/${TARGET.apps.stream_default}/`) && r.json && !('stream' in r.json))
        r.json.stream = true;
    }),
  },
  {
    id: 'fc-args-done-misspelt',
    breaks: 'streams name the end of a tool call response.function_call.arguments.done, an event §6 does not list',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-function-call-stream',
    because: /event #\d+ has a type outside §6: "response\.function_call\.arguments\.done"/,
    hooks: onStream(isSend, (res) => {
      for (const e of res.events!)
        if (e.event === 'response.function_call_arguments.done') e.event = 'response.function_call.arguments.done';
    }),
  },
  {
    id: 'data-spec-path-relative',
    breaks: 'data_spec patches name their path without the leading "/" (form/fields/-)',
    section: '6',
    profile: 'spec',
    caughtBy: 'S6-data-spec-stream',
    because: /data_spec patch #\d+ .* has path "form[^"]*", not a JSON Pointer \(RFC 6901/,
    hooks: onStream(isSend, (res) => {
      for (const p of payloads(res, 'response.data_spec')) p.data.patch.path = String(p.data.patch.path).replace(/^\//, '');
    }),
  },
  {
    id: 'data-spec-json-add-no-value',
    breaks: 'in JSON mode, data_spec patches that add leave their value out',
    section: '2.4',
    profile: 'spec',
    caughtBy: 'S6-data-spec-json',
    because: /data_spec patch #0 .* is a add without a value/,
    hooks: onResponse(isSend, (res) => {
      if (ok(res) && !isStream(res)) for (const o of res.json.output) if (o.type === 'data_spec') delete o.data.patch.value;
    }),
  },
  {
    id: 'stream-stored-twice',
    breaks: "a streamed reply's items are stored twice in the history",
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.6-ten-exchanges',
    because:
      /exchange #2 \{stream: true\} left \d+ items in the history, more than its question, the items its reply carried and a result per function call: \d+ \(a reply stored twice\?\)/,
    hooks: () => {
      const streamed = new Set<string>();
      return {
        response(res, r) {
          if (isSend(r) && isStream(res) && ok(res)) streamed.add(String(res.events![0]?.data?.id));
          if (!is(r, 'GET', CONV) || !ok(res)) return;
          res.json.items = res.json.items.flatMap((i: any) => (i.role !== 'user' && streamed.has(i.response_id) ? [i, i] : [i]));
        },
      };
    },
  },
  {
    id: 'json-reply-stored-twice',
    breaks: "a reply's items are stored twice in the history",
    section: '4.3',
    profile: 'spec',
    caughtBy: 'S4.6-persisted-items',
    because: /the exchange added \d+ items to the history, more than its question and the \d+ items of its output/,
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res) => ok(res) && (res.json.items = res.json.items.flatMap((i: any) => (i.role === 'user' ? [i] : [i, i]))),
    ),
  },
  // Errors on a real conversation of a disabled app
  {
    id: 'inactive-conversation-404',
    breaks:
      "a disabled app's conversations are looked up among the active apps' only: a real one answers 404 not_found, not 403 app_inactive",
    section: '7',
    profile: 'spec',
    caughtBy: 'S7-app-inactive-conversation',
    because:
      /GET \/apps\/app_inactive\/conversations\/conv_5eed\w+ \(apps\.inactive_conversation, a conversation of the disabled app\): expected HTTP 403, got 404/,
    hooks: onResponse(
      (r) => CONV.test(r.path) && r.path.startsWith(`/apps/${TARGET.apps.inactive}/`),
      (res) => res.json?.error?.type === 'app_inactive' && Object.assign(res, errorBody(404, 'not_found')),
    ),
  },
  {
    id: 'rate-limit-stream-200-window-used',
    breaks:
      "a streamed message past the rate limit answers a 200 stream, and an earlier run used the window: the case's set-up meets a 429 (Retry-After: 1) first",
    section: '8',
    profile: 'spec',
    caughtBy: 'S8-rate-limit-429',
    because: /message past the limit, \{stream: true\}: expected HTTP 429, got 200/,
    hooks: () => {
      let used = false;
      return {
        request(r) {
          if (used || r.method !== 'POST' || r.path !== `/apps/${TARGET.apps.rate_limited}/conversations`) return;
          used = true;
          return {
            ...errorBody(429, 'rate_limit_exceeded', 'used up by an earlier run'),
            headers: { 'content-type': 'application/json', 'retry-after': '1' },
          };
        },
        response(res, r) {
          if (isSend(r) && r.json?.stream === true && res.status === 429) asFailedStream(res);
        },
      };
    },
  },
  // The project's decisions on the corners the suite now reaches (profile reference)
  {
    id: 'resume-bad-cursor-replays',
    breaks: 'a resume whose starting_after is not a sequence number replays every event instead of a 400',
    section: 'D-32',
    profile: 'reference',
    caughtBy: 'S4.6-resume-bad-cursor',
    because: /resume with starting_after=abc: expected HTTP 400, got 200/,
    hooks: onRequest((r) => {
      if (is(r, 'GET', RESUME) && r.query.has('starting_after') && !/^-?\d+$/.test(r.query.get('starting_after')!))
        r.query.delete('starting_after');
    }),
  },
  {
    id: 'cancel-running-ignored',
    breaks: 'cancelling a running reply answers it as it is and does not stop it',
    section: 'D-33',
    profile: 'reference',
    caughtBy: 'S4.6-cancel-running',
    because: /the answer of the cancel \(D-33\): expected \{"status":"failed"/,
    hooks: () => ({
      async request(r, { forward }) {
        if (is(r, 'POST', CANCEL))
          return forward({ ...r, method: 'GET', path: r.path.replace(/\/cancel$/, ''), body: '', json: undefined });
      },
    }),
  },
  {
    id: 'disconnect-stops-reply',
    breaks: 'a client that leaves a stream stops the reply (as D-19 first said)',
    section: 'D-34',
    profile: 'reference',
    caughtBy: 'S4.6-left-reply-runs-on',
    because: /last event of the reply the client left \(D-34: it runs on\): expected "response\.completed", got "response\.failed"/,
    hooks: () => ({
      // It stops the reply when the stream's connection closes, as a server wired on its socket would:
      // whether the client left or the connection was cut (D-124's drop-after, which the case uses).
      async connectionClosed(r, sent, { forward }) {
        const id = /"id":"(resp_\w+)"/.exec(sent)?.[1];
        // The cancel carries no scenario: a drop-after on it would be refused (D-123).
        const { 'parley-scenario': _scenario, ...headers } = r.headers;
        if (isSend(r) && id)
          await forward({
            ...r,
            headers,
            path: `${r.path.replace(/\/conversations\/.*$/, '')}/responses/${id}/cancel`,
            body: '',
            json: undefined,
          });
      },
    }),
  },
  {
    id: 'usage-total-input-only',
    breaks: 'usage.total_tokens counts the input tokens only',
    section: 'D-16',
    profile: 'reference',
    caughtBy: 'S4.6-usage-totals',
    because: /send message \(JSON\): usage\.total_tokens \(input_tokens \+ output_tokens = \d+ \+ \d+\): expected \d+, got \d+/,
    hooks: onResponse(
      (r) => isSend(r) || isCompletion(r),
      (res) => {
        if (ok(res) && !isStream(res) && res.json?.usage) res.json.usage.total_tokens = res.json.usage.input_tokens;
      },
    ),
  },
  {
    id: 'list-cursor-any-app',
    breaks: "another app's conversation as a cursor is ignored: the list answers its first page instead of a 400",
    section: 'D-12',
    profile: 'reference',
    caughtBy: 'S4.2-list-other-app-cursor',
    because: /after=<a conversation of apps\.knowledge_base>: expected HTTP 400, got 200/,
    hooks: () => {
      const created = new Set<string>();
      return {
        async response(res, r, { forward }) {
          if (is(r, 'POST', CONVS) && ok(res)) created.add(res.json.id);
          const cursor = r.query.get('after') ?? r.query.get('before');
          if (!is(r, 'GET', CONVS) || res.status !== 400 || !cursor || !created.has(cursor)) return;
          const query = new URLSearchParams(r.query);
          query.delete('after');
          query.delete('before');
          Object.assign(res, await forward({ ...r, query }));
        },
      };
    },
  },
  {
    id: 'widget-token-any-app',
    breaks: "a visitor token of one app is taken by another app's widget",
    section: 'D-49',
    profile: 'reference',
    caughtBy: 'S5.4-widget-token-lifetime',
    because: /widget GET \/apps\/app_brief\/config with app_id's visitor token on widget\.short_token_app: expected HTTP 403, got 200/,
    hooks: () => ({
      async response(res, r, { forward }) {
        const app = /^\/widget\/v1\/apps\/([^/]+)\//.exec(r.path)?.[1];
        const token = bearer(r);
        const claims = token && JWT.test(token) ? JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) : undefined;
        if (res.status !== 403 || !app || !claims?.app || claims.app === app) return;
        Object.assign(res, await forward({ ...r, path: r.path.replace(`/apps/${app}/`, `/apps/${claims.app}/`) }));
      },
    }),
  },
  {
    id: 'widget-expired-as-forged',
    breaks: 'an expired visitor token is refused as a forged one (code invalid_visitor_token), so the widget never renews it',
    section: 'D-49',
    profile: 'reference',
    caughtBy: 'S5.4-widget-token-lifetime',
    because:
      /with a visitor token whose expires_at \(\d+\) passed: error\.code: expected "visitor_token_expired", got "invalid_visitor_token"/,
    hooks: onResponse(isWidget, (res) => {
      if (res.json?.error?.code === 'visitor_token_expired') res.json.error.code = 'invalid_visitor_token';
    }),
  },
  {
    id: 'widget-takes-metadata',
    breaks: 'the widget API takes external_user_id and metadata from the browser, and drops them',
    section: 'D-51',
    profile: 'reference',
    caughtBy: 'S5.4-widget-browser-fields',
    because: /widget POST \/apps\/app_demo\/conversations with external_user_id: expected HTTP 400, got 200/,
    hooks: onRequest((r) => {
      if (isWidget(r) && r.method === 'POST' && r.json) {
        delete r.json.external_user_id;
        delete r.json.metadata;
      }
    }),
  },
  {
    id: 'widget-script-text-plain',
    breaks: '/widget.js is served as text/plain, which a page with nosniff does not run',
    section: 'D-55',
    profile: 'reference',
    caughtBy: 'S5.4-widget-script',
    because: /GET \/widget\.js: Content-Type "text\/plain" is not JavaScript/,
    hooks: onResponse(
      (r) => r.path === '/widget.js',
      (res) => ok(res) && (res.headers['content-type'] = 'text/plain'),
    ),
  },
  {
    id: 'identity-metadata-dropped',
    breaks: "a verified visitor's conversation does not take the identity's metadata",
    section: 'D-50',
    profile: 'reference',
    caughtBy: 'S5.4-widget-identity',
    because: /\[external_user_id, metadata\] of the verified visitor's conversation \(the identity's sub and metadata\)/,
    hooks: onResponse(
      (r) => !isWidget(r) && is(r, 'GET', CONV),
      (res) => {
        if (ok(res) && res.json.metadata?.plan === 'gold') res.json.metadata = {};
      },
    ),
  },
  {
    id: 'storage-quota-retry-after',
    breaks: 'a refusal of the storage quota says Retry-After: 60, though waiting frees nothing',
    section: 'D-27',
    profile: 'reference',
    caughtBy: 'S8-storage-quota',
    because: /create past the storage quota: Retry-After \(waiting frees no storage\): expected null, got "60"/,
    hooks: onResponse(
      () => true,
      (res) => res.json?.error?.code === 'storage_quota_exceeded' && (res.headers['retry-after'] = '60'),
    ),
  },
  {
    id: 'history-unbounded',
    breaks: 'a message to a conversation whose history is full is answered, and not stored',
    section: 'D-29',
    profile: 'reference',
    caughtBy: 'S8-conversation-too-large',
    because: /64 messages of 8,000 characters in one conversation of apps\.small_storage, and none was refused/,
    hooks: onResponse(isSend, (res, r) => {
      if (res.json?.error?.code !== 'conversation_too_large') return;
      const now = Math.floor(Date.now() / 1000);
      Object.assign(
        res,
        jsonBody({
          id: `resp_${now}`,
          object: 'response',
          created_at: now,
          conversation_id: r.path.split('/').pop(),
          status: 'completed',
          output: [{ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Noted.' }] }],
        }),
      );
    }),
  },
  {
    id: 'ratelimit-remaining-stuck',
    breaks: 'x-ratelimit-remaining-requests never goes down',
    section: 'D-23',
    profile: 'reference',
    caughtBy: 'S8-rate-limit-429',
    because: /message #1 \(counted\): x-ratelimit-remaining-requests \(one less than on the request before\): expected \d+, got \d+/,
    hooks: onResponse(
      () => true,
      (res) => {
        if (res.headers['x-ratelimit-remaining-requests'] && res.status === 200)
          res.headers['x-ratelimit-remaining-requests'] = res.headers['x-ratelimit-limit-requests']!;
      },
    ),
  },
  {
    id: 'retry-after-ms',
    breaks: 'Retry-After is given in milliseconds',
    section: 'D-23',
    profile: 'reference',
    caughtBy: 'S8-rate-limit-429',
    because: /Retry-After \d{4,} \(seconds\) is later than the window's reset/,
    hooks: onResponse(
      (r) => r.path.startsWith(`/apps/${TARGET.apps.rate_limited}/conversations/`),
      (res) =>
        res.status === 429 &&
        res.headers['retry-after'] &&
        (res.headers['retry-after'] = String(Number(res.headers['retry-after']) * 1000)),
    ),
  },
  {
    id: 'rate-limit-after-body',
    breaks: 'past the rate limit, a malformed message is 400: the body is judged before the limit',
    section: 'D-4',
    profile: 'reference',
    caughtBy: 'S8-rate-limit-429',
    because: /a message without content past the limit \(D-4: 429 before 400\): expected HTTP 429, got 400/,
    hooks: onResponse(isSend, (res, r) => {
      if (res.status === 429 && r.json?.message && r.json.message.content === undefined)
        Object.assign(res, errorBody(400, 'invalid_request_error', 'content is required', 'message.content', 'missing_parameter'));
    }),
  },
  ...WEBHOOK_MUTANTS,
  ...READ_MUTANTS,
  ...IDEMPOTENCY_MUTANTS,
];

export const VARIANTS: Variant[] = [
  {
    id: 'title-later',
    does: 'the generated title appears half a second after the first exchange',
    section: '2.1',
    hooks: () => {
      const firstSent = new Map<string, number>();
      return {
        request(r) {
          if (isSend(r) && !firstSent.has(r.path)) firstSent.set(r.path, Date.now());
        },
        response(res, r) {
          if (is(r, 'GET', CONV) && ok(res) && Date.now() - (firstSent.get(r.path) ?? 0) < 500) res.json.generated_title = {};
        },
      };
    },
  },
  {
    id: 'metrics-lagging',
    does: 'metrics are aggregated every half second: a change shows up to 500 ms late',
    section: '4.9',
    hooks: () => {
      const cached = new Map<string, { at: number; json: unknown }>();
      return {
        response(res, r) {
          if (!r.path.endsWith('/metrics') || !ok(res)) return;
          const c = cached.get(r.path);
          if (!c || Date.now() - c.at > 500) cached.set(r.path, { at: Date.now(), json: res.json });
          res.json = structuredClone(cached.get(r.path)!.json);
        },
      };
    },
  },
  {
    id: 'malformed-id-400',
    does: 'a conversation id not shaped like its own (conv_ and 24 hex digits) is refused with 400',
    section: '2.10',
    hooks: onRequest((r) => {
      const id = CONV.test(r.path) ? r.path.split('/').pop()! : undefined;
      if (id !== undefined && !/^conv_[0-9a-f]{24}$/.test(id))
        return errorBody(400, 'invalid_request_error', 'malformed conversation id', 'conversation_id', 'invalid_value');
    }),
  },
  {
    id: 'unknown-app-403',
    does: 'an app that does not exist is 403 access_denied (the key has no access to it), not 404 not_found',
    section: '5.6, 7',
    decision: { id: 'D-4', caughtBy: 'S7-unknown-app-404', because: /POST \/apps\/\w+\/conversations: expected HTTP 404, got 403/ },
    hooks: onResponse(
      () => true,
      (res) => res.status === 404 && res.json?.error?.param === 'app_id' && Object.assign(res, errorBody(403, 'access_denied')),
    ),
  },
  {
    id: 'metadata-16000-spaced',
    does: 'metadata is measured as JSON with a space after ":" and "," (as Python\'s json.dumps writes it), and refused above 16,000 bytes',
    section: '8',
    decision: {
      id: 'D-9',
      caughtBy: 'S8-metadata-create-at-limit',
      because: /create with metadata at the limit: expected HTTP 200, got 400/,
    },
    hooks: onRequest((r) => {
      const m = r.method === 'POST' ? r.json?.metadata : undefined;
      if (m && typeof m === 'object' && Buffer.byteLength(spaced(m)) > 16_000)
        return errorBody(400, 'invalid_request_error', 'metadata is over 16KB', 'metadata', 'too_large');
    }),
  },
  {
    id: 'message-content-null',
    does: 'a reply in JSON mode ends with a message item whose content is null (§2.4: array or null)',
    section: '2.4',
    decision: { id: 'D-14', caughtBy: 'S4.6-persisted-items-agree', because: /items compared with the user message and the output/ },
    hooks: onResponse(
      isSend,
      (res) => ok(res) && !isStream(res) && res.json.output.push({ type: 'message', role: 'assistant', content: null }),
    ),
  },
  {
    id: 'greeting-item',
    does: "a new conversation's history opens with the agent's greeting, before any exchange",
    section: '4.3',
    decision: { id: 'D-14', caughtBy: 'S4.3-get-new-has-no-items', because: /items of a new conversation: expected 0 entries, got 1/ },
    hooks: onResponse(
      (r) => is(r, 'GET', CONV),
      (res, r) => {
        if (ok(res))
          res.json.items.unshift({
            id: `msg_greeting_${r.path.split('/').pop()}`,
            type: 'message',
            role: 'assistant',
            content: [{ type: 'text', text: 'Welcome! How can I help?' }],
            created_at: res.json.created_at,
          });
      },
    ),
  },
  {
    id: 'sse-id-retry',
    does: 'every event carries an SSE id: line, the first a retry: line too (fields SSE defines beside event and data)',
    section: '6',
    decision: { id: 'D-16', caughtBy: 'S6-conv-raw-framing', because: /block #0 is not exactly "event: <type>" \+ "data: <json>"/ },
    hooks: onStream(
      (r) => isSend(r) || isCompletion(r),
      (res) => {
        let n = 0;
        res.body = res.body.replace(
          /^event: [^\r\n]*(\r\n|\r|\n)/gm,
          (line, eol: string) => `${line}id: ${++n}${eol}${n === 1 ? `retry: 3000${eol}` : ''}`,
        );
      },
    ),
  },
  {
    id: 'settles-late',
    does: 'metrics and the generated title show a change 1.5 s after it: longer than the request timeout of the run, shorter than its --settle-timeout',
    section: '2.1, 4.9',
    alone: {
      only: 'S4.9-*,S4.6-generated-title,S4.7-completion-no-conversation',
      timeoutMs: 1_000,
      settleTimeoutMs: 8_000,
      failsWithin: 300,
    },
    hooks: () => {
      const at = new Map<string, { time: number; json: unknown }>();
      const firstSent = new Map<string, number>();
      return {
        request(r) {
          if (isSend(r) && !firstSent.has(r.path)) firstSent.set(r.path, Date.now());
        },
        response(res, r) {
          if (is(r, 'GET', CONV) && ok(res) && Date.now() - (firstSent.get(r.path) ?? 0) < 1_500) res.json.generated_title = {};
          if (!r.path.endsWith('/metrics') || !ok(res)) return;
          // The value of 1.5 s ago: what an aggregate refreshed in the background shows.
          const kept = at.get(r.path);
          if (!kept || Date.now() - kept.time > 1_500) at.set(r.path, { time: Date.now(), json: res.json });
          res.json = structuredClone(at.get(r.path)!.json);
        },
      };
    },
  },
  ...WEBHOOK_VARIANTS,
];
