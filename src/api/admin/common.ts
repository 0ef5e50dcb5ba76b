// What the route files of the admin surface (docs/control-plane.md) share: where a request came from
// (the audit's origin) and where links point.
import type { Call } from '../../http/context.ts';
import type { Origin } from '../../services/admin/accounts.ts';

/** D-168: the audit's and the sign-in throttle's address is the call's (`--trust-proxy`'s one rule). */
export function originOf(ctx: Pick<Call, 'req' | 'requestId' | 'address'>): Origin {
  return {
    address: ctx.address || 'unknown',
    user_agent: ctx.req.headers['user-agent'] ?? null,
    request_id: ctx.requestId,
  };
}

/**
 * Where links point (D-65): the public URL when one is set, else the address this request reached
 * (seen only by the admin who made it).
 */
export function publicBase(ctx: Pick<Call, 'req'>, publicUrl: string | null): string {
  if (publicUrl) return publicUrl;
  const scheme = 'encrypted' in ctx.req.socket ? 'https' : 'http';
  return `${scheme}://${ctx.req.headers.host ?? 'localhost'}`;
}
