// The evidence of a failing case: each exchange as structured data for the JSON report, as a curl
// command, and all of them as a shell script that replays the case. A key is replaced by its variable
// only where it is the key (the Authorization header): a body is never rewritten, so that a short key
// such as `x` cannot garble what the report shows.
import type { Exchange } from './http.ts';
import type { EvidenceExchange } from './results.ts';

/** A key and the environment variable that stands for it in a report: [`sk_live_…`, `API_KEY`]. */
export type KeyName = [key: string, variable: string];

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A literal inside double quotes, where `$VAR` still expands. */
function dqEscape(s: string): string {
  return s.replace(/[\\"$`]/g, '\\$&');
}

/** The Authorization header's value with a known key replaced by `$VAR`, or null when it carries no known key. */
function authVariable(name: string, value: string, keys: KeyName[]): string | null {
  if (name.toLowerCase() !== 'authorization') return null;
  const m = /^(Bearer\s+)(.*)$/i.exec(value);
  const hit = m ? keys.find(([key]) => key && key === m[2]) : undefined;
  return hit ? `${m![1]}$${hit[1]}` : null;
}

/** A request streams when its answer is an event stream, or when it asks for one. */
function isStream(ex: Pick<Exchange, 'request' | 'sse'>): boolean {
  if (ex.sse) return true;
  try {
    return (JSON.parse(ex.request.body ?? 'null') as { stream?: unknown } | null)?.stream === true;
  } catch {
    return false;
  }
}

const BODY_SHOWN = 600;

/**
 * The request as a curl command (`-N` for a stream, so that events show as they come); the key
 * replaced by its variable. `full` keeps long bodies whole (for a script); otherwise they are shortened.
 */
export function toCurl(req: Exchange['request'], keys: KeyName[], opts: { stream?: boolean; full?: boolean } = {}): string {
  const parts = ['curl', '-sS', ...(opts.stream ? ['-N'] : []), '-X', req.method, shellQuote(req.url)];
  for (const [k, v] of Object.entries(req.headers)) {
    const withVar = authVariable(k, v, keys);
    parts.push('-H', withVar !== null ? `"${k}: ${withVar}"` : shellQuote(`${k}: ${v}`));
  }
  if (req.body !== undefined) {
    const long = !opts.full && req.body.length > BODY_SHOWN;
    parts.push('--data-binary', shellQuote(long ? `${req.body.slice(0, BODY_SHOWN)}…` : req.body));
    if (long) parts.push(`# body shown up to ${BODY_SHOWN} of ${Buffer.byteLength(req.body)} bytes`);
  }
  return parts.join(' ');
}

/** The curl of an exchange, `-N` when it streams. */
export function exchangeCurl(ex: Exchange, keys: KeyName[]): string {
  return toCurl(ex.request, keys, { stream: isStream(ex) });
}

/**
 * What came back, for a report: status, the headers that matter, and the body, shortened to `max`
 * characters: its start, and for a stream its end too (where a missing or late event shows).
 */
export function describeResponse(ex: Exchange, max = 1500): string {
  const shown = ['content-type', 'allow', 'retry-after', 'cache-control'];
  const headers = shown.flatMap((h) => (ex.headers.get(h) !== null ? [`${h}: ${ex.headers.get(h)}`] : []));
  let body = ex.text;
  if (body.length > max) {
    const head = ex.sse ? Math.floor(max / 2) : max;
    const tail = max - head;
    body = `${body.slice(0, head)}… (${body.length - max} characters left out)${tail > 0 ? ` …${body.slice(-tail)}` : ''}`;
  }
  const end = ex.sse
    ? ex.sse.ended
      ? ''
      : `\n(stream not finished: ${ex.sse.left !== undefined ? `left by the suite after ${ex.sse.left} events` : (ex.sse.timedOut ?? 'cut short')})`
    : '';
  return `HTTP ${ex.status}${headers.length ? `\n${headers.join('\n')}` : ''}\n\n${body}${end}`;
}

function parsedOr(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** One exchange as the JSON report carries it. */
export function toEvidence(ex: Exchange, keys: KeyName[]): EvidenceExchange {
  const headers = Object.fromEntries(Object.entries(ex.request.headers).map(([k, v]) => [k, authVariable(k, v, keys) ?? v]));
  const response: EvidenceExchange['response'] = { status: ex.status, headers: Object.fromEntries(ex.headers), ms: ex.ms };
  if (ex.status === 0) response.error = ex.text.replace(/^\((.*)\)$/s, '$1');
  else if (ex.sse) {
    response.events = ex.sse.events.map((e) => ({ event: e.event, data: e.json ?? e.data, ...(e.id !== undefined ? { id: e.id } : {}) }));
    response.ended = ex.sse.ended;
    if (ex.sse.timedOut) response.timedOut = ex.sse.timedOut;
  } else if (ex.text !== '') response.body = ex.json ?? ex.text;
  return {
    request: {
      method: ex.request.method,
      url: ex.request.url,
      headers,
      ...(ex.request.body !== undefined ? { body: parsedOr(ex.request.body) } : {}),
    },
    response,
    curl: exchangeCurl(ex, keys),
  };
}

/** `token`: a widget's visitor token (D-49), which a replay must take from its own session. */
const ID_KEYS = new Set(['id', 'first_id', 'last_id', 'conversation_id', 'token']);

/** Ids in a JSON answer, with the path that reaches each: `id`, `data.0.id`, `last_id`. */
function idsIn(value: unknown, at: string[] = [], out: Array<[string, string]> = []): Array<[string, string]> {
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      idsIn(v, [...at, String(i)], out);
    });
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (typeof v === 'string' && ID_KEYS.has(k) && v.length >= 6) out.push([v, [...at, k].join('.')]);
      else if (typeof v === 'object') idsIn(v, [...at, k], out);
    }
  }
  return out;
}

