// The Response resource (§2.3, its output items in §2.4's shape), built in this one place: the JSON
// answer of send message, the look-up (D-32) and the `response.*` webhooks (D-83) carry it, so the same
// response reads the same, key for key, wherever a client meets it.
import type { ItemT, LiveResponseT, OutputItemT, ResponseErrorT, UsageT } from '../../contract/index.ts';

/** What a response's start recorded (D-35): its id, time and conversation. */
export interface ResponseHead {
  id: string;
  created_at: number;
  conversation_id: string;
}

/** Where a response stands: running (D-32's `in_progress`), or as it ended, with its error and usage. */
export interface ResponseState<S extends LiveResponseT['status']> {
  status: S;
  error?: ResponseErrorT;
  usage?: UsageT;
}

/** The Response: `head`, its `output` items, then its state (an error and usage only where it has them). */
export function responseOf<S extends LiveResponseT['status']>(
  head: ResponseHead,
  output: OutputItemT[],
  { status, error, usage }: ResponseState<S>,
): LiveResponseT & { status: S } {
  return {
    id: head.id,
    object: 'response',
    created_at: head.created_at,
    conversation_id: head.conversation_id,
    output,
    status,
    ...(error ? { error } : {}),
    ...(usage ? { usage } : {}),
  };
}

/**
 * The output of response `responseId` among a conversation's items, in §2.4's shape: the reply's items
 * (not the user's message), without what the history adds to each (D-14's id, time and response, D-39's
 * status).
 */
export function outputOf(items: readonly ItemT[], responseId: string): OutputItemT[] {
  return items
    .filter((i) => i.response_id === responseId && !(i.type === 'message' && i.role === 'user'))
    .map(({ id: _id, created_at: _c, response_id: _r, status: _s, ...item }) => item as OutputItemT);
}
