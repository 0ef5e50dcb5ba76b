// Who may use the admin surface (docs/control-plane.md, D-65…D-69): members sign in with a password
// for a session cookie (the dashboard) or use a personal access token (the CLI, scripts). Sessions and
// tokens are kept only as their SHA-256; a password is checked only after the sign-in throttle allows it.
import { createHash, timingSafeEqual } from 'node:crypto';
import { emailKey, listPage, type PageQueryT } from '../../contract/admin.ts';
import type { AuditAction } from '../../contract/audit-actions.ts';
import { checkFormat, newSecret, redacted, sha256Hex } from '../../core/api-keys.ts';
import { type AccessTokenRecordT, type ControlDocT, costOf, type MemberT } from '../../core/control.ts';
import { newId } from '../../core/ids.ts';
import type { AdminCaller } from '../../core/callers.ts';
import { apiError } from '../../core/api-errors.ts';
import { type AuditDraft, type ControlPlane, SESSION_IDLE_MS, SESSION_MAX_AGE_MS, sessionSecret } from '../../store/control.ts';
import { hashPool } from './hashing.ts';
import { type TeamCaps, checkCap } from './caps.ts';
import { pageOf, teamRecord } from './team.ts';
import { SignInThrottle, signInRules } from './throttle.ts';

/** Where a request came from, for the audit log (D-75) and the throttle (D-69). */
export interface Origin {
  address: string;
  user_agent: string | null;
  request_id: string;
}

const SESSION_TOUCH_MS = 60_000;

export function memberView(m: MemberT) {
  return {
    id: m.id,
    object: 'member' as const,
    email: m.email,
    name: m.name,
    role: m.role,
    created_at: m.created_at,
    password_set: m.password_hash !== null,
    last_sign_in_at: m.last_sign_in_at,
  };
}

export function tokenView(t: AccessTokenRecordT, lastUsed: number | null) {
  return {
    id: t.id,
    object: 'access_token' as const,
    name: t.name,
    redacted: t.redacted,
    created_at: t.created_at,
    expires_at: t.expires_at,
    last_used_at: lastUsed,
  };
}

/** An audit entry of `caller` (or of nobody proven, a failed sign-in) from `origin`. */
export function auditOf(
  origin: Origin,
  team: string | null,
  action: AuditAction,
  actor: { id: string; email: string } | null,
  target: AuditDraft['target'],
  changes: AuditDraft['changes'] = {},
): AuditDraft {
  return {
    team_id: team,
    action,
    // D-75: no actor is nobody proven (a failed sign-in): the entry's address says where it came from.
    actor: actor ? { type: 'member', id: actor.id, email: actor.email } : { type: 'anonymous', id: null, email: null },
    address: origin.address,
    user_agent: origin.user_agent,
    request_id: origin.request_id,
    target,
    changes,
  };
}

export const actorOf = (c: AdminCaller) => ({ id: c.member_id, email: c.email });

export class AccountService {
  private readonly throttle: SignInThrottle;

  constructor(
    private readonly control: ControlPlane,
    /** D-66: log2 of scrypt's N for the dummy work of an unknown email (tests lower it). */
    private readonly hashCost: number,
    private readonly caps: TeamCaps,
    private readonly now: () => number = Date.now,
  ) {
    this.throttle = new SignInThrottle(control.signInFailures, now);
  }

  /** D-67, D-69: a new session for a right password, or 401 (the same words for an unknown email) or 429. */
  async signIn(email: string, password: string, origin: Origin) {
    const members = this.control.read().members;
    const member = accountOf(members, email);
    // D-165: the failure is counted before the password is checked; D-166: the check waits in the hashing pool.
    const checked = await this.throttle.check(signInRules(email, origin.address), () =>
      hashPool.verify(password, member?.password_hash ?? null, nobodyCost(members, email) ?? this.hashCost),
    );
    if (checked.wait > 0) throw throttled(checked.wait, 'Too many failed sign-ins from this address');
    if (!checked.ok || !member) {
      await this.control.audit.append([
        auditOf(origin, member?.team_id ?? null, 'session.failed', null, member ? { type: 'member', id: member.id } : null),
      ]);
      throw apiError('invalid_admin_credential', 'Wrong email or password.');
    }
    // D-66: a hash of another cost is made again at the configured one, so that stored costs follow it.
    const rehash = costOf(member.password_hash!) === this.hashCost ? null : await hashPool.hash(password, this.hashCost);
    const cookie = sessionSecret();
    const now = this.now();
    const session = {
      id: sha256Hex(cookie),
      member_id: member.id,
      team_id: member.team_id,
      csrf_token: sessionSecret(),
      created_at: now,
      seen_at: now,
    };
    await this.control.sessions.create(session);
    await this.control.apply((d) => {
      const m = d.members.find((x) => x.id === member.id);
      if (m) m.last_sign_in_at = Math.floor(now / 1000);
      // Only over the hash just checked: a password changed meanwhile stays.
      if (m && rehash !== null && m.password_hash === member.password_hash) m.password_hash = rehash;
      return [
        auditOf(origin, member.team_id, 'session.created', { id: member.id, email: member.email }, { type: 'member', id: member.id }),
      ];
    });
    return { cookie, session, member: this.control.read().members.find((m) => m.id === member.id)! };
  }

