// The broken implementations that prove the cases reading everything the docs promise: the webhook
// cases (D-80…D-87), the admin's session (D-67) and "stop means stop" (D-33, D-19). Each breaks one rule
// behind the proxy of mutant-proxy.ts, or behind a relay in place of the suite's receiver
// (webhook-mutants.ts); mutants.ts lists them with the others.
import { ADMIN_PATH, type MutantHooks, type ProxyRequest, type ProxyResponse } from './mutant-proxy.ts';
import type { Mutant } from './mutants.ts';
import { ENDPOINTS, relay, rewrite, S, sign } from './webhook-mutants.ts';

const DELIVERIES = `${ADMIN_PATH}/webhook_deliveries`;
const ENDPOINT = new RegExp(`^${ENDPOINTS}/([^/]+)$`);
const RESPONSE = /^\/apps\/([^/]+)\/responses\/([^/]+)$/;
const CANCEL = /^\/apps\/([^/]+)\/responses\/([^/]+)\/cancel$/;
const SLOW_COMPLETIONS = /^\/apps\/app_slow\/completions$/;
const ok = (res: ProxyResponse) => res.status === 200 && res.json !== undefined;
const json = (body: unknown, status = 200): ProxyResponse => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
  json: body,
});
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every attempt of the delivery log's answer, changed by `change`. */
function eachAttempt(change: (a: any) => void): () => MutantHooks {
  return () => ({
    response(res, r) {
      if (r.path !== DELIVERIES || !ok(res)) return;
      for (const d of res.json.data ?? []) {
        for (const a of d.attempt_log ?? []) change(a);
        if (d.last_attempt) change(d.last_attempt);
      }
    },
  });
}

/** The answer of a sign-in (`POST /admin/v1/sessions`), changed by `change`. */
function onSignIn(change: (res: ProxyResponse) => void): () => MutantHooks {
  return () => ({
    response(res, r) {
      if (r.method === 'POST' && r.path === `${ADMIN_PATH}/sessions` && ok(res)) change(res);
    },
  });
}

