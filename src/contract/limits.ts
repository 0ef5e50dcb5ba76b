// Limits of the interface (§8) and of the decisions that pin what it leaves open, the id prefixes,
// and the ways the contract counts characters, bytes and depth. No zod here: the store and the HTTP
// layer use these on hot paths.

export const INTERFACE_VERSION = '1.0.0';

/** Limits of interface §8 and the decisions that pin the ones it leaves open. */
export const LIMITS = {
  /** §8, D-9: UTF-8 bytes of the compact JSON of `metadata`. */
  metadataBytes: 16_384,
  /** Not in the interface: bounds recursion before anything walks a hostile document. */
  jsonDepth: 64,
  /** §8: prompt length in characters (Unicode code points). */
  promptChars: 32_000,
  /** D-15: message content length in characters. */
  contentChars: 32_000,
  /** D-8: custom title length. */
  titleChars: 256,
  /** D-10: external_user_id length. */
  externalUserIdChars: 256,
  /** §8: list `limit`. */
  listLimitMin: 1,
  listLimitMax: 100,
  listLimitDefault: 20,
  /** D-2: request body cap. */
  bodyBytes: 1024 * 1024,
  /** D-29: a conversation's stored history (items and responses) in bytes; send message refuses past it. */
  conversationBytes: 4 * 1024 * 1024,
  /** The Idempotency-Key extension: longest key accepted; the draft recommends UUIDs (36 characters). */
  idempotencyKeyChars: 255,
} as const;

/**
 * The Idempotency-Key syntax in words, as the 400's message, /openapi.json and docs/reliability.md
 * say it. The httpapi draft makes the field an RFC 8941 String (quoted); the bare form is what
 * Stripe's and OpenAI's clients send.
 */
export const IDEMPOTENCY_KEY_SYNTAX = `1 to ${LIMITS.idempotencyKeyChars} printable ASCII characters, either in double quotes (an RFC 8941 string, where a backslash escapes a double quote or a backslash) or bare (no spaces, commas or double quotes), e.g. "8e03978e-40d5-43e8-bc93-6894a57f9324"`;

/** D-7: id prefixes. */
export const ID_PREFIX = {
  conversation: 'conv_',
  response: 'resp_',
  completion: 'cmpl_',
  message: 'msg_',
  call: 'call_',
  // The control plane's (docs/control-plane.md).
  key: 'key_',
  member: 'mem_',
  token: 'tok_',
  audit: 'aud_',
  app: 'app_',
  // Webhooks (docs/webhooks.md): D-7 gains `evt_` (an event's id is its `webhook-id`).
  event: 'evt_',
  endpoint: 'we_',
  attempt: 'wa_',
} as const;

/** Counts Unicode code points, which is what a person means by "characters". */
export function charLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** Depth of a parsed JSON value, walked iteratively so a hostile document cannot overflow the stack. */
export function jsonDepth(value: unknown, stopAt = Infinity): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > max) max = d;
    if (max > stopAt) return max;
    for (const child of Object.values(v as object)) stack.push([child, d + 1]);
  }
  return max;
}

/** A node of a walk: its value, its depth, and how it was reached (its parent and key), for a path. */
interface Walked {
  v: unknown;
  d: number;
  up?: Walked;
  key?: string;
}

const pathOf = (w: Walked): string => {
  const keys: string[] = [];
  for (let at: Walked | undefined = w; at?.key !== undefined; at = at.up) keys.push(at.key);
  return keys.reverse().join('.');
};

/** What `scanJson` found: the depth (up to `stopAt + 1`) and the first value no store keeps as sent. */
export interface JsonScan {
  depth: number;
  /** D-94: its dotted path (array indexes as numbers) and why. */
  unkept?: { path: string; why: string };
}

/**
 * jsonDepth's walk, which also finds what JSON.parse gives that no store keeps as sent (D-94): an own
 * `__proto__` key (an object copy, or a store reading it back, makes it the prototype and drops it)
 * and a number beyond the double range (JSON.parse makes it ±Infinity, which JSON writes as null).
 */
export function scanJson(value: unknown, stopAt = Infinity): JsonScan {
  let depth = 0;
  const stack: Walked[] = [{ v: value, d: 1 }];
  while (stack.length > 0) {
    const w = stack.pop()!;
    const { v, d } = w;
    if (typeof v === 'number' && !Number.isFinite(v))
      return { depth, unkept: { path: pathOf(w), why: 'is a number beyond the range of a double (about ±1.8e308)' } };
    if (v === null || typeof v !== 'object') continue;
    if (d > depth) depth = d;
    if (depth > stopAt) return { depth };
    if (Object.hasOwn(v, '__proto__'))
      return {
        depth,
        unkept: {
          path: pathOf({ v: undefined, d, up: w, key: '__proto__' }),
          why: 'is a key no store keeps (JavaScript takes `__proto__` for the prototype of an object); use another name',
        },
      };
    for (const [key, child] of Object.entries(v)) stack.push({ v: child, d: d + 1, up: w, key });
  }
  return { depth };
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
