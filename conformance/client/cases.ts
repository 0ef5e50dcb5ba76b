// The client kit's cases (docs/client-kit.md): each runs one task of the client under one condition it
// is not told, set by a scenario script on the case's own key (docs/scenarios.md), and judges the
// client's printed result against what the server holds (`must`) and its requests as the server saw
// them, from the key's test run (`should`).
import jsonpatch, { type Operation } from 'fast-json-patch';

export type Task = 'create-conversation' | 'send-stream' | 'send-json' | 'complete' | 'list-all' | 'cancel';

/** One request of the case's key, as `GET …/test-runs/{id}` lists it (D-125). */
export interface SeenRequest {
  at_ms: number;
  method: string;
  path: string;
  /** The step of the script it ran (1 the first). */
  step: number | null;
  status: number;
  idempotency_key: string | null;
  last_event_id: string | null;
  starting_after: string | null;
  retry_after_gap_ms: number | null;
}

/** What a judge knows: the client's output, its requests, and the truth the kit reads back with its own key. */
export interface Evidence {
  output: Record<string, unknown>;
  requests: SeenRequest[];
  vars: Record<string, string>;
  /** The response the client reported (or the case made), as the server holds it; undefined when none. */
  truth?: { status: string; output: Array<Record<string, unknown>>; error?: { code?: string } };
  /** For list-all: the ids the app had when the walk began, in the order asked. */
  before?: string[];
  /** For complete: the text the same prompt gives the kit. */
  completion?: string;
  /** For create-conversation: conversations of the app with the case's title. */
  titled?: number;
}

/** A failed check's message; undefined when it holds. */
export type Judge = (e: Evidence) => string | undefined;

export interface ClientCase {
  id: string;
  description: string;
  task: Task;
  app: 'demo' | 'genui' | 'knowledge';
  /** The scenario script set on the case's key: one directive list per request, in order; past its end the last step repeats (D-126). */
  script: string[];
  message?: string;
  must: Judge[];
  should?: Judge[];
  /** For list-all: the order asked (PARLEY_ORDER), and whether conversations are added while the walk waits on its second page. */
  order?: 'asc' | 'desc';
  grow?: boolean;
}

/** Retry-After is honoured when the next request comes this long before it at the earliest (docs/client-kit.md). */
export const RETRY_AFTER_TOLERANCE_MS = 50;

const show = (v: unknown) => JSON.stringify(v);

/** A response's output as the protocol shows it: its data_spec patches applied, as one form item where the first was. */
export function shownOutput(output: Array<Record<string, unknown>>): unknown[] {
  const patches = output.filter((i) => i.type === 'data_spec').map((i) => (i.data as { patch: Operation }).patch);
  const at = output.findIndex((i) => i.type === 'data_spec');
  const items: unknown[] = output.filter((i) => i.type !== 'data_spec');
  if (at >= 0) items.splice(at, 0, { type: 'form', state: jsonpatch.applyPatch({}, structuredClone(patches), false, false).newDocument });
  return items;
}

export function textOf(output: Array<Record<string, unknown>>): string {
  return output
    .filter((i) => i.type === 'message')
    .flatMap((i) => (i.content as Array<{ text?: string }> | null) ?? [])
    .map((p) => p.text ?? '')
    .join('');
}

// ---- must: what the client shows ----

const noError: Judge = (e) => (e.output.error ? `the client gave up: ${show(e.output.error)}` : undefined);

const sameText: Judge = (e) => {
  if (!e.truth) return `the client named no response the server has (response_id ${show(e.output.response_id)})`;
  const want = textOf(e.truth.output);
  return e.output.text === want ? undefined : `the text shown is ${show(e.output.text)}; the reply's text is ${show(want)} (exactly once)`;
};

const sameItems: Judge = (e) => {
  if (!e.truth) return 'no response to compare the items with';
  const want = shownOutput(e.truth.output);
  return show(e.output.items) === show(want) ? undefined : `items ${show(e.output.items)}; the response's output shows ${show(want)}`;
};

const statusIs =
  (status: 'completed' | 'failed'): Judge =>
  (e) =>
    e.output.status === status && e.truth?.status === status
      ? undefined
      : `status ${show(e.output.status)} reported, the response is ${show(e.truth?.status)}; expected ${status}`;

const cancelled: Judge = (e) => {
  const code = (e.output.error as { code?: string } | undefined)?.code;
  return e.output.status === 'failed' && code === 'cancelled'
    ? undefined
    : `a cancelled reply is reported failed, code cancelled (D-33); got ${show(e.output)}`;
};

