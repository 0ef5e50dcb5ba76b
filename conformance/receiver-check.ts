// The run of `parley webhooks check-receiver` (D-175): each case's deliveries POSTed to the receiver one
// after another, bounded by a per-request timeout and never retried, each answer judged (a 2xx for a
// delivery to accept, a 4xx for one to refuse; a 5xx, a 3xx or no answer fails the case), and the
// results in the suite's own RunResults so that its reporters render them.
import http from 'node:http';
import https from 'node:https';
import { signingKeyOf } from '../src/core/webhook-signature.ts';
import { runApart } from './apart.ts';
import { claimsOf } from './capabilities.ts';
import { describeResponse, exchangeCurl, reproduction, toEvidence } from './evidence.ts';
import type { Exchange } from './http.ts';
import { RECEIVER_CASES, type ReceiverCase, type Signing, strangerKey } from './receiver-cases.ts';
import type { CaseResult, RunResults } from './results.ts';
import { newRunId } from './run.ts';
import { SUITE_VERSION } from './version.ts';

export interface ReceiverCheckOptions {
  url: string;
  /** The receiver's signing secret, `whsec_…`. */
  secret: string;
  timeoutMs: number;
  /** The `app_id` of the events sent. */
  appId: string;
  /** The run's id, for a header printed before it starts (a new one otherwise). */
  runId?: string;
  /** Called with each case's result as it ends (the progress lines). */
  onResult?: (r: CaseResult) => void;
}

/** The report's name for what judged the receiver. */
export const CHECK_NAME = 'parley-check-receiver';

/** What a receiver's run says it is: the report's header, known before the run starts. */
export function receiverRunHeader(
  url: string,
  runId: string,
  appId: string,
): Pick<RunResults, 'subject' | 'suite' | 'interfaceVersion' | 'profile' | 'runId' | 'baseUrl' | 'appId'> {
  return {
    subject: 'receiver',
    suite: { name: CHECK_NAME, version: SUITE_VERSION },
    interfaceVersion: 'Standard Webhooks 1.0',
    profile: 'standard-webhooks-1.0',
    runId,
    baseUrl: url,
    appId,
  };
}

/** What is read of an answer: enough to show, never the whole of a receiver that streams. */
const ANSWER_BYTES = 16_384;

/** One POST of a delivery, as the suite's Exchange (status 0 and the reason in parentheses when no answer came). */
function post(url: URL, headers: Record<string, string>, body: string, timeoutMs: number): Promise<Exchange> {
  const request = {
    method: 'POST',
    url: url.href,
    headers: { 'content-type': 'application/json', 'user-agent': `${CHECK_NAME}/${SUITE_VERSION}`, ...headers },
    body,
  };
  const started = Date.now();
  const exchange = (status: number, text: string, answer: http.IncomingHttpHeaders = {}): Exchange => {
    const h = new Headers();
    for (const [k, v] of Object.entries(answer)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { request, status, headers: h, text, json, ms: Date.now() - started };
  };
  return new Promise((resolve) => {
    // A new connection per request (no agent): nothing is kept open once the run ends.
    const req = (url.protocol === 'https:' ? https : http).request(url, { method: 'POST', headers: request.headers, agent: false });
    let settled = false;
    const settle = (ex: Exchange) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(ex);
    };
    const timer = setTimeout(() => settle(exchange(0, `(timed out after ${timeoutMs} ms)`)), timeoutMs);
    req.on('error', (err) => settle(exchange(0, `(${err.message})`)));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const answer = () => exchange(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8').slice(0, ANSWER_BYTES), res.headers);
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        size += c.length;
        // The status is known and the rest would only be shown cut: a receiver that streams is not waited for.
        if (size >= ANSWER_BYTES) settle(answer());
      });
      res.on('end', () => settle(answer()));
      res.on('error', (err) => settle(exchange(0, `(the answer was cut short: ${err.message})`)));
    });
    req.end(body);
  });
}

/** Why an answer does not do what the case expects, or null when it does (D-175). */
function misjudged(c: ReceiverCase, ex: Exchange): string | null {
  const s = ex.status;
  if (s === 0) return `no answer: ${ex.text.replace(/^\((.*)\)$/s, '$1')}`;
  if (s >= 500) return `answered ${s}: a 5xx is a failure of the receiver, never a refusal (Parley would retry it)`;
  if (c.expect === 'accept') return s >= 200 && s < 300 ? null : `answered ${s} where a 2xx was expected: ${c.sends} must be accepted`;
  if (s >= 400 && s < 500) return null;
  return s >= 200 && s < 300
    ? `answered ${s}: it accepted ${c.sends}, which must be refused with a 4xx`
    : `answered ${s} where a 4xx was expected`;
}

/** The answers of a case in a line: `HTTP 204`, `HTTP 200, HTTP 500`, `no answer (…)`. */
function answered(exchanges: Exchange[]): string {
  return exchanges.map((e) => (e.status ? `HTTP ${e.status}` : `no answer ${e.text}`)).join(', ');
}

async function runCase(c: ReceiverCase, url: URL, s: Signing, timeoutMs: number): Promise<{ result: CaseResult; sent: number }> {
  const started = Date.now();
  const exchanges: Exchange[] = [];
  let why: string | null = null;
  // In order and never again: a duplicate's second request is the point of its case.
  for (const d of c.deliveries(s)) {
    const ex = await post(url, d.headers, d.body, timeoutMs);
    exchanges.push(ex);
    why = misjudged(c, ex);
    if (why) {
      if (exchanges.length > 1) why = `request ${exchanges.length} of the case ${why}`;
      break;
    }
  }
  const base = {
    id: c.id,
    section: c.expect === 'accept' ? 'Deliveries to accept (a 2xx)' : 'Deliveries to refuse (a 4xx)',
    level: 'MUST' as const,
    description: c.description,
    capability: 'webhooks' as const,
    clauses: c.clauses,
    answered: answered(exchanges),
    ms: Date.now() - started,
  };
  if (!why) return { result: { ...base, status: 'passed' }, sent: exchanges.length };
  const last = exchanges[exchanges.length - 1]!;
  const result: CaseResult = {
    ...base,
    status: 'failed',
    failure: {
      message: why,
      curl: exchangeCurl(last, []),
      response: last.status ? describeResponse(last) : last.text,
      exchanges: exchanges.map((e) => toEvidence(e, [])),
      ...(exchanges.length > 1 ? { reproduction: reproduction(exchanges, [], url.origin, `${c.id}: ${c.description}`) } : {}),
    },
  };
  return { result, sent: exchanges.length };
}

/** Runs every case against the receiver at `url`, one request at a time. */
export async function checkReceiver(o: ReceiverCheckOptions): Promise<RunResults> {
  const url = new URL(o.url);
  const started = Date.now();
  const signing: Signing = { key: signingKeyOf(o.secret), otherKey: strangerKey(), nowS: Math.floor(started / 1000), appId: o.appId };
  const results: CaseResult[] = [];
  let sent = 0;
  for (const c of RECEIVER_CASES) {
    const r = await runCase(c, url, { ...signing, nowS: Math.floor(Date.now() / 1000) }, o.timeoutMs);
    sent += r.sent;
    results.push(r.result);
    o.onResult?.(r.result);
  }
  return runApart(
    receiverRunHeader(url.href, o.runId ?? newRunId(), o.appId),
    results,
    started,
    sent,
    claimsOf(['webhooks'], { widget: false, admin: false }),
  );
}
