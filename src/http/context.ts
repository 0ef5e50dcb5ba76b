// What a handler receives: the request, its resolved app, and helpers to read it once.
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { AppT, KeyT } from '../core/tenants.ts';
import type { IdempotencyClaim } from '../core/claims.ts';
import { fromZodError, invalidRequest } from './errors.ts';

/** A widget visitor (docs/widget.md, D-48): whose conversations a widget request may reach. */
export interface Visitor {
  id: string;
  /** D-50: set by a verified identity only. */
  external_user_id: string | null;
  /** D-50: the agent's context, from inside the signed identity only (never from the browser). */
  metadata: Record<string, unknown> | null;
}

export interface RequestContext {
  req: IncomingMessage;
  requestId: string;
  params: Record<string, string>;
  query: URLSearchParams;
  log: Logger;
  key: KeyT;
  app: AppT;
  /** Set on the widget API once the visitor token is verified. */
  visitor?: Visitor;
  /** Aborted when the client goes away before the answer is complete (D-19; a reply may then run on, D-34). */
  signal: AbortSignal;
  /** Headers to add to the response (e.g. D-23's rate-limit headers), set before the handler runs. */
  headers: Record<string, string>;
  /** Call before a stream starts: admits it under the app's cap of open streams, or throws 429. */
  beginStream?: () => void;
  /**
   * The JSON body (undefined when there is none), read and parsed on the first call; the same
   * promise after. Idempotency fingerprints it, then the handler validates it (D-1, D-2).
   */
  json(): Promise<unknown>;
  /**
   * Set by the idempotency stage when the request carries an Idempotency-Key: the work saves it with
   * itself, in one step of the store, so that a crash can never keep one without the other.
   */
  claim?: IdempotencyClaim;
  /**
   * Set by the idempotency stage on a keyed request: the handler names how a retry with the same key
   * joins its work while it still runs (D-30: a cut send message continues the same response), and
   * the response it produces, which a retry on another instance follows from the store.
   */
  joinable?: (join: (retry: RequestContext) => Promise<unknown>, responseId?: string) => void;
}

/** Reads the JSON body and validates it with a contract schema (D-1, D-2). */
export async function parseBody<S extends z.ZodType>(ctx: RequestContext, schema: S): Promise<z.infer<S>> {
  // No body reads as `{}` (all-optional bodies accept it); a JSON `null` is a body that is not an object (D-1).
  const body = await ctx.json();
  const raw = body === undefined ? {} : body;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw fromZodError(parsed.error, raw);
  return parsed.data;
}

/** Validates the query string; a repeated parameter is an error rather than a silent pick. */
export function parseQuery<S extends z.ZodType>(ctx: RequestContext, schema: S): z.infer<S> {
  const raw: Record<string, string> = Object.create(null);
  for (const [k, v] of ctx.query) {
    if (k in raw) throw invalidRequest(`The query parameter ${k} may be given only once.`, k, 'invalid_value');
    raw[k] = v;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw fromZodError(parsed.error, raw);
  return parsed.data;
}
