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
} as const;

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

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Byte size of `metadata` as D-9 defines it. Only call on a depth-bounded value. */
export function metadataBytes(v: Record<string, unknown>): number {
  return Buffer.byteLength(JSON.stringify(v), 'utf8');
}
