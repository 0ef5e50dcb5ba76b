// Resumable responses, an extension beside `usage` and Idempotency-Key (docs/responses.md,
// D-30…D-39): a response looked up while it runs, its events resumed, a reply cancelled.
import { z } from 'zod';
import { ReferenceResponse } from './resources.ts';

/** D-31: names the response of a send message before its body (and the running one in D-37's 409). */
export const RESPONSE_ID_HEADER = 'parley-response-id';

/** D-32: a Response as the look-up answers it: §2.3's statuses plus `in_progress` while it runs. */
export const LiveResponse = ReferenceResponse.extend({ status: z.enum(['in_progress', 'completed', 'failed']) });

/** D-32: `starting_after` is a sequence number, or -1 (the default) for every event. */
export const SequenceNumber = z.string().regex(/^(-1|0|[1-9][0-9]{0,8})$/, 'must be an integer of -1 or more, in digits');

/** GET …/responses/{response_id}/events */
export const ResumeEventsQuery = z.strictObject({ starting_after: SequenceNumber.optional() });

export type LiveResponseT = z.infer<typeof LiveResponse>;
