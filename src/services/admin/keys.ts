// A team's API keys on the admin surface (docs/control-plane.md, D-70): list, create (the key shown
// once), roll (a new key at once, the old one until its grace period ends) and revoke (refused at once).
// Keys are kept as their SHA-256; a new secret key keeps its webhook signing secret from creation.
import { KEY_LIFETIME_S, listPage, type PageQueryT } from '../../contract/admin.ts';
import { newSecret, redacted, sha256Hex, webhookSigningKey } from '../../core/api-keys.ts';
import { newId } from '../../core/ids.ts';
import type { KeyT } from '../../core/tenants.ts';
import type { AdminCaller } from '../../core/callers.ts';
import type { AuditDraft, ControlPlane } from '../../store/control.ts';
import { actorOf, auditOf, type Origin } from './accounts.ts';
import { type TeamCaps, checkCap } from './caps.ts';
import { pageOf, teamRecord } from './team.ts';
import { disableUnsigned } from '../webhooks/signing-keys.ts';
import type { ScriptT } from '../../contract/scenarios.ts';

/** D-75: a new key's entry names it (its name and type), the key itself by its redacted form only. */
const created = (k: KeyT) => ({ name: [null, k.name], type: [null, k.type], redacted: [null, k.redacted] }) satisfies AuditDraft['changes'];

/** D-70: a rolled key keeps working this long unless told otherwise. */
export const DEFAULT_ROLL_GRACE_S = 86_400;

/**
 * D-174: the lifetime a successor inherits: its predecessor's, from creation to expiry (a rolled key's
 * is its successor's, since its own expiry became the grace's end); null for a key that never expires.
 */
function lifetimeOf(k: KeyT): number | null {
  if (k.expires_at === null) return null;
  return Math.min(KEY_LIFETIME_S.max, Math.max(KEY_LIFETIME_S.min, k.expires_at - k.created_at));
}

export function keyView(k: KeyT, lastUsed: number | null) {
  return {
    id: k.id,
    object: 'api_key' as const,
    type: k.type,
    name: k.name,
    redacted: k.redacted ?? '(set in the fixtures)',
    created_at: k.created_at,
    created_by: k.created_by,
    last_used_at: lastUsed,
    expires_at: k.expires_at,
    revoked_at: k.revoked_at,
    rolled_to: k.rolled_to,
  };
}

export class KeyService {
  constructor(
    private readonly control: ControlPlane,
    private readonly caps: TeamCaps,
    private readonly now: () => number = Date.now,
  ) {}

  /** D-173: a page of the team's keys, revoked ones too, in the order they were made. */
  async list(c: AdminCaller, q: PageQueryT) {
    const page = pageOf(
      this.control.read().keys.filter((k) => k.team_id === c.team_id),
      q,
    );
    const used = await this.control.keyUse.lastUsed(page.data.map((k) => k.id));
    return listPage(
      page.data.map((k) => keyView(k, used.get(k.id) ?? null)),
      page.has_more,
    );
  }

  private make(c: AdminCaller, type: KeyT['type'], name: string, expiresAt: number | null): { key: KeyT; text: string } {
    const text = newSecret(type === 'secret' ? 'sk_live_' : 'pk_live_');
    const key: KeyT = {
      id: newId('key'),
      team_id: c.team_id,
      type,
      sha256: sha256Hex(text),
      name,
      redacted: redacted(text),
      created_at: Math.floor(this.now() / 1000),
      created_by: actorOf(c),
      expires_at: expiresAt,
      revoked_at: null,
      rolled_to: null,
      // D-70: derivable only while the whole key is known, that is now.
      signing_key: type === 'secret' ? webhookSigningKey(text).toString('base64') : null,
      scenario: null,
    };
    return { key, text };
  }

  async create(c: AdminCaller, req: { type: KeyT['type']; name: string; expires_in_seconds?: number }, origin: Origin) {
    const now = Math.floor(this.now() / 1000);
    const { key, text } = this.make(c, req.type, req.name, req.expires_in_seconds ? now + req.expires_in_seconds : null);
    await this.control.apply((d) => {
      checkCap(d, this.caps, 'keys', c.team_id, now);
      d.keys.push(key);
      return [auditOf(origin, c.team_id, 'key.created', actorOf(c), { type: 'api_key', id: key.id }, created(key))];
    });
    return { ...keyView(key, null), key: text };
  }

  /** A key of the caller's team that is not revoked, or 404 (another team's key too, D-65). */
  private own(keys: KeyT[], c: AdminCaller, id: string): KeyT {
    return teamRecord(keys, c, id, { what: 'API key', param: 'key_id' }, (k) => k.revoked_at === null);
  }

  async roll(c: AdminCaller, id: string, graceSeconds: number | undefined, origin: Origin) {
    const now = Math.floor(this.now() / 1000);
    const grace = graceSeconds ?? DEFAULT_ROLL_GRACE_S;
    let made: { key: KeyT; text: string } | undefined;
    await this.control.apply((d) => {
      const old = this.own(d.keys, c, id);
      const lifetime = lifetimeOf(old.rolled_to === null ? old : (d.keys.find((k) => k.id === old.rolled_to) ?? old));
      made = this.make(c, old.type, old.name, lifetime === null ? null : now + lifetime);
      const until = now + grace;
      const before = old.expires_at;
      old.expires_at = old.expires_at === null ? until : Math.min(old.expires_at, until);
      old.rolled_to = made.key.id;
      d.keys.push(made.key);
      return [
        auditOf(
          origin,
          c.team_id,
          'key.rolled',
          actorOf(c),
          { type: 'api_key', id },
          { expires_at: [before, old.expires_at], rolled_to: [null, made.key.id] },
        ),
        auditOf(origin, c.team_id, 'key.created', actorOf(c), { type: 'api_key', id: made.key.id }, created(made.key)),
        // D-150: a roll without grace ends the old key's signing at once.
        ...disableUnsigned(d, c.team_id, now),
      ];
    });
    return { ...keyView(made!.key, null), key: made!.text };
  }

  async revoke(c: AdminCaller, id: string, origin: Origin) {
    const doc = await this.control.apply((d) => {
      const k = this.own(d.keys, c, id);
      k.revoked_at = Math.floor(this.now() / 1000);
      return [
        auditOf(origin, c.team_id, 'key.revoked', actorOf(c), { type: 'api_key', id }, { revoked_at: [null, k.revoked_at] }),
        // D-150: the endpoints signed with it stop in the same change, and say so.
        ...disableUnsigned(d, c.team_id, k.revoked_at),
      ];
    });
    return keyView(doc.keys.find((k) => k.id === id)!, null);
  }

  /**
   * D-127: every request made with the key follows `script` (steps inline), its id the test id; set
   * again, its run begins anew. `null` removes it (its run stays readable for its hour).
   */
  async setScenario(c: AdminCaller, id: string, script: ScriptT | null, origin: Origin) {
    await this.control.apply((d) => {
      const k = this.own(d.keys, c, id);
      const before = k.scenario?.script ?? null;
      k.scenario = script && { script, set_at: this.now() };
      const action = script ? 'key.scenario_set' : 'key.scenario_cleared';
      return [auditOf(origin, c.team_id, action, actorOf(c), { type: 'api_key', id }, { scenario: [before, script] })];
    });
    return { object: 'key_scenario' as const, key_id: id, script };
  }
}