  /**
   * D-65: the caller of an admin request: a Bearer personal access token, or the session cookie (whose
   * non-GET requests must carry its CSRF token, D-67). An API key is refused with words saying so.
   */
  async caller(
    authorization: string | undefined,
    cookieHeader: string | undefined,
    method: string,
    csrf: string | undefined,
  ): Promise<AdminCaller> {
    const bearer = /^Bearer +(\S+) *$/i.exec(authorization ?? '')?.[1];
    if (bearer !== undefined) return this.byToken(bearer);
    const cookies = [...(cookieHeader ?? '').matchAll(/(?:^|;)\s*parley_session=([^;]*)/g)].map((m) => m[1]!.trim());
    // D-171: two session cookies (one planted by a sibling subdomain, say) are refused, not resolved by order.
    if (cookies.length > 1)
      throw apiError('invalid_admin_credential', 'The request carries several parley_session cookies: clear them and sign in again.');
    const cookie = cookies.find((c) => /^[A-Za-z0-9_-]+$/.test(c));
    if (cookie === undefined)
      throw apiError(
        'invalid_admin_credential',
        'Sign in first: send the session cookie, or Authorization: Bearer <personal access token>.',
      );
    const id = sha256Hex(cookie);
    const s = await this.control.sessions.get(id);
    const now = this.now();
    if (!s || s.created_at + SESSION_MAX_AGE_MS <= now || s.seen_at + SESSION_IDLE_MS <= now)
      throw apiError('invalid_admin_credential', 'The session has ended: sign in again.');
    const member = this.control.read().members.find((m) => m.id === s.member_id);
    if (!member) throw apiError('invalid_admin_credential', 'The session has ended: sign in again.');
    if (method !== 'GET' && method !== 'HEAD' && !sameSecret(csrf ?? '', s.csrf_token))
      throw apiError('csrf_failed', 'Send the X-CSRF-Token header with the token of your session (GET /admin/v1/session gives it).', {
        param: 'X-CSRF-Token',
      });
    // D-67: the idle expiry is renewed at most once a minute.
    if (now - s.seen_at >= SESSION_TOUCH_MS) await this.control.sessions.touch(id, now);
    return { member_id: member.id, team_id: member.team_id, email: member.email, role: member.role, session_id: id, token_id: null };
  }

  private byToken(text: string): AdminCaller {
    if (text.startsWith('sk_live_') || text.startsWith('pk_live_'))
      throw apiError(
        'invalid_admin_credential',
        'API keys do not work on the admin surface: sign in, or use a personal access token (pat_…).',
      );
    if (checkFormat(text) === 'mistyped')
      throw apiError('invalid_admin_credential', 'Invalid access token: its checksum (the last 6 characters) does not match.');
    const hash = sha256Hex(text);
    const doc = this.control.read();
    const token = doc.tokens.find((t) => sameSecret(t.sha256, hash));
    const now = this.now();
    if (!token || token.revoked_at !== null || token.expires_at * 1000 <= now)
      throw apiError('invalid_admin_credential', 'Invalid, revoked or expired access token.');
    const member = doc.members.find((m) => m.id === token.member_id);
    if (!member) throw apiError('invalid_admin_credential', 'Invalid, revoked or expired access token.');
    this.control.keyUse.record(token.id, now);
    return { member_id: member.id, team_id: member.team_id, email: member.email, role: member.role, session_id: null, token_id: token.id };
  }

  csrfOf(sessionId: string) {
    return this.control.sessions.get(sessionId);
  }

