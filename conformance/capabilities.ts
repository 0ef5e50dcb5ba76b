// Capabilities (D-105, extended): the target says which of Parley's extensions it implements, and the
// run scores what the target claims. Interface features are never capabilities: every implementation
// owes them. One table: the target parser, the runner, the reporters and docs/conformance.md read it;
// the score is score.ts's. This module imports nothing, so that the results' types can name capabilities.

export const CAPABILITIES = ['resumable', 'idempotency', 'widget', 'webhooks', 'scenarios'] as const;
export type Capability = (typeof CAPABILITIES)[number];

export interface CapabilityDef {
  /** What it is, for --list and the docs. */
  title: string;
  /** Target keys without which no case of it can run: declaring it without them is a usage error. */
  keys: readonly string[];
  /** The decisions that define it: a case citing one exercises it (test/conformance-capabilities.test.ts). */
  decisions: readonly string[];
  /**
   * Whether a request exercises it (test/conformance-capabilities.test.ts and the long proof record every
   * request of a case): `under(base)` tells a URL below one of the target's base URLs.
   */
  request(r: { url: URL; headers: ReadonlySet<string>; under: (base: keyof Bases) => boolean }): boolean;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `D-${from + i}`);

export const CAPABILITY_DEFS: Record<Capability, CapabilityDef> = {
  resumable: {
    title: 'resumable responses: Parley-Response-Id, look-up, resume and cancel of a reply (docs/responses.md)',
    keys: [],
    // D-37…D-39 are rules of send message and the history, which an implementation without the endpoints
    // keeps too; D-30 (a keyed retry continues the response) is idempotency's.
    decisions: range(31, 36),
    request: (r) => r.under('api') && /\/apps\/[^/]+\/responses(\/|$)/.test(r.url.pathname),
  },
  idempotency: {
    title: 'Idempotency-Key on create conversation, send message and completion (docs/reliability.md)',
    keys: [],
    // The keyed retry: replayed, never run twice; of a cut send message, the same response.
    decisions: ['D-30'],
    request: (r) => r.headers.has('idempotency-key'),
  },
  widget: {
    title: "the messenger widget's API, an extension of §5.4 (docs/widget.md)",
    keys: ['widget', 'publishable_key'],
    decisions: range(45, 59),
    // The widget's script is served beside its API (D-55).
    request: (r) => r.under('widget') || r.url.pathname === '/widget.js',
  },
  webhooks: {
    title: 'webhooks sent to the team, signed with the secret key (docs/webhooks.md)',
    keys: ['admin'],
    decisions: range(80, 89),
    request: (r) => r.under('admin') && /\/webhook/.test(r.url.pathname),
  },
  scenarios: {
    title: 'scenarios: the Parley-Scenario header makes a request fail on purpose, e.g. cuts its stream (docs/scenarios.md)',
    keys: [],
    decisions: range(120, 124),
    request: (r) => r.headers.has('parley-scenario'),
  },
};

/**
 * What the interface states, which no target may leave out: named here so that declaring one gets a
 * clear answer rather than "unknown capability".
 */
const INTERFACE_FEATURES = [
  'streaming',
  'sse',
  'stream',
  'completions',
  'conversations',
  'metrics',
  'config',
  'pagination',
  'rate_limits',
  'rate-limits',
  'errors',
  'function_calls',
  'data_spec',
  'generative_ui',
  'knowledge_base',
  'publishable_key',
  'metadata',
];

/** The target's base URLs: the API's, and the widget's and the control plane's when it has them. */
export interface Bases {
  api: string;
  widget?: string;
  admin?: string;
}

/** The capability a request exercises, if any. */
export function exercisedBy(req: { url: string; headers: Record<string, string> }, bases: Bases): Capability | undefined {
  const url = new URL(req.url);
  const headers = new Set(Object.keys(req.headers).map((h) => h.toLowerCase()));
  const under = (b: keyof Bases) => {
    const base = bases[b];
    return base !== undefined && (req.url === base || req.url.startsWith(`${base}/`));
  };
  return CAPABILITIES.find((c) => CAPABILITY_DEFS[c].request({ url, headers, under }));
}

/** Whether the target claims a capability, and whether it said so or the suite inferred it. */
export interface CapabilityClaim {
  claimed: boolean;
  how: 'declared' | 'inferred';
}
export type Claims = Record<Capability, CapabilityClaim>;

/**
 * A target without `capabilities` claims what a run tested before they existed: resumable responses
 * and Idempotency-Key always (their cases need no key), the widget with a `widget` key, webhooks with
 * `admin`. A declared list claims exactly what it lists.
 */
export function claimsOf(declared: readonly Capability[] | undefined, present: { widget: boolean; admin: boolean }): Claims {
  // Scenarios came after capabilities: a target has them only if it declares them.
  const inferred: Record<Capability, boolean> = {
    resumable: true,
    idempotency: true,
    widget: present.widget,
    webhooks: present.admin,
    scenarios: false,
  };
  return Object.fromEntries(
    CAPABILITIES.map((c) => [c, declared ? { claimed: declared.includes(c), how: 'declared' } : { claimed: inferred[c], how: 'inferred' }]),
  ) as Claims;
}

/** A name in `capabilities` that is none of them: why, in words, for a one-line usage error. */
export function unknownCapability(name: string): string {
  const norm = name.toLowerCase();
  if (INTERFACE_FEATURES.includes(norm))
    return `${JSON.stringify(name)} is part of the interface, not a capability: every implementation owes it; capabilities name Parley's extensions only (${CAPABILITIES.join(', ')})`;
  const near = CAPABILITIES.find((c) => c.startsWith(norm.slice(0, 4)) || editDistance(norm, c) <= 2);
  return `unknown capability ${JSON.stringify(name)}${near ? ` (did you mean ${near}?)` : ''}: capabilities name Parley's extensions only (${CAPABILITIES.join(', ')})`;
}

/** Levenshtein distance: a typo's hint (a capability here, a target key in target.ts). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}
