// The error object (§7) and its statuses, with the D-1…D-6 rules on top.
import { z } from 'zod';

/** §7 */
export const ErrorType = z.enum([
  'invalid_api_key',
  'access_denied',
  'app_inactive',
  'agent_unavailable',
  'not_found',
  'rate_limit_exceeded',
  'internal_error',
]);
export const ErrorBody = z.looseObject({
  error: z.looseObject({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable().optional(),
    code: z.string().nullable().optional(),
  }),
});

/** §7 status of each error type the interface fixes. */
export const ERROR_STATUS: Record<z.infer<typeof ErrorType>, number> = {
  invalid_api_key: 401,
  access_denied: 403,
  app_inactive: 403,
  agent_unavailable: 403,
  not_found: 404,
  rate_limit_exceeded: 429,
  internal_error: 500,
};

/** D-1…D-6: the error object always has all four fields. */
export const ReferenceErrorBody = z.object({
  error: z.object({
    message: z.string().min(1),
    type: z.string(),
    param: z.string().nullable(),
    code: z.string().nullable(),
  }),
});

export type ErrorBodyT = z.infer<typeof ReferenceErrorBody>;
export type ErrorTypeT = z.infer<typeof ErrorType>;
