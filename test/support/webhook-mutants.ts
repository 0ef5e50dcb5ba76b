// The broken webhook senders that prove the S5.5-webhook-* cases (D-80…D-87). The proxy passes the
// admin surface through; where a mutant breaks a delivery, it registers a relay of its own on loopback in
// place of the suite's receiver, and the relay changes what the reference server sends (re-signed where
// the break is not the signature) or what the receiver's answer tells the server. mutants.ts lists them.
import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { signingKey } from '../../conformance/receiver.ts';
import { TARGET } from './helpers.ts';
import { ADMIN_PATH, type MutantHooks, type ProxyRequest } from './mutant-proxy.ts';
import type { Mutant, Variant } from './mutants.ts';

export interface Sent {
  headers: Record<string, string>;
  body: string;
}

interface RelayChange {
  /** Changes a delivery before the receiver gets it; `seen` counts the earlier deliveries of its webhook-id. */
  out?(d: Sent, seen: number): void;
  /** Sends the receiver a delivery of its own first (an invented one), or nothing. */
  before?(d: Sent, seen: number): Sent | undefined;
  /** What the server is told the receiver answered, the `seen`-th delivery of its webhook-id. */
  back?(status: number, seen: number): number;
}

export const ENDPOINTS = `${ADMIN_PATH}/webhook_endpoints`;
const isRegistration = (r: ProxyRequest) => r.method === 'POST' && r.path === ENDPOINTS && typeof r.json?.url === 'string';

/** D-80's signature of a delivery, with `key` (S, or a wrong one). */
export function sign(d: Sent, key: Buffer | string): string {
  return `v1,${createHmac('sha256', key).update(`${d.headers['webhook-id']}.${d.headers['webhook-timestamp']}.${d.body}`).digest('base64')}`;
}
export const S = signingKey(TARGET.api_key);

/** The body as `change` leaves its JSON, re-signed with the right key: only what `change` breaks is broken. */
export function rewrite(d: Sent, change: (event: any) => void): void {
  const event = JSON.parse(d.body);
  change(event);
  d.body = JSON.stringify(event);
  d.headers['webhook-id'] = event.id;
  d.headers['webhook-signature'] = sign(d, S);
}

/**
 * A relay in place of the suite's receiver: endpoints registered through the proxy point at it. A
 * receiver that hangs up gets the server hung up on too, so that its attempt records no status either.
 */
export function relay(change: RelayChange): () => MutantHooks {
  return () => {
    const real = new Map<string, string>();
    const seen = new Map<string, number>();
    let server: http.Server | undefined;
    let origin = '';
    const start = async () => {
      server = http.createServer(async (req, res) => {
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        const d: Sent = { headers: {}, body: Buffer.concat(chunks).toString('utf8') };
        for (const [k, v] of Object.entries(req.headers))
          if (typeof v === 'string' && (k.startsWith('webhook-') || k === 'content-type')) d.headers[k] = v;
        const id = d.headers['webhook-id'] ?? '';
        const n = seen.get(id) ?? 0;
        seen.set(id, n + 1);
        change.out?.(d, n);
        const to = real.get(req.url ?? '') ?? 'http://127.0.0.1:9/';
        try {
          const invented = change.before?.(d, n);
          if (invented) await (await fetch(to, { method: 'POST', headers: invented.headers, body: invented.body })).arrayBuffer();
          const answer = await fetch(to, { method: 'POST', headers: d.headers, body: d.body });
          const body = await answer.text();
          res.writeHead(change.back ? change.back(answer.status, n) : answer.status);
          res.end(body);
        } catch {
          req.socket.destroy();
        }
      });
      await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
      origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    };
    const back = (json: any) => {
      for (const [path, url] of real) if (json?.url === `${origin}${path}`) json.url = url;
    };
    return {
      async request(r) {
        if (!isRegistration(r)) return;
        if (!server) await start();
        const path = `/relay/${real.size}`;
        real.set(path, r.json.url);
        r.json.url = `${origin}${path}`;
      },
      response(res, r) {
        if (r.path.startsWith(ENDPOINTS)) {
          back(res.json);
          for (const e of res.json?.data ?? []) back(e);
        }
      },
      close: () =>
        new Promise<void>((r) => {
          if (!server) return r();
          server.closeAllConnections();
          server.close(() => r());
        }),
    };
  };
}

