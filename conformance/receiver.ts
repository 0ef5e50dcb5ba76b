// The suite's webhook receiver (D-109, extended): a plain HTTP server that records every delivery
// (headers and raw body) and answers what a case asks for, and the Standard Webhooks check of D-80,
// written here from the decision's text (the suite judges implementations, so it shares no code with one).
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Delivery {
  /** The path it was sent to: the endpoint it belongs to. */
  path: string;
  method: string;
  headers: Record<string, string>;
  /** The raw body, as received (a signature covers these bytes, never re-serialized JSON). */
  body: string;
  json: unknown;
  /** When it arrived (ms since the epoch). */
  at: number;
  /** When it arrived, on the clock of performance.now() (the bench times deliveries with it). */
  arrived: number;
  /** The status the receiver answered; null when it hung up without an answer. */
  answered: number | null;
}

/**
 * How to answer a delivery: a status; or a status with a body of its own and a delay before it (a
 * delivery log reads the body's first bytes, D-87; a retry's time follows the answer's, D-85); or
 * `hang-up`: the connection closed with no answer at all (an attempt whose status is null).
 */
export type Answer = number | { status: number; body?: string; afterMs?: number } | 'hang-up';

/** How to answer a delivery, given the deliveries of the same path before it. */
export type Answerer = (d: Omit<Delivery, 'answered'>, before: readonly Delivery[]) => Answer;

export interface Receiver {
  /** The URL an endpoint named `name` is registered with. */
  urlFor(name: string): string;
  /** Every delivery so far, in arrival order. */
  readonly deliveries: readonly Delivery[];
  /** How the endpoint `name` answers (200 until told otherwise). */
  answer(name: string, answerer: Answerer): void;
  /** The first delivery that `pred` accepts, waiting for one up to `ms`; undefined when none came in time. */
  waitFor(pred: (d: Delivery) => boolean, ms: number, signal?: AbortSignal): Promise<Delivery | undefined>;
  close(): Promise<void>;
}

/**
 * Listens where `publicUrl` says (its port, on its host when that is an IP address, else on every
 * interface), or on 127.0.0.1 at a free port without one. `prefix` keeps one run's paths apart.
 */
export async function startReceiver(prefix: string, publicUrl?: string): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  const answerers = new Map<string, Answerer>();
  const waiters = new Set<() => void>();
  const base = publicUrl ? new URL(publicUrl) : undefined;
  const basePath = `${(base?.pathname ?? '').replace(/\/+$/, '')}/${prefix}`;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]));
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const path = (req.url ?? '/').split('?')[0]!;
      const d = { path, method: req.method ?? '', headers, body, json, at: Date.now(), arrived: performance.now() };
      const name = path.startsWith(`${basePath}/`) ? path.slice(basePath.length + 1) : '';
      const answerer = answerers.get(name);
      const answer: Answer = answerer
        ? answerer(
            d,
            deliveries.filter((x) => x.path === path),
          )
        : name
          ? 200
          : 404;
      const spec = typeof answer === 'number' ? { status: answer } : answer;
      deliveries.push({ ...d, answered: spec === 'hang-up' ? null : spec.status });
      for (const w of [...waiters]) w();
      if (spec === 'hang-up') {
        req.socket.destroy();
        return;
      }
      const reply = () => {
        res.writeHead(spec.status, { 'content-type': 'text/plain' });
        res.end(spec.body ?? (spec.status < 300 ? 'ok' : 'conformance receiver'));
      };
      if (spec.afterMs) setTimeout(reply, spec.afterMs);
      else reply();
    });
  });
  const host = base ? (/^[\d.]+$|^\[/.test(base.hostname) ? base.hostname.replace(/^\[|\]$/g, '') : '::') : '127.0.0.1';
  const port = base ? Number(base.port || (base.protocol === 'https:' ? 443 : 80)) : 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const origin = base ? base.origin : `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    urlFor: (name) => `${origin}${basePath}/${name}`,
    deliveries,
    answer: (name, a) => answerers.set(name, a),
    waitFor(pred, ms, signal) {
      return new Promise((resolve) => {
        const finish = () => {
          waiters.delete(check);
          clearTimeout(timer);
          signal?.removeEventListener('abort', finish);
          resolve(deliveries.find(pred));
        };
        const check = () => {
          if (deliveries.some(pred)) finish();
        };
        // The timer itself ends the wait: node may run it a millisecond before Date.now() reaches
        // the deadline, and a wait that then compared clocks stayed open for good (CI saw two cases hang).
        const timer = setTimeout(finish, ms);
        signal?.addEventListener('abort', finish, { once: true });
        if (signal?.aborted) return finish();
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** D-80: S = HMAC-SHA256(key: the whole secret key, message: `parley webhook signing v1`). */
export function signingKey(apiKey: string): Buffer {
  return createHmac('sha256', Buffer.from(apiKey, 'utf8')).update('parley webhook signing v1', 'ascii').digest();
}

/** D-80: the `whsec_` form of the signing key, which Standard Webhooks libraries take. */
export function signingSecret(apiKey: string): string {
  return `whsec_${signingKey(apiKey).toString('base64')}`;
}

/**
 * D-80: whether one of the space-separated `v1,<base64>` signatures is the HMAC-SHA256 of
 * `{id}.{timestamp}.{body}` under S; a problem in words otherwise. Compared as text, as Standard
 * Webhooks libraries compare it: standard base64 with its padding, never decoded leniently (Node's
 * decoder also takes the URL-safe alphabet and a missing `=`, which those libraries refuse).
 */
export function checkSignature(apiKey: string, headers: Record<string, string>, body: string): string | undefined {
  const id = headers['webhook-id'];
  const ts = headers['webhook-timestamp'];
  const sig = headers['webhook-signature'];
  if (!id || !ts || !sig) return 'webhook-id, webhook-timestamp and webhook-signature are not all there';
  const mine = createHmac('sha256', signingKey(apiKey)).update(`${id}.${ts}.${body}`, 'utf8').digest();
  const found = sig.split(' ').filter(Boolean);
  const v1 = found.filter((s) => s.startsWith('v1,'));
  if (v1.length === 0) return `no v1 signature in webhook-signature ${JSON.stringify(sig)}`;
  const expected = Buffer.from(`v1,${mine.toString('base64')}`);
  if (v1.some((s) => Buffer.byteLength(s) === expected.length && timingSafeEqual(Buffer.from(s), expected))) return undefined;
  const loose = v1.find((s) => {
    const b = Buffer.from(s.slice(3), 'base64');
    return b.length === mine.length && timingSafeEqual(b, mine);
  });
  return loose
    ? `signature ${JSON.stringify(loose)} carries the right HMAC but is not written as "v1," + its standard base64 with padding (RFC 4648 §4), ${JSON.stringify(expected.toString())}: Standard Webhooks libraries compare the text and refuse it`
    : `none of the ${v1.length} v1 signature(s) verifies with the signing secret derived from api_key (${signingSecret(apiKey).slice(0, 12)}…): HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{raw body}" under S`;
}

/** Whether a URL's host is this machine (the receiver's default address reaches only such a target). */
export function isLoopbackUrl(url: string): boolean {
  const h = new URL(url).hostname.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h.endsWith('.localhost') || /^127\./.test(h) || h === '::1' || /^::ffff:127\./.test(h);
}