const errorReported =
  (status: number, type: string): Judge =>
  (e) => {
    const err = e.output.error as { status?: number; type?: string } | undefined;
    return err?.status === status && err.type === type
      ? undefined
      : `an answer ${status} ${type} is reported with its status and type; got ${show(e.output)}`;
  };

/**
 * A transient answer (a 429, 503, 500, a busy conversation) may be retried or reported: what the client
 * shows is then right either way (MUST); that it retried and got there is SHOULD (`recovered`).
 */
const orReported =
  (status: number, judges: Judge[]): Judge =>
  (e) => {
    const err = e.output.error as { status?: number; type?: string } | undefined;
    if (err)
      return err.status === status && err.type
        ? undefined
        : `an answer ${status} is retried or reported with its status and type; got ${show(err)}`;
    return judges.map((j) => j(e)).find((m) => m !== undefined);
  };

const recovered: Judge = (e) => (e.output.error ? `the client gave up at ${show(e.output.error)}: it may pass when sent again` : undefined);

const triesAtMost =
  (n: number, why: string): Judge =>
  (e) =>
    e.requests.length <= n ? undefined : `${e.requests.length} requests: ${why}`;

const created: Judge = (e) => {
  if (typeof e.output.conversation_id !== 'string') return `no conversation_id printed: ${show(e.output)}`;
  return e.titled === 1 ? undefined : `${e.titled} conversations have the case's title: a create retried must make one`;
};

const walked: Judge = (e) => {
  const ids = e.output.ids as string[] | undefined;
  if (!Array.isArray(ids)) return `no ids printed: ${show(e.output)}`;
  const old = new Set(e.before);
  const seen = ids.filter((id) => old.has(id));
  if (new Set(ids).size !== ids.length) return 'an id is listed twice';
  return show(seen) === show(e.before)
    ? undefined
    : `the walk yields ${seen.length} of the ${e.before!.length} ids there when it began, or not in order`;
};

const completedText: Judge = (e) =>
  e.output.status === 'completed' && e.output.text === e.completion
    ? undefined
    : `the completion shown is ${show(e.output)}; expected ${show(e.completion)}`;

// ---- should: how the client behaved on the wire ----

const resumed =
  (after: number): Judge =>
  (e) => {
    const next = e.requests[1];
    if (!next) return 'the client never came back after the cut';
    const from = next.last_event_id ?? next.starting_after;
    return next.method === 'GET' && /\/events$/.test(next.path) && from === String(after - 1)
      ? undefined
      : `after a cut at event ${after} the client resumes from sequence_number ${after - 1} (D-32); its next request was ${next.method} ${next.path} from ${show(from)}`;
  };

const waitedRetryAfter =
  (seconds: number): Judge =>
  (e) => {
    const gap = e.requests[1]?.retry_after_gap_ms;
    if (gap == null) return 'the client did not retry';
    return gap >= seconds * 1000 - RETRY_AFTER_TOLERANCE_MS ? undefined : `retried ${gap} ms after a Retry-After of ${seconds} s`;
  };

const sameKey: Judge = (e) => {
  const keys = e.requests.filter((r) => r.method === 'POST').map((r) => r.idempotency_key);
  if (keys.length < 2) return 'the client did not retry';
  return keys[0] && keys.every((k) => k === keys[0])
    ? undefined
    : `the retries carry Idempotency-Keys ${show(keys)}: one operation, one key`;
};

const cancelledByApi: Judge = (e) =>
  e.requests.some((r) => r.method === 'POST' && /\/cancel$/.test(r.path))
    ? undefined
    : 'no cancel request: closing the socket leaves the reply running (D-34)';

const stream = (id: string, description: string, script: string[], extra: Partial<ClientCase> = {}): ClientCase => ({
  id,
  description,
  task: 'send-stream',
  app: 'demo',
  script,
  must: [noError, sameText, sameItems, statusIs('completed')],
  ...extra,
});

