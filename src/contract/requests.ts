// Requests (§4) with the D-n rules the server enforces: what a client may send, and in what words a
// refusal is explained (each custom issue carries its D-1 code).
import { z } from 'zod';
import { LIMITS, charLength, isPlainObject, jsonDepth } from './limits.ts';

/**
 * Byte size of `metadata` as D-9 defines it. Only call on a depth-bounded value. Here, not in limits.ts,
 * so that the resources' types stay free of Node for the dashboard, which imports them (dashboard/types.ts).
 */
export function metadataBytes(v: Record<string, unknown>): number {
  return Buffer.byteLength(JSON.stringify(v), 'utf8');
}

/**
 * A custom issue's `params.apiCode` carries the D-1 error code, so that the HTTP layer maps
 * every validation failure to one error object without knowing the rule behind it.
 */
type RefineCtx = { addIssue(issue: { code: 'custom'; message: string; params?: Record<string, unknown>; input?: unknown }): void };

function chars(field: string, min: number, max: number) {
  return (
    z
      .string()
      .superRefine((s, ctx: RefineCtx) => {
        const n = charLength(s);
        if (n < min || n > max) {
          ctx.addIssue({
            code: 'custom',
            message: `${field} must be ${min} to ${max.toLocaleString('en-US')} characters long (got ${n.toLocaleString('en-US')})`,
            params: { apiCode: 'invalid_value' },
          });
        }
      })
      // JSON Schema's lengths count code points too, so the published contract (openapi.ts) states the rule.
      .meta({ minLength: min, maxLength: max })
  );
}

/** D-9: metadata is a JSON object of at most 16,384 bytes (compact JSON, UTF-8). */
export const Metadata = z.custom<Record<string, unknown>>().superRefine((v, ctx: RefineCtx) => {
  if (!isPlainObject(v)) {
    ctx.addIssue({ code: 'custom', message: 'metadata must be a JSON object', params: { apiCode: 'invalid_type' } });
    return;
  }
  if (jsonDepth(v, LIMITS.jsonDepth) > LIMITS.jsonDepth) {
    ctx.addIssue({
      code: 'custom',
      message: `metadata must not be nested deeper than ${LIMITS.jsonDepth} levels`,
      params: { apiCode: 'invalid_value' },
    });
    return;
  }
  const bytes = metadataBytes(v);
  if (bytes > LIMITS.metadataBytes) {
    ctx.addIssue({
      code: 'custom',
      message: `metadata must be at most ${LIMITS.metadataBytes.toLocaleString('en-US')} bytes of JSON (got ${bytes.toLocaleString('en-US')})`,
      params: { apiCode: 'too_large' },
    });
  }
});

/** §4.1, D-8, D-9, D-10 */
export const CreateConversationRequest = z.strictObject({
  external_user_id: chars('external_user_id', 1, LIMITS.externalUserIdChars).nullable().optional(),
  title: chars('title', 1, LIMITS.titleChars).nullable().optional(),
  metadata: Metadata.nullable().optional(),
});

/**
 * D-12: `limit` is an integer from 1 to 100 written the plain way: digits only, no leading zero
 * (`5`, not `05`, `+5`, `5.0` or `1e1`), so that one rule says what is accepted.
 */
const limitParam = z.string().superRefine((s, ctx: RefineCtx) => {
  const n = /^[1-9][0-9]{0,2}$/.test(s) ? Number(s) : NaN;
  if (!(n >= LIMITS.listLimitMin && n <= LIMITS.listLimitMax)) {
    ctx.addIssue({
      code: 'custom',
      message: `limit must be an integer from ${LIMITS.listLimitMin} to ${LIMITS.listLimitMax}, in digits without leading zeros (got ${JSON.stringify(s)})`,
      params: { apiCode: 'invalid_value' },
    });
  }
});

/** D-12: a cursor is a conversation id; an empty one is refused in words, like every other rule (D-1). */
function cursor(field: 'after' | 'before') {
  return z.string().superRefine((s, ctx: RefineCtx) => {
    if (s === '')
      ctx.addIssue({
        code: 'custom',
        message: `${field} must be a conversation id (got an empty value)`,
        params: { apiCode: 'invalid_value' },
      });
  });
}

/** §4.2, D-10, D-12: query values arrive as strings. */
export const ListConversationsQuery = z
  .strictObject({
    limit: limitParam.optional(),
    after: cursor('after').optional(),
    before: cursor('before').optional(),
    order: z.enum(['asc', 'desc']).optional(),
    external_user_id: chars('external_user_id', 1, LIMITS.externalUserIdChars).optional(),
  })
  .superRefine((q, ctx: RefineCtx) => {
    if (q.after !== undefined && q.before !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'after and before cannot be used together',
        params: { apiCode: 'invalid_value', param: 'before' },
      });
    }
  });

/** §4.4, D-13 */
export const UpdateConversationRequest = z.strictObject({
  title: chars('title', 1, LIMITS.titleChars).nullable(),
});

/** §2.2, D-15 */
export const MessageInput = z.strictObject({
  content: chars('message.content', 1, LIMITS.contentChars),
  role: z.literal('user').optional(),
});

/** §4.6, D-9 */
export const SendMessageRequest = z.strictObject({
  message: MessageInput,
  stream: z.boolean().nullable().optional(),
  metadata: Metadata.nullable().optional(),
});

/** §4.7 */
export const CreateCompletionRequest = z.strictObject({
  prompt: chars('prompt', 1, LIMITS.promptChars),
  stream: z.boolean().optional(),
  knowledge_search: z.boolean().optional(),
  fast: z.boolean().optional(),
  metadata: Metadata.nullable().optional(),
});

export type CreateConversationRequestT = z.infer<typeof CreateConversationRequest>;
export type ListConversationsQueryT = z.infer<typeof ListConversationsQuery>;
export type UpdateConversationRequestT = z.infer<typeof UpdateConversationRequest>;
export type SendMessageRequestT = z.infer<typeof SendMessageRequest>;
export type CreateCompletionRequestT = z.infer<typeof CreateCompletionRequest>;