  /** D-67: the answer of a sign-in and of `GET /session`: the member, their team and the session's CSRF token. */
  session(c: Pick<AdminCaller, 'member_id' | 'team_id'>, csrf: string, expiresAtMs: number) {
    const doc = this.control.read();
    return {
      object: 'session',
      member: memberView(doc.members.find((m) => m.id === c.member_id)!),
      team: this.team(doc, c.team_id),
      csrf_token: csrf,
      expires_at: Math.floor(expiresAtMs / 1000),
    };
  }

  async signOut(c: AdminCaller, origin: Origin): Promise<void> {
    if (c.session_id) await this.control.sessions.end(c.session_id);
    await this.control.audit.append([auditOf(origin, c.team_id, 'session.ended', actorOf(c), { type: 'member', id: c.member_id })]);
  }

  /** D-68: a new token, shown once. */
  async createToken(c: AdminCaller, name: string, days: number, origin: Origin) {
    const text = newSecret('pat_');
    const now = Math.floor(this.now() / 1000);
    const t: AccessTokenRecordT = {
      id: newId('token'),
      member_id: c.member_id,
      team_id: c.team_id,
      name,
      sha256: sha256Hex(text),
      redacted: redacted(text),
      created_at: now,
      expires_at: now + days * 86_400,
      revoked_at: null,
    };
    await this.control.apply((d) => {
      checkCap(d, this.caps, 'tokens', c.team_id, now);
      d.tokens.push(t);
      return [auditOf(origin, c.team_id, 'token.created', actorOf(c), { type: 'access_token', id: t.id }, { name: [null, name] })];
    });
    return { ...tokenView(t, null), token: text };
  }

  /** D-173: a page of a member's own tokens, not revoked, in the order they were made. */
  async listTokens(c: AdminCaller, q: PageQueryT) {
    const mine = this.control.read().tokens.filter((t) => t.member_id === c.member_id);
    const page = pageOf(mine, q, (t) => t.revoked_at === null);
    const used = await this.control.keyUse.lastUsed(page.data.map((t) => t.id));
    return listPage(
      page.data.map((t) => tokenView(t, used.get(t.id) ?? null)),
      page.has_more,
    );
  }

  async revokeToken(c: AdminCaller, id: string, origin: Origin): Promise<void> {
    await this.control.apply((d) => {
      // A token is its member's own: another member's (of the team too) is 404 as another team's is.
      const t = teamRecord(
        d.tokens,
        c,
        id,
        { what: 'Access token', param: 'token_id' },
        (x) => x.member_id === c.member_id && x.revoked_at === null,
      );
      t.revoked_at = Math.floor(this.now() / 1000);
      return [auditOf(origin, c.team_id, 'token.revoked', actorOf(c), { type: 'access_token', id })];
    });
  }

  team(doc: ControlDocT, id: string) {
    const t = doc.teams.find((x) => x.id === id)!;
    return { id: t.id, object: 'team' as const, name: t.name };
  }
}

/**
 * D-172: the member who signs in with `email` (an `emailKey`): of the members with that email (one a
 * team), the oldest with a password; else the first, whose failure the audit names.
 */
export function accountOf(members: readonly MemberT[], email: string): MemberT | undefined {
  const all = members.filter((m) => emailKey(m.email) === email);
  return all.find((m) => m.password_hash !== null) ?? all[0];
}

/**
 * D-66: the cost at which an email without an account is checked: that of a stored hash, chosen by
 * the email (the same email always costs the same, as an account does), so that the time of the answer
 * is one an account's could be whatever costs the stored hashes have; undefined when none is stored.
 */
export function nobodyCost(members: readonly MemberT[], email: string): number | undefined {
  const hashes = members.flatMap((m) => (m.password_hash === null ? [] : [m.password_hash]));
  if (hashes.length === 0) return undefined;
  return costOf(hashes[createHash('sha256').update(email).digest().readUInt32BE(0) % hashes.length]!);
}

/** D-69: the 429 of a check refused for `waitMs`, its Retry-After in whole seconds. */
export function throttled(waitMs: number, what: string) {
  const seconds = Math.ceil(waitMs / 1000);
  return apiError('sign_in_throttled', `${what}: try again in ${seconds} s.`, { headers: { 'retry-after': String(seconds) } });
}

/** Constant-time equality of two strings (a different length is unequal at once: lengths are not secret here). */
function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