export const CLIENT_CASES: ClientCase[] = [
  {
    id: 'K-create',
    description: 'creates a conversation',
    task: 'create-conversation',
    app: 'demo',
    script: [''],
    must: [noError, created],
  },
  {
    id: 'K-create-500',
    description: 'a create answered 500 is retried with the same Idempotency-Key, and makes one conversation',
    task: 'create-conversation',
    app: 'demo',
    script: ['status=500', ''],
    must: [orReported(500, [created])],
    should: [recovered, sameKey],
  },
  {
    id: 'K-create-401',
    description: 'a 401 is reported with its status and type, and not retried',
    task: 'create-conversation',
    app: 'demo',
    script: ['status=401', ''],
    must: [errorReported(401, 'invalid_api_key'), triesAtMost(1, 'a 401 is not retried')],
  },
  {
    id: 'K-create-429',
    description: 'a 429 is waited out for its Retry-After, then retried',
    task: 'create-conversation',
    app: 'demo',
    script: ['status=429;retry-after=2', ''],
    must: [orReported(429, [created])],
    should: [recovered, waitedRetryAfter(2), sameKey],
  },
  {
    id: 'K-create-503',
    description: 'a 503 that lasts is retried at most 5 times, then reported',
    task: 'create-conversation',
    app: 'demo',
    script: Array(8).fill('status=503'),
    must: [errorReported(503, 'service_unavailable')],
    should: [triesAtMost(5, 'at most 5 tries')],
  },
  stream('K-stream', 'a streamed reply is shown as the response is', ['']),
  stream('K-stream-drop', 'a stream cut after 3 events is resumed, its text shown once', ['drop-after=3', ''], { should: [resumed(3)] }),
  stream('K-stream-reset', 'a stream reset after 3 events is resumed, its text shown once', ['reset-after=3', ''], {
    should: [resumed(3)],
  }),
  stream('K-stream-stall', 'a stream silent for 4 s after 3 events shows its text once', ['stall-after=3:4000', '']),
  stream('K-stream-ttft', 'a first text 3 s late shows the text once', ['ttft=3000', '']),
  stream('K-stream-malformed', 'a frame that is not JSON is not the end of the reply', ['malformed-after=3', '']),
  stream('K-stream-duplicate', 'an event written twice is shown once', ['duplicate=4', '']),
  stream('K-stream-busy', 'a send answered 409 conversation_busy is retried with the same key', ['status=409', ''], {
    must: [orReported(409, [sameText, sameItems, statusIs('completed')])],
    should: [recovered, sameKey],
  }),
  stream('K-stream-429', 'a send answered 429 waits out its Retry-After', ['status=429;retry-after=1', ''], {
    must: [orReported(429, [sameText, sameItems, statusIs('completed')])],
    should: [recovered, waitedRetryAfter(1)],
  }),
  stream('K-stream-form', "a form's patches are applied in order", [''], { app: 'genui', message: 'I want to book a demo' }),
  stream('K-stream-tools', 'function calls are shown as the response has them', [''], {
    app: 'knowledge',
    message: 'What is your refund policy?',
  }),
  {
    id: 'K-stream-failed',
    description: 'a reply that fails midway is reported failed, never as done',
    task: 'send-stream',
    app: 'demo',
    script: ['fail-after=4', ''],
    must: [sameText, statusIs('failed')],
  },
  {
    id: 'K-json',
    description: 'a reply in JSON is shown as the response is',
    task: 'send-json',
    app: 'demo',
    script: [''],
    must: [noError, sameText, sameItems, statusIs('completed')],
  },
  {
    id: 'K-json-503',
    description: 'a send answered 503 is retried with the same key',
    task: 'send-json',
    app: 'demo',
    script: ['status=503', ''],
    must: [orReported(503, [sameText, statusIs('completed')])],
    should: [recovered, sameKey],
  },
  {
    id: 'K-complete',
    description: 'a completion is shown as made',
    task: 'complete',
    app: 'demo',
    script: [''],
    must: [noError, completedText],
  },
  {
    id: 'K-complete-429',
    description: 'a completion answered 429 waits out its Retry-After',
    task: 'complete',
    app: 'demo',
    script: ['status=429;retry-after=1', ''],
    must: [orReported(429, [completedText])],
    should: [recovered, waitedRetryAfter(1)],
  },
  {
    id: 'K-list-desc',
    description: 'every conversation, newest first, once each',
    task: 'list-all',
    app: 'demo',
    order: 'desc',
    script: [''],
    must: [noError, walked],
  },
  {
    id: 'K-list-asc',
    description: 'every conversation, oldest first, once each',
    task: 'list-all',
    app: 'demo',
    order: 'asc',
    script: [''],
    must: [noError, walked],
  },
  {
    id: 'K-list-growing',
    description: 'a walk while 3 conversations are added yields every id that was there, once each, in order',
    task: 'list-all',
    app: 'demo',
    script: ['', 'status=503;retry-after=2', ''],
    must: [orReported(503, [walked])],
    should: [recovered],
    order: 'desc',
    grow: true,
  },
  {
    id: 'K-cancel',
    description: 'a reply cancelled through the API is reported failed, code cancelled',
    task: 'cancel',
    // Paced (D-124) so that the reply is still under way at its first text, on any app with a widget.
    app: 'demo',
    script: ['tps=7;chunk=6', ''],
    must: [cancelled],
    should: [cancelledByApi],
  },
];