/**
 * A shell script that replays the case's requests in order. An id that an earlier answer gave is
 * read from that answer (the run deleted what it created, so the recorded ids no longer exist).
 */
export function reproduction(exchanges: Exchange[], keys: KeyName[], baseUrl: string, title: string): string {
  const vars = new Map<string, string>();
  const lines = [
    '#!/bin/sh',
    `# ${title}`,
    `# Replays the case's ${exchanges.length} requests. Set ${[...new Set(keys.map(([, v]) => v))].map((v) => `$${v}`).join(', ')} first; needs curl and node.`,
    '# Ids that no request of this script created came from earlier cases of the run, which deleted them at its end.',
    'set -eu',
    `BASE_URL=${shellQuote(baseUrl)}`,
    `json_get() { node -e 'let s="";process.stdin.on("data",(d)=>{s+=d}).on("end",()=>{let v=JSON.parse(s);for(const k of process.argv[1].split("."))v=v==null?v:v[k];process.stdout.write(String(v))})' "$1"; }`,
  ];
  // Longest first, so that an id never replaces part of a longer one.
  const withVars = (text: string) => {
    let out = dqEscape(text);
    for (const [value, name] of [...vars].sort((a, b) => b[0].length - a[0].length)) out = out.split(dqEscape(value)).join(`\${${name}}`);
    return out;
  };
  exchanges.forEach((ex, i) => {
    const n = i + 1;
    const url = ex.request.url.startsWith(baseUrl)
      ? `\${BASE_URL}${withVars(ex.request.url.slice(baseUrl.length))}`
      : withVars(ex.request.url);
    const parts = ['curl', '-sS', ...(isStream(ex) ? ['-N'] : []), '-X', ex.request.method, `"${url}"`];
    for (const [k, v] of Object.entries(ex.request.headers)) parts.push('-H', `"${k}: ${authVariable(k, v, keys) ?? withVars(v)}"`);
    if (ex.request.body !== undefined) parts.push('--data-binary', `"${withVars(ex.request.body)}"`);
    const later = exchanges
      .slice(i + 1)
      .map((e) => `${e.request.url} ${Object.values(e.request.headers).join(' ')} ${e.request.body ?? ''}`)
      .join('\n');
    const captured = ex.sse || ex.json === undefined ? [] : idsIn(ex.json).filter(([value]) => !vars.has(value) && later.includes(value));
    lines.push(
      '',
      `# ${n}. ${ex.request.method} ${(ex.request.url.startsWith(baseUrl) && ex.request.url.slice(baseUrl.length)) || ex.request.url}: HTTP ${ex.status} in the run`,
    );
    if (captured.length === 0) {
      lines.push(`${parts.join(' ')}; echo`);
      return;
    }
    lines.push(`R${n}=$(${parts.join(' ')})`, `printf '%s\\n' "$R${n}"`);
    captured.forEach(([value, at], j) => {
      const name = `ID_${n}_${j + 1}`;
      vars.set(value, name);
      lines.push(`${name}=$(printf '%s' "$R${n}" | json_get ${shellQuote(at)})   # ${value} in the run`);
    });
  });
  return `${lines.join('\n')}\n`;
}
