// ApiError: the one error type of the service, and its mapping to the error object of §7 / D-1…D-5.
import type { z } from 'zod';
import { ERROR_STATUS, type ErrorBodyT, type ErrorTypeT } from '../contract/index.ts';

export type ApiErrorType = ErrorTypeT | 'invalid_request_error';

export class ApiError extends Error {
  readonly status: number;
  readonly type: ApiErrorType;
  readonly param: string | null;
  readonly code: string | null;
  /** Extra response headers, e.g. `Allow` (D-3) or `Retry-After` (D-23). */
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    type: ApiErrorType,
    message: string,
    opts: { param?: string | null; code?: string | null; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.type = type;
    this.param = opts.param ?? null;
    this.code = opts.code ?? null;
    this.headers = opts.headers ?? {};
  }

  toBody(): ErrorBodyT {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** A §7 error whose status the interface fixes. */
export function apiError(type: ErrorTypeT, message: string, opts: { param?: string | null; code?: string | null; headers?: Record<string, string> } = {}): ApiError {
  return new ApiError(ERROR_STATUS[type], type, message, opts);
}

/** D-1: a 400 `invalid_request_error`. */
export function invalidRequest(message: string, param: string | null, code: string): ApiError {
  return new ApiError(400, 'invalid_request_error', message, { param, code });
}

export function notFound(what: string, param: string | null = null): ApiError {
  return apiError('not_found', `${what} not found`, { param });
}

/** D-5: the message of an unexpected failure says nothing of its cause. */
export function internalError(requestId: string): ApiError {
  return apiError('internal_error', `The server had an unexpected error. Quote request id ${requestId} when reporting it.`);
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/**
 * D-1: turns the first zod issue into the error object: `param` is the dotted path of the field,
 * `code` says which rule it broke, and the message names both in plain words.
 */
export function fromZodError(error: z.ZodError, input: unknown, paramPrefix = ''): ApiError {
  const issue = error.issues[0]!;
  // An issue about the body itself has no path: its param is null and its name "the request body".
  const dotted = (path: readonly PropertyKey[]) => (path.length === 0 && !paramPrefix ? null : paramPrefix + path.map(String).join('.'));
  const named = (param: string | null) => param ?? 'The request body';
  // A missing field next to an unknown one is most often a typo (`messages` for `message`): say both.
  const missing = (path: readonly PropertyKey[]) => {
    const param = dotted(path);
    const parent = JSON.stringify(path.slice(0, -1));
    const stray = error.issues.find((i) => i.code === 'unrecognized_keys' && JSON.stringify(i.path) === parent);
    const hint = stray?.code === 'unrecognized_keys' ? ` (unknown parameter given: ${dotted([...stray.path, stray.keys[0]!])})` : '';
    return invalidRequest(`Missing required parameter: ${named(param)}${hint}.`, param, 'missing_parameter');
  };
  switch (issue.code) {
    case 'unrecognized_keys': {
      const key = issue.keys[0]!;
      const param = dotted([...issue.path, key])!;
      return invalidRequest(`Unknown parameter: ${param}.`, param, 'unknown_parameter');
    }
    case 'invalid_type': {
      const param = dotted(issue.path);
      const got = valueAt(input, issue.path);
      if (got === undefined) return missing(issue.path);
      return invalidRequest(`${named(param)} must be of type ${issue.expected} (got ${typeName(got)}).`, param, 'invalid_type');
    }
    case 'invalid_value':
    case 'invalid_union': {
      const param = dotted(issue.path);
      const got = valueAt(input, issue.path);
      if (got === undefined) return missing(issue.path);
      // Name the allowed values and what was sent, like every other rule's message (D-1).
      if ('values' in issue) {
        const allowed = issue.values.map((v) => JSON.stringify(v));
        const rule = allowed.length === 1 ? `must be ${allowed[0]}` : `must be one of ${allowed.join(', ')}`;
        return invalidRequest(`${named(param)} ${rule} (got ${shown(got)}).`, param, 'invalid_value');
      }
      return invalidRequest(`${named(param)} has an invalid value.`, param, 'invalid_value');
    }
    case 'custom': {
      const params = (issue.params ?? {}) as { apiCode?: string; param?: string };
      const param = params.param ?? dotted(issue.path);
      return invalidRequest(issue.message, param, params.apiCode ?? 'invalid_value');
    }
    default: {
      const param = dotted(issue.path);
      return invalidRequest(`${named(param)}: ${issue.message}.`, param, 'invalid_value');
    }
  }
}

/** A value quoted for an error message: JSON, cut short so that a message stays one readable line. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}