export const WEBHOOK_MUTANTS: Mutant[] = [
  {
    id: 'webhook-signed-with-whsec-text',
    breaks: 'deliveries are signed with the text of the whsec_ secret as the HMAC key, not the 32 bytes of S',
    section: 'D-80',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-signature',
    because: /none of the 1 v1 signature\(s\) verifies with the signing secret derived from api_key/,
    hooks: relay({
      out(d) {
        d.headers['webhook-signature'] = sign(d, `whsec_${S.toString('base64')}`);
      },
    }),
  },
  {
    id: 'webhook-signature-missing',
    breaks: 'deliveries carry no webhook-signature header',
    section: 'D-80',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-signature',
    because: /has no webhook-signature header/,
    hooks: relay({
      out(d) {
        delete d.headers['webhook-signature'];
      },
    }),
  },
  {
    id: 'webhook-timestamp-ms',
    breaks: 'webhook-timestamp is in milliseconds',
    section: 'D-80',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-signature',
    because: /webhook-timestamp \d{13} is not the attempt's time/,
    hooks: relay({
      out(d) {
        d.headers['webhook-timestamp'] = `${d.headers['webhook-timestamp']}000`;
        d.headers['webhook-signature'] = sign(d, S);
      },
    }),
  },
  {
    id: 'webhook-type-misspelt',
    breaks: 'a rename is sent as conversation.update',
    section: 'D-83',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-events',
    because: /no conversation\.updated event about conv_\S+ reached the endpoint within --settle-timeout/,
    hooks: relay({
      out(d) {
        rewrite(d, (e) => e.type === 'conversation.updated' && (e.type = 'conversation.update'));
      },
    }),
  },
  {
    id: 'webhook-id-unprefixed',
    breaks: 'event ids (and webhook-ids) lack the evt_ prefix',
    section: 'D-83',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-events',
    because: /id "[^"]+" does not start with evt_/,
    hooks: relay({
      out(d) {
        rewrite(d, (e) => (e.id = String(e.id).replace(/^evt_/, '')));
      },
    }),
  },
  {
    id: 'webhook-deleted-unmarked',
    breaks: 'conversation.deleted carries the conversation without deleted: true',
    section: 'D-83',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-events',
    because: /the conversation\.deleted event: data\.deleted \(D-83\): expected true, got undefined/,
    hooks: relay({
      out(d) {
        rewrite(d, (e) => e.type === 'conversation.deleted' && delete e.data.deleted);
      },
    }),
  },
  {
    id: 'webhook-items-stored',
    breaks: "a response event's output items carry the stored item's id and created_at, which the API's never have",
    section: 'D-83',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-events',
    because: /the response\.completed event: data\.output is the API's \(D-83\)/,
    hooks: relay({
      out(d) {
        rewrite(d, (e) => {
          if (e.type !== 'response.completed') return;
          for (const item of e.data.output) Object.assign(item, { id: 'msg_stored', created_at: e.data.created_at });
        });
      },
    }),
  },
  {
    id: 'webhook-filter-ignored',
    breaks: 'an endpoint gets every event type, whatever it asked for',
    section: 'D-81',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-event-filter',
    because: /asked for conversation\.deleted only has deliveries of conversation\.created/,
    hooks: () => {
      const asked = new Map<string, string[]>();
      return {
        request(r) {
          if (isRegistration(r) && !r.json.events.includes('*')) {
            asked.set(r.json.url, r.json.events);
            r.json.events = ['*'];
          }
        },
        response(res, r) {
          if (r.path.startsWith(ENDPOINTS) && asked.has(res.json?.url)) res.json.events = asked.get(res.json.url);
        },
      };
    },
  },
  {
    id: 'webhook-retry-new-id',
    breaks: 'a retry after a 500 comes with a new webhook-id',
    section: 'D-85',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-retry',
    because: /the retry after a 500: webhook-id \(D-85: it stays on every attempt\)/,
    hooks: relay({
      out(d, seen) {
        if (seen > 0) rewrite(d, (e) => (e.id = `evt_${randomBytes(12).toString('hex')}`));
      },
    }),
  },
  {
    id: 'webhook-no-retry',
    breaks: 'a delivery answered 500 is never sent again',
    section: 'D-85',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-retry',
    because: /no retry of webhook-id evt_\S+ reached the endpoint within --settle-timeout/,
    hooks: relay({ back: (status) => (status >= 500 ? 200 : status) }),
  },
  {
    id: 'webhook-410-ignored',
    breaks: 'a 410 Gone is retried like any failure: the endpoint stays enabled',
    section: 'D-86',
    profile: 'reference',
    caughtBy: 'S5.5-webhook-gone',
    because: /after answering 410 to evt_\S+, the endpoint reads enabled true, disabled_reason null/,
    hooks: relay({ back: (status) => (status === 410 ? 500 : status) }),
  },
];

export const WEBHOOK_VARIANTS: Variant[] = [
  {
    id: 'webhook-several-signatures',
    does: 'each delivery carries other signatures besides the valid one: a v1 of another key first and a scheme the suite does not know (D-80: signed with every key of the team)',
    section: '5.5',
    hooks: relay({
      out(d) {
        const other = sign(d, randomBytes(32));
        d.headers['webhook-signature'] = `${other} v1a,${randomBytes(64).toString('base64')} ${d.headers['webhook-signature']}`;
      },
    }),
  },
];
