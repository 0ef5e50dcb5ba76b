// D-150: which secret key signs an endpoint's deliveries. An endpoint is registered for one secret key
// of its team (`signing_key_id`) and signed with that key's secret, plus its successor's while a roll's
// grace lasts, so that keys made later never change what a receiver verifies with. Kept in core: the
// stores assign the key of an endpoint saved without one, the services sign and report with it.
import type { z } from 'zod';
import type { SigningKeyState as States } from '../contract/admin-webhooks.ts';
import type { KeyT } from './tenants.ts';

/** What an endpoint's signing key is now: what its owner reads on the endpoint and acts on. */
export type SigningKeyState = z.infer<typeof States>;

/** Whether `k` can sign now: a secret key whose signing secret is kept, neither revoked nor past its expiry. */
export function signsNow(k: KeyT, nowS: number): boolean {
  return k.type === 'secret' && k.signing_key !== null && k.revoked_at === null && (k.expires_at === null || k.expires_at > nowS);
}

/**
 * D-150: the key a new endpoint of `teamId` is signed with when none is named: the team's oldest secret
 * key that can sign and is not being rolled away (a rolled key stops at its grace's end); undefined when
 * the team has none.
 */
export function defaultSigningKey(keys: readonly KeyT[], teamId: string, nowS: number): KeyT | undefined {
  // Keys made in the same second keep the document's order, the order they were made in (a stable sort):
  // the fixtures' keys, dated at their seeding (D-77), stay older than keys made in that second.
  return keys
    .filter((k) => k.team_id === teamId && k.rolled_to === null && signsNow(k, nowS))
    .sort((a, b) => a.created_at - b.created_at)[0];
}

/** The state of the key `keyId` of `teamId`: `rolled` while it still signs after a roll. */
export function signingKeyState(keys: readonly KeyT[], teamId: string, keyId: string | null, nowS: number): SigningKeyState {
  const k = keys.find((x) => x.id === keyId && x.team_id === teamId);
  if (k?.type !== 'secret' || k.signing_key === null) return 'missing';
  if (k.revoked_at !== null) return 'revoked';
  if (k.expires_at !== null && k.expires_at <= nowS) return 'expired';
  return k.rolled_to === null ? 'active' : 'rolled';
}

/**
 * D-150: the signing secrets S of an endpoint registered for `keyId`, the key's own first, then its
 * successor's while the key is in a roll's grace; none once the key no longer signs (the endpoint is
 * then disabled, never sent unsigned).
 */
export function endpointSigningKeys(keys: readonly KeyT[], teamId: string, keyId: string | null, nowS: number): Buffer[] {
  const own = keys.find((k) => k.id === keyId && k.team_id === teamId);
  if (!own || !signsNow(own, nowS)) return [];
  const next = own.rolled_to === null ? undefined : keys.find((k) => k.id === own.rolled_to && k.team_id === teamId);
  return [own, ...(next && signsNow(next, nowS) ? [next] : [])].map((k) => Buffer.from(k.signing_key!, 'base64'));
}
