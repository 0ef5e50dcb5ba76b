// The grammar of a scenario (docs/scenarios.md, D-120): the `Parley-Scenario` header's value, a list of
// directives separated by `;`, each `name` or `name=value`, read into typed fields. One table of
// directives: a new one is one row here plus its use. Nothing unknown is ignored: an unknown name, a
// bad value or a name given twice is an error that names the directive.

/** The statuses `status=<code>` may ask for, each answered with the catalogue's error for it (D-121). */
export const SCRIPTED_STATUSES = [401, 408, 409, 429, 500, 503] as const;
export type ScriptedStatus = (typeof SCRIPTED_STATUSES)[number];

/** Text deltas re-cut and paced (`tps`, `chunk`, `jitter`, `seed`). */
export interface Pacing {
  /** Deltas a second; none: as fast as they come. */
  tps?: number;
  /** Characters a delta; none: as the model cut them. */
  chunk?: number;
  /** Each wait ± up to this many ms. */
  jitterMs: number;
  /** The seed of the jitter, so that a run is reproducible. */
  seed: number;
}

/** A scenario as read: every field is one directive, absent when not given. */
export interface Scenario {
  /** `status=<code>` (+ `retry-after=<s>`): answered at once, nothing stored, counted or charged. */
  status?: { code: ScriptedStatus; retryAfterS?: number };
  /** `ttft=<ms>`: the first model event waits this long after `response.created`. */
  ttftMs?: number;
  pacing?: Pacing;
  /** `drop-after=<n>`: the connection closed after the n-th event written (`response.created` is 1). */
  dropAfter?: number;
  /** `reset-after=<n>`: the same with a TCP reset. */
  resetAfter?: number;
  /** `stall-after=<n>:<ms>`: nothing written for ms after the n-th event, keep-alive comments included. */
  stall?: { after: number; ms: number };
  /** `fail-after=<n>`: the reply fails (`scripted_fault`) after its n-th event. */
  failAfter?: number;
  /** `malformed-after=<n>`: one frame whose data is not JSON after the n-th event. */
  malformedAfter?: number;
  /** `duplicate=<n>`: the n-th event written twice. */
  duplicate?: number;
  /** `cursor-expired`: the events endpoint answers as past its retention, the look-up as past its hour (D-36). */
  cursorExpired?: boolean;
}

/** Why a scenario was refused: the directive at fault and what is wrong with it. */
export interface ScenarioError {
  error: true;
  directive: string;
  message: string;
}

/** The directives that shape the stream on the wire (src/http/sse.ts). */
export const WIRE_DIRECTIVES = ['drop-after', 'reset-after', 'stall-after', 'malformed-after', 'duplicate'] as const;
/** The directives that shape the model's events (src/services/send/scenario-pacing.ts). */
export const MODEL_DIRECTIVES = ['ttft', 'tps', 'chunk', 'jitter', 'seed', 'fail-after'] as const;

/** Largest number a directive takes: bounded, so that no value overflows a timer (2^31 ms). */
const MAX = 2_000_000_000;

class Bad extends Error {}

function count(v: string | undefined, min: number): number {
  if (v === undefined || !/^\d{1,10}$/.test(v)) throw new Bad(`an integer of ${min} or more`);
  const n = Number(v);
  if (n < min || n > MAX) throw new Bad(`an integer from ${min} to ${MAX}`);
  return n;
}

function none(v: string | undefined): true {
  if (v !== undefined) throw new Bad('no value');
  return true;
}

type Row = (s: Scenario, value: string | undefined) => void;

