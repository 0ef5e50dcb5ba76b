// D-150: the secret key an endpoint (or a live listener) is signed with, chosen when it is registered,
// and what happens when that key stops signing: the endpoint is disabled with `signing_key`, audited
// with the service as actor, rather than sent unsigned or under a key its receiver does not hold.
import type { ControlDocT } from '../../core/control.ts';
import type { AdminCaller } from '../../core/callers.ts';
import { invalidRequest } from '../../core/api-errors.ts';
import { defaultSigningKey, signingKeyState, signsNow } from '../../core/endpoint-signing.ts';
import type { KeyT } from '../../core/tenants.ts';
import type { WebhookEndpointT } from '../../core/webhook-endpoint.ts';
import { type AuditDraft, bySystem } from '../../store/control.ts';
import { teamRecord } from '../admin/team.ts';

/**
 * The key named by `keyId` (another team's or an unknown one is 404, D-65; one that cannot sign is 400),
 * or D-150's default when none is named (400 when the team has no secret key that signs).
 */
export function chosenSigningKey(doc: ControlDocT, c: Pick<AdminCaller, 'team_id'>, keyId: string | undefined, nowS: number): KeyT {
  if (keyId === undefined) {
    const k = defaultSigningKey(doc.keys, c.team_id, nowS);
    if (!k) throw invalidRequest('The team has no secret key that can sign webhooks: create one first.', 'signing_key_id', 'invalid_value');
    return k;
  }
  const k = teamRecord(doc.keys, c, keyId, { what: 'API key', param: 'signing_key_id' });
  if (!signsNow(k, nowS)) {
    const why = k.type !== 'secret' ? 'is not a secret key' : k.signing_key === null ? 'has no signing secret' : 'no longer works';
    throw invalidRequest(`Key ${keyId} ${why}: name a working secret key of the team.`, 'signing_key_id', 'invalid_value');
  }
  return k;
}

/**
 * Disables each enabled endpoint of `teamId` whose signing key no longer signs at `nowS` (revoked,
 * expired, or a rolled key past its grace), in `draft`; answers the audit entries of the change.
 */
export function disableUnsigned(draft: ControlDocT, teamId: string, nowS: number): AuditDraft[] {
  const entries: AuditDraft[] = [];
  for (const e of draft.webhook_endpoints) {
    if (e.team_id !== teamId || !e.enabled) continue;
    const state = signingKeyState(draft.keys, e.team_id, e.signing_key_id, nowS);
    if (state === 'active' || state === 'rolled') continue;
    entries.push(disabledBySystem(e, 'signing_key', nowS, { signing_key_state: [null, state] }));
  }
  return entries;
}

/** D-86, D-150: disables `e` (in a draft) for `reason`; answers the audit entry, the service its actor. */
export function disabledBySystem(
  e: WebhookEndpointT,
  reason: NonNullable<WebhookEndpointT['disabled_reason']>,
  nowS: number,
  more: AuditDraft['changes'] = {},
): AuditDraft {
  e.enabled = false;
  e.disabled_reason = reason;
  e.updated_at = nowS;
  const changes = { enabled: [true, false], disabled_reason: [null, reason], ...more } as AuditDraft['changes'];
  return bySystem(e.team_id, 'webhook_endpoint.disabled', { type: 'webhook_endpoint', id: e.id }, changes);
}