const webhookMutants: Mutant[] = [
  {
    id: 'webhook-signature-base64url',
    breaks: 'signatures are written in the URL-safe base64 alphabet without padding (the right HMAC, text no library accepts)',
    section: 'D-80',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-signature',
    because: /carries the right HMAC but is not written as "v1," \+ its standard base64 with padding/,
    hooks: relay({
      out(d) {
        d.headers['webhook-signature'] = sign(d, S).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
      },
    }),
  },
  {
    id: 'webhook-retry-replays-headers',
    breaks: "a retry carries the first attempt's webhook-timestamp and signature again",
    section: 'D-85',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-retry',
    because: /the timestamp and the signatures are made for each attempt/,
    hooks: () => {
      const first = new Map<string, Record<string, string>>();
      return relay({
        out(d, seen) {
          const id = d.headers['webhook-id']!;
          if (seen === 0) first.set(id, { ...d.headers });
          else
            Object.assign(d.headers, {
              'webhook-timestamp': first.get(id)!['webhook-timestamp'],
              'webhook-signature': first.get(id)!['webhook-signature'],
            });
        },
      })();
    },
  },
  {
    id: 'webhook-data-extra-field',
    breaks: "an event's data carries a field the API never shows (the app's team)",
    section: 'D-83',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-events',
    because: /data has fields the API does not show: team_id/,
    hooks: relay({
      out(d) {
        rewrite(d, (e) => (e.data.team_id = 'team_demo'));
      },
    }),
  },
  {
    id: 'webhook-event-twice',
    breaks: 'a rename sends two conversation.updated events (two ids) for the one change',
    section: 'D-83',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-events',
    because: /one conversation\.updated change of conv_\S+ sent 2 events \(D-83: exactly one event per change\)/,
    hooks: relay({
      before(d, seen) {
        if (seen > 0 || !d.body.includes('"type":"conversation.updated"')) return undefined;
        const copy = { headers: { ...d.headers }, body: d.body };
        rewrite(copy, (e) => (e.id = `evt_${'0'.repeat(8)}${String(e.id).slice(-16)}`));
        return copy;
      },
    }),
  },
  {
    id: 'webhook-410-retried',
    breaks: 'a 410 is retried once before the endpoint is disabled',
    section: 'D-86',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-gone',
    because: /after its first 410, evt_\S+ was attempted again: the endpoint received it 2 times/,
    hooks: relay({ back: (status, seen) => (status === 410 && seen === 0 ? 500 : status) }),
  },
  {
    id: 'endpoint-description-ignored',
    breaks: 'a new endpoint is answered without the description it was sent (the default instead)',
    section: 'D-81',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-endpoint-read',
    because: /the answer of the registration: description is the one sent \(D-81, D-150\)/,
    hooks: () => ({
      response(res, r) {
        if (r.method === 'POST' && r.path === ENDPOINTS && ok(res)) res.json.description = '';
      },
    }),
  },
  {
    id: 'endpoint-delete-kept',
    breaks: 'deleting an endpoint answers 200 and hides it, but it stays registered and goes on receiving',
    section: 'D-81',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-endpoint-deleted',
    because: /the deleted endpoint received POST .* \(D-81: a deleted endpoint gets nothing\)/,
    hooks: () => {
      const hidden = new Set<string>();
      return {
        request(r) {
          const id = ENDPOINT.exec(r.path)?.[1];
          if (id && r.method === 'DELETE') {
            hidden.add(id);
            return json({ id, object: 'webhook_endpoint', deleted: true });
          }
          if (id && hidden.has(id)) return json({ error: { message: 'not found', type: 'not_found', param: null, code: null } }, 404);
        },
        response(res, r) {
          if (r.path === ENDPOINTS && r.method === 'GET' && ok(res)) res.json.data = res.json.data.filter((e: any) => !hidden.has(e.id));
        },
      };
    },
  },
  {
    id: 'endpoint-deleted-readable',
    breaks: 'a deleted endpoint is still answered by GET, as it was',
    section: 'D-81',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-endpoint-deleted',
    because: /read a deleted endpoint \(D-81\): expected HTTP 404, got 200/,
    hooks: () => {
      const views = new Map<string, unknown>();
      const deleted = new Set<string>();
      return {
        response(res, r) {
          if (r.method === 'POST' && r.path === ENDPOINTS && ok(res)) views.set(res.json.id, res.json);
          const id = ENDPOINT.exec(r.path)?.[1];
          if (id && r.method === 'DELETE' && ok(res)) deleted.add(id);
          if (id && r.method === 'GET' && res.status === 404 && deleted.has(id) && views.has(id)) Object.assign(res, json(views.get(id)));
        },
      };
    },
  },
  {
    id: 'log-oldest-first',
    breaks: 'the delivery log lists the oldest delivery first',
    section: 'D-87',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-log',
    because: /\(the older event\) before evt_\S+ \(D-87: newest first\)/,
    hooks: () => ({
      response(res, r) {
        if (r.path === DELIVERIES && ok(res)) res.json.data.reverse();
      },
    }),
  },
  {
    id: 'log-no-answer-status-0',
    breaks: 'an attempt that got no answer is recorded with status 0, not null',
    section: 'D-87',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-log',
    because: /the attempts of evt_\S+, newest first: the 200, then the attempt that got no answer \(D-87\)/,
    hooks: eachAttempt((a) => a.status === null && (a.status = 0)),
  },
  {
    id: 'log-response-1000-bytes',
    breaks: "an attempt keeps the answer's first 1,000 bytes, not 1,024",
    section: 'D-87',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-log',
    because: /the 200's response: the first 1,024 bytes of the answer \(D-87\)/,
    hooks: eachAttempt((a) => (a.response = String(a.response).slice(0, 1000))),
  },
  {
    id: 'log-duration-seconds',
    breaks: "an attempt's duration_ms is in seconds",
    section: 'D-87',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-log',
    because: /the 200 answered after 300 ms records duration_ms \d+ \(D-87/,
    hooks: eachAttempt((a) => (a.duration_ms = Math.round(a.duration_ms / 1000))),
  },
  {
    id: 'sign-in-csrf-only',
    breaks: 'a sign-in answers the CSRF token alone: neither the member nor the team',
    section: 'D-67',
    profile: 'reference',
    caughtBy: 'S5.5-admin-session',
    because: /sign-in of the target's admin \S+ \(D-67: the member, the team and the CSRF token\)/,
    hooks: onSignIn((res) => {
      delete res.json.member;
      delete res.json.team;
    }),
  },
  {
    id: 'session-cookie-lax',
    breaks: 'the session cookie is SameSite=Lax and readable by scripts (no HttpOnly)',
    section: 'D-67',
    profile: 'reference',
    caughtBy: 'S5.5-admin-session',
    because: /the session cookie lacks httponly, samesite=strict/,
    hooks: onSignIn((res) => {
      res.headers['set-cookie'] = res.headers['set-cookie']!.replace('; HttpOnly', '').replace('SameSite=Strict', 'SameSite=Lax');
    }),
  },
  {
    id: 'sign-out-ignored',
    breaks: 'sign-out answers 200 but the session goes on working',
    section: 'D-67',
    profile: 'reference',
    caughtBy: 'S5.5-admin-session',
    because: /the session after its sign-out: expected HTTP 401, got 200/,
    hooks: () => ({
      request(r) {
        if (r.method === 'DELETE' && r.path === `${ADMIN_PATH}/sessions/current`) return json({ object: 'session', deleted: true });
      },
    }),
  },
];

/** A cancel's response id, when `r` is one. */
const cancelled = (r: ProxyRequest) => (r.method === 'POST' ? CANCEL.exec(r.path)?.[2] : undefined);

const stopMutants: Mutant[] = [
  {
    id: 'cancel-answered-early',
    breaks: 'a cancel answers the reply failed at once and stops it a second later: text goes on after the answer',
    section: 'D-33',
    profile: 'reference',
    caughtBy: 'S4.6-cancel-running',
    because: /text delta\(s\) arrived after the cancel's answer: .* \(D-33: a cancel stops the reply\)/,
    hooks: () => ({
      async request(r, tools) {
        if (!cancelled(r)) return undefined;
        const now = await tools.forward({ ...r, method: 'GET', path: r.path.replace(/\/cancel$/, ''), body: '', json: undefined });
        // The run may be over, and the server stopped, by the time the cancel goes out.
        void wait(1000)
          .then(() => tools.forward(r))
          .catch(() => undefined);
        return json({ ...now.json, status: 'failed', error: { type: 'request_aborted', code: 'cancelled', message: 'cancelled' } });
      },
    }),
  },
  {
    id: 'cancel-stream-ends-late',
    breaks: "a cancelled reply's stream ends 3 s after the cancel's answer",
    section: 'D-33',
    profile: 'reference',
    caughtBy: 'S4.6-cancel-running',
    because: /the stream's terminal event came \d+ ms after the cancel's answer \(D-33: within 2 s\)/,
    hooks: () => ({
      async passChunk(_r, text) {
        if (text.includes('"code":"cancelled"')) await wait(3000);
      },
    }),
  },
  {
    id: 'cancel-lookup-lags',
    breaks: "a cancelled reply's look-up says in_progress for a second after the cancel's answer",
    section: 'D-33',
    profile: 'reference',
    caughtBy: 'S4.6-cancel-running',
    because: /the cancelled reply looked up as soon as the cancel was answered, compared with the cancel's answer/,
    hooks: () => {
      const at = new Map<string, number>();
      return {
        response(res, r) {
          const id = cancelled(r);
          if (id && ok(res)) at.set(id, Date.now());
          const look = r.method === 'GET' ? RESPONSE.exec(r.path)?.[2] : undefined;
          if (look && ok(res) && Date.now() - (at.get(look) ?? 0) < 1000) {
            res.json.status = 'in_progress';
            delete res.json.error;
          }
        },
      };
    },
  },
  {
    id: 'completion-left-runs-on',
    breaks: 'a completion whose client left runs on to its end',
    section: 'D-19',
    profile: 'reference',
    caughtBy: 'S4.7-completion-left-stops',
    because: /the completion cmpl_\S+ whose client left ran on: its event is "completion\.completed"/,
    hooks: () => ({
      takeover(r, res, tools) {
        if (r.method !== 'POST' || !SLOW_COMPLETIONS.test(r.path) || r.json?.stream !== true) return false;
        // The stream is read to its end whether or not the client is still there to take it.
        void (async () => {
          const up = await tools.upstream(r);
          res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'text/event-stream' });
          for await (const chunk of up.body as AsyncIterable<Uint8Array>) if (!res.destroyed) res.write(chunk);
          res.end();
        })().catch(() => res.destroy());
        return true;
      },
    }),
  },
];

export const READ_MUTANTS: Mutant[] = [...webhookMutants, ...stopMutants];