/** Each directive's reader: it checks its value and sets its field. */
const DIRECTIVES: Record<string, Row> = {
  status: (s, v) => {
    const code = count(v, 100);
    if (!(SCRIPTED_STATUSES as readonly number[]).includes(code)) throw new Bad(`one of ${SCRIPTED_STATUSES.join(', ')}`);
    s.status = { ...s.status, code: code as ScriptedStatus };
  },
  'retry-after': (s, v) => {
    s.status = { ...s.status!, retryAfterS: count(v, 0) };
  },
  ttft: (s, v) => {
    s.ttftMs = count(v, 0);
  },
  tps: (s, v) => {
    s.pacing = { ...pacingOf(s), tps: count(v, 1) };
  },
  chunk: (s, v) => {
    s.pacing = { ...pacingOf(s), chunk: count(v, 1) };
  },
  jitter: (s, v) => {
    s.pacing = { ...pacingOf(s), jitterMs: count(v, 0) };
  },
  seed: (s, v) => {
    s.pacing = { ...pacingOf(s), seed: count(v, 0) };
  },
  'drop-after': (s, v) => {
    s.dropAfter = count(v, 1);
  },
  'reset-after': (s, v) => {
    s.resetAfter = count(v, 1);
  },
  'stall-after': (s, v) => {
    const [after, ms, more] = (v ?? '').split(':');
    if (more !== undefined || ms === undefined) throw new Bad('<n>:<ms>, the event after which and how long');
    s.stall = { after: count(after, 1), ms: count(ms, 0) };
  },
  'fail-after': (s, v) => {
    s.failAfter = count(v, 1);
  },
  'malformed-after': (s, v) => {
    s.malformedAfter = count(v, 1);
  },
  duplicate: (s, v) => {
    s.duplicate = count(v, 1);
  },
  'cursor-expired': (s, v) => {
    s.cursorExpired = none(v);
  },
};

function pacingOf(s: Scenario): Pacing {
  return s.pacing ?? { jitterMs: 0, seed: 0 };
}

const fault = (directive: string, message: string): ScenarioError => ({ error: true, directive, message });

/** Reads a scenario's text; an empty text (or only `;`) is the empty scenario. */
export function parseScenario(text: string): Scenario | ScenarioError {
  const s: Scenario = {};
  const seen = new Set<string>();
  for (const part of text.split(';')) {
    const item = part.trim();
    if (item === '') continue;
    const eq = item.indexOf('=');
    const name = (eq === -1 ? item : item.slice(0, eq)).trim().toLowerCase();
    const value = eq === -1 ? undefined : item.slice(eq + 1).trim();
    const row = Object.hasOwn(DIRECTIVES, name) ? DIRECTIVES[name] : undefined;
    if (!row) return fault(name, `Unknown scenario directive "${name}"; the directives are ${Object.keys(DIRECTIVES).join(', ')}.`);
    if (seen.has(name)) return fault(name, `The scenario directive "${name}" is given twice.`);
    seen.add(name);
    try {
      row(s, value);
    } catch (err) {
      if (!(err instanceof Bad)) throw err;
      return fault(
        name,
        `The scenario directive "${name}" takes ${err.message} (got ${value === undefined ? 'none' : JSON.stringify(value)}).`,
      );
    }
  }
  if (s.status && s.status.code === undefined) return fault('retry-after', 'The scenario directive "retry-after" goes with "status".');
  if (s.status && Object.keys(s).length > 1)
    return fault('status', 'The scenario directive "status" answers at once: it takes no other directive but "retry-after".');
  return s;
}

export function isScenarioError(s: Scenario | ScenarioError): s is ScenarioError {
  return 'error' in s;
}

/** The scenario shapes the stream on the wire (the SSE writer's directives). */
export function shapesWire(s: Scenario): boolean {
  return (
    s.dropAfter !== undefined ||
    s.resetAfter !== undefined ||
    s.stall !== undefined ||
    s.malformedAfter !== undefined ||
    s.duplicate !== undefined
  );
}

/** The scenario shapes the model's events (time to first token, pacing, a fault). */
export function shapesModel(s: Scenario): boolean {
  return s.ttftMs !== undefined || s.pacing !== undefined || s.failAfter !== undefined;
}
