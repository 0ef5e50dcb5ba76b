// D-80: the keys a delivery is signed with: every secret key of the team that is neither revoked nor
// past its expiry (a rolled key until its grace ends), newest first, at most 10, so that a receiver
// holding a rolled key's secret keeps verifying during the grace period.
import type { ControlDocT } from '../../core/control.ts';
import { MAX_SIGNATURES } from '../../core/webhook-signature.ts';

export function signingKeysOf(doc: ControlDocT, teamId: string, nowS: number): Buffer[] {
  return doc.keys
    .filter(
      (k) =>
        k.team_id === teamId &&
        k.type === 'secret' &&
        k.signing_key !== null &&
        k.revoked_at === null &&
        (k.expires_at === null || k.expires_at > nowS),
    )
    .sort((a, b) => b.created_at - a.created_at)
    .slice(0, MAX_SIGNATURES)
    .map((k) => Buffer.from(k.signing_key!, 'base64'));
}
