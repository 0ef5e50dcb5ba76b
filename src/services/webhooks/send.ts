// One webhook attempt over HTTP (docs/webhooks.md, D-82, D-85): a POST of the event's exact body with
// its `webhook-*` headers, never following a redirect, bounded by a timeout, and connecting only to an
// address D-82 allows: an IP literal is judged before the request, a name's addresses as the resolver
// gives them, inside the connection's own look-up, so the address judged is the address connected to;
// a connection is kept for the endpoint's next attempt (Connections).
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { type AddressPolicy, addressesOf, isAddressLiteral, type Resolver, refusalOf } from './addresses.ts';

/** D-87: the first bytes of an answer kept in the delivery log. */
export const RESPONSE_BYTES_KEPT = 1024;

export interface SendResult {
  /** The answer's status, or null when none came. */
  status: number | null;
  /** The first bytes of the answer's body (text). */
  response: string;
  /** Why no answer came (refused, timed out, address refused), or null. */
  error: string | null;
  /** Seconds of a `Retry-After` header (429 and 503 only), when given. */
  retryAfterS: number | null;
  duration_ms: number;
}

export interface SendOptions {
  timeoutMs: number;
  policy: AddressPolicy;
  resolve: Resolver;
}

/** `Retry-After` as seconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | undefined, nowMs: number): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** A connection look-up that resolves with `resolve` (a `localhost` name: loopback) and refuses an address the policy refuses. */
function guardedLookup(o: SendOptions): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    addressesOf(hostname, o.resolve).then(
      (addresses) => {
        if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
        for (const a of addresses) {
          const why = refusalOf(a.address, o.policy);
          if (why) return callback(Object.assign(new Error(`address refused: ${hostname} resolves to ${why}`), { code: 'EADDRREFUSED' }));
        }
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: Error) => callback(err),
    );
  }) as LookupFunction;
}

/** D-82 (revised): an endpoint's idle connection is closed after this (below the 5 s Node servers keep one). */
export const IDLE_CONNECTION_MS = 4_000;

/**
 * D-82 (revised): each endpoint's kept-alive connection, one per endpoint (an instance has one attempt
 * in flight per endpoint, D-85), so that an attempt does not pay a TCP (and TLS) set-up each time.
 * A new connection is judged in its own look-up; a kept one goes on to the address judged when it opened.
 */
export class Connections {
  private readonly agents = new Map<string, { origin: string; agent: http.Agent }>();

  /** The agent of `endpointId` for `u`: a new one when the endpoint's origin changed. */
  agentFor(endpointId: string, u: URL): http.Agent {
    const held = this.agents.get(endpointId);
    if (held?.origin === u.origin) return held.agent;
    held?.agent.destroy();
    const o = { keepAlive: true, maxSockets: 1, timeout: IDLE_CONNECTION_MS };
    const agent = u.protocol === 'https:' ? new https.Agent(o) : new http.Agent(o);
    this.agents.set(endpointId, { origin: u.origin, agent });
    return agent;
  }

  /** Closes the connections of the endpoints not in `ids` (deleted ones). */
  keep(ids: ReadonlySet<string>): void {
    for (const [id, held] of this.agents)
      if (!ids.has(id)) {
        held.agent.destroy();
        this.agents.delete(id);
      }
  }

  close(): void {
    this.keep(new Set());
  }
}

/**
 * One attempt: `agent` keeps the connection for the next one (a fresh connection without it). A kept
 * connection the receiver closed just as the request went out is tried once more on a new one.
 */
export async function send(
  url: string,
  body: string,
  headers: Record<string, string>,
  o: SendOptions,
  agent?: http.Agent,
): Promise<SendResult> {
  const started = performance.now();
  const done = (r: Omit<SendResult, 'duration_ms'>): SendResult => ({ ...r, duration_ms: Math.round(performance.now() - started) });
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  // A name, `localhost` ones too, is judged in the connection's own look-up (guardedLookup).
  const literal = isAddressLiteral(host) ? host : null;
  const refused = literal === null ? null : refusalOf(literal, o.policy);
  if (refused) return done({ status: null, response: '', error: `address refused: ${refused}`, retryAfterS: null });
  const deadline = started + o.timeoutMs;
  let r = await post(u, body, headers, o, literal === null, deadline, agent);
  if (r === 'stale') r = await post(u, body, headers, o, literal === null, deadline, undefined);
  return done(r === 'stale' ? { status: null, response: '', error: 'ECONNRESET: socket hang up', retryAfterS: null } : r);
}

function post(
  u: URL,
  body: string,
  headers: Record<string, string>,
  o: SendOptions,
  guarded: boolean,
  deadline: number,
  agent: http.Agent | undefined,
): Promise<Omit<SendResult, 'duration_ms'> | 'stale'> {
  return new Promise((resolve) => {
    const lib = u.protocol === 'https:' ? https : http;
    let settled = false;
    const finish = (r: Omit<SendResult, 'duration_ms'> | 'stale') => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const req = lib.request(
      u,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'Parley-Webhooks/1', ...headers },
        lookup: guarded ? guardedLookup(o) : undefined,
        agent: agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (c: Buffer) => {
          if (kept < RESPONSE_BYTES_KEPT) chunks.push(c.subarray(0, RESPONSE_BYTES_KEPT - kept));
          kept += c.length;
          // Enough read: the rest of a large answer is not waited for (nor is the connection kept).
          if (kept >= RESPONSE_BYTES_KEPT) res.destroy();
        });
        const end = () => {
          const status = res.statusCode ?? null;
          const wait =
            status === 429 || status === 503 ? retryAfterSeconds(res.headers['retry-after'] as string | undefined, Date.now()) : null;
          finish({ status, response: Buffer.concat(chunks).toString('utf8'), error: null, retryAfterS: wait });
        };
        res.on('end', end);
        res.on('close', end);
        res.on('error', end);
      },
    );
    const timeoutMs = Math.max(0, deadline - performance.now());
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer within ${o.timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => {
      // The receiver closed the kept connection as the request went out: again on a new one (at most
      // a duplicate, which at least once allows).
      if (req.reusedSocket && err.code === 'ECONNRESET') return finish('stale');
      finish({
        status: null,
        response: '',
        error: err.message.startsWith('address refused') ? err.message : `${err.code ?? 'error'}: ${err.message}`,
        retryAfterS: null,
      });
    });
    req.end(body);
  });
}
