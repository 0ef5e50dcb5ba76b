// The admin surface from the browser (D-98): the session lives in its HttpOnly cookie; the CSRF token
// only in this module's memory (never in web storage or a URL), read again from GET /session on load.
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string | null,
    message: string,
    readonly param: string | null,
    readonly retryAfter: number | null,
  ) {
    super(message);
  }
}

let csrf: string | null = null;
let expired: () => void = () => {};

export function setCsrf(token: string | null): void {
  csrf = token;
}

/** Called when a signed-in request is answered 401: the session ended (idle, 7 days, or signed out elsewhere). */
export function onExpired(f: () => void): void {
  expired = f;
}

export async function api<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrf) headers['x-csrf-token'] = csrf;
  let res: Response;
  try {
    res = await fetch(`/admin/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch {
    throw new ApiFailure(0, null, 'Parley could not be reached. Check that it is running, then try again.', null, null);
  }
  const data = await res.json().catch(() => null);
  if (!res.ok) {
    const e = (data as { error?: { code?: string; message?: string; param?: string } } | null)?.error ?? {};
    const retry = Number(res.headers.get('retry-after'));
    const failure = new ApiFailure(
      res.status,
      e.code ?? null,
      e.message ?? `HTTP ${res.status}`,
      e.param ?? null,
      retry > 0 ? retry : null,
    );
    if (res.status === 401 && csrf !== null && path !== '/sessions') {
      csrf = null;
      expired();
    }
    throw failure;
  }
  return data as T;
}

export const qs = (params: Record<string, string | number | undefined | null>) => {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : '';
};

/**
 * D-173: every item of a paginated list (keys, tokens): its pages read one after another, `last_id` as
 * `after`, until `has_more` is false (a page that would not move on ends the walk).
 */
export async function listAll<T extends { id: string }>(path: string): Promise<{ data: T[] }> {
  const data: T[] = [];
  for (let after: string | null = null; ; ) {
    const page: { data: T[]; has_more: boolean; last_id: string | null } = await api('GET', path + qs({ limit: 100, after }));
    data.push(...page.data);
    if (!page.has_more || page.last_id === null || page.last_id === after) return { data };
    after = page.last_id;
  }
}
