// A team's members on the admin surface (docs/control-plane.md, D-72, D-66, D-67): list, add (with a
// password, or with a one-time set-password link), change a role, remove; the last admin of a team
// cannot be removed or demoted; an invited member sets a password with the link's token; a signed-in
// member changes their own password. Removing a member ends their sessions and tokens at once.
import { type AdminMemberAddedT, emailKey } from '../../contract/admin.ts';
import { sha256Hex } from '../../core/api-keys.ts';
import type { ControlDocT, MemberT } from '../../core/control.ts';
import { newId } from '../../core/ids.ts';
import type { AdminCaller } from '../../core/callers.ts';
import { apiError, invalidRequest } from '../../core/api-errors.ts';
import { type ControlPlane, sessionSecret } from '../../store/control.ts';
import { actorOf, auditOf, memberView, type Origin, throttled } from './accounts.ts';
import { hashPool } from './hashing.ts';
import { type TeamCaps, checkCap } from './caps.ts';
import { teamRecord } from './team.ts';
import { passwordChangeRules, SignInThrottle } from './throttle.ts';

/** D-72: a set-password link works this long, once. */
export const INVITE_TTL_S = 7 * 86_400;
export const INVITE_ACCEPT_PATH = '/admin/v1/invites/accept';
/**
 * D-72, D-98: the dashboard's set-password page; the token follows in the fragment, which no request
 * carries (the page takes it out of the URL as soon as it has read it).
 */
export const INVITE_PAGE_PATH = '/dashboard#/invite/';

export interface MemberServiceOptions {
  /** D-66: log2 of scrypt's N for new hashes. */
  hashCost: number;
  /** D-173 */
  caps: TeamCaps;
  /** D-72: an invitation's link opens the dashboard (served, D-95), else names the admin route. */
  dashboard?: boolean;
  now?: () => number;
}

export class MemberService {
  private readonly throttle: SignInThrottle;
  private readonly now: () => number;

  constructor(
    private readonly control: ControlPlane,
    private readonly o: MemberServiceOptions,
  ) {
    this.now = o.now ?? Date.now;
    this.throttle = new SignInThrottle(control.signInFailures, this.now);
  }

  list(c: AdminCaller) {
    return this.control
      .read()
      .members.filter((m) => m.team_id === c.team_id)
      .map(memberView);
  }

  /** D-72: a new member of the caller's team; without a password, with a set-password link shown once. */
  async add(
    c: AdminCaller,
    req: { email: string; role: MemberT['role']; name?: string; password?: string },
    publicBase: string,
    origin: Origin,
  ): Promise<AdminMemberAddedT> {
    const nowS = Math.floor(this.now() / 1000);
    const hash = req.password === undefined ? null : await hashPool.hash(req.password, this.o.hashCost);
    const token = hash === null ? sessionSecret() : null;
    const member: MemberT = {
      id: newId('member'),
      team_id: c.team_id,
      email: req.email,
      name: req.name ?? null,
      role: req.role,
      created_at: nowS,
      password_hash: hash,
      invite: token === null ? null : { sha256: sha256Hex(token), expires_at: nowS + INVITE_TTL_S },
      last_sign_in_at: null,
    };
    await this.control.apply((d) => {
      // D-172: only the caller's own team is looked at; whether another team has the email is never said.
      if (d.members.some((m) => m.team_id === c.team_id && emailKey(m.email) === member.email))
        throw apiError('email_taken', `${member.email} is a member of this team already.`, { param: 'email' });
      checkCap(d, this.o.caps, 'members', c.team_id, nowS);
      d.members.push(member);
      return [
        auditOf(
          origin,
          c.team_id,
          'member.added',
          actorOf(c),
          { type: 'member', id: member.id },
          { email: [null, member.email], role: [null, member.role], name: [null, member.name], invited: [null, token !== null] },
        ),
      ];
    });
    return { ...memberView(member), invite: token === null ? null : this.inviteOf(token, member, publicBase) };
  }

  /** D-72: a new set-password link for a member who has not set a password (the old link stops working). */
  async reinvite(c: AdminCaller, id: string, publicBase: string, origin: Origin): Promise<AdminMemberAddedT> {
    const token = sessionSecret();
    const doc = await this.control.apply((d) => {
      const m = this.own(d, c, id);
      if (m.password_hash !== null)
        throw invalidRequest('This member has set a password already; they change it themselves.', 'member_id', 'invalid_value');
      m.invite = { sha256: sha256Hex(token), expires_at: Math.floor(this.now() / 1000) + INVITE_TTL_S };
      return [auditOf(origin, c.team_id, 'member.invited', actorOf(c), { type: 'member', id })];
    });
    const member = doc.members.find((m) => m.id === id)!;
    return { ...memberView(member), invite: this.inviteOf(token, member, publicBase) };
  }

  private inviteOf(token: string, m: MemberT, publicBase: string) {
    const accept_url = this.o.dashboard ? publicBase + INVITE_PAGE_PATH + token : publicBase + INVITE_ACCEPT_PATH;
    return { token, accept_url, expires_at: m.invite!.expires_at };
  }

  /**
   * D-72: sets the password of the member whose link `token` is, once; the link then stops working. An
   * unknown token costs no hash (this route takes no credential); the token is looked up again in the change.
   */
  async acceptInvite(token: string, password: string, origin: Origin) {
    const digest = sha256Hex(token);
    const invited = (d: ControlDocT): MemberT => {
      const m = d.members.find((x) => x.invite?.sha256 === digest);
      if (!m || m.invite!.expires_at * 1000 <= this.now())
        throw invalidRequest(
          'This set-password link is unknown, used or expired: ask an admin of your team for a new one.',
          'token',
          'invalid_value',
        );
      // D-172: the one who holds the link holds the email, and may learn that it has an account.
      if (d.members.some((x) => x.id !== m.id && x.password_hash !== null && emailKey(x.email) === emailKey(m.email)))
        throw apiError('email_taken', `${m.email} has an account already: sign in with it, or ask for an invitation to another email.`, {
          param: 'token',
        });
      return m;
    };
    const id = invited(this.control.read()).id;
    const hash = await hashPool.hash(password, this.o.hashCost);
    const doc = await this.control.apply((d) => {
      const m = invited(d);
      m.password_hash = hash;
      m.invite = null;
      return [auditOf(origin, m.team_id, 'member.password_set', { id: m.id, email: m.email }, { type: 'member', id: m.id })];
    });
    return memberView(doc.members.find((m) => m.id === id)!);
  }

  /** D-72: a new role; the team's last admin stays one (409 last_admin). */
  async setRole(c: AdminCaller, id: string, role: MemberT['role'], origin: Origin) {
    const current = this.own(this.control.read(), c, id);
    if (current.role === role) return memberView(current);
    const doc = await this.control.apply((d) => {
      const m = this.own(d, c, id);
      const before = m.role;
      if (before === 'admin' && role !== 'admin') this.keepAnAdmin(d, m, 'demoted');
      m.role = role;
      return before === role
        ? []
        : [auditOf(origin, c.team_id, 'member.updated', actorOf(c), { type: 'member', id }, { role: [before, role] })];
    });
    return memberView(doc.members.find((m) => m.id === id)!);
  }

  /** D-72: removes a member with their personal access tokens, then ends their sessions. */
  async remove(c: AdminCaller, id: string, origin: Origin) {
    await this.control.apply((d) => {
      const m = this.own(d, c, id);
      if (m.role === 'admin') this.keepAnAdmin(d, m, 'removed');
      const tokens = d.tokens.filter((t) => t.member_id === id).length;
      d.members = d.members.filter((x) => x.id !== id);
      d.tokens = d.tokens.filter((t) => t.member_id !== id);
      return [
        auditOf(
          origin,
          c.team_id,
          'member.removed',
          actorOf(c),
          { type: 'member', id },
          { email: [m.email, null], role: [m.role, null], access_tokens: [tokens, 0] },
        ),
      ];
    });
    // The document no longer knows the member, so their sessions are refused already (accounts.ts); this forgets them.
    await this.control.sessions.endMember(id);
    return { id, object: 'member' as const, deleted: true };
  }

  /**
   * D-67, D-165: the caller's own password, given the current one (checked behind its own throttle);
   * every other session of the member ends. Personal access tokens stay (each is revoked on its own).
   */
  async changePassword(c: AdminCaller, current: string, next: string, origin: Origin) {
    const member = this.control.read().members.find((m) => m.id === c.member_id);
    // D-165: counted per session (or token) and per member before the current password is checked.
    const rules = passwordChangeRules(c.member_id, c.session_id ?? c.token_id ?? c.member_id);
    const checked = await this.throttle.check(rules, async () =>
      member?.password_hash ? hashPool.verify(current, member.password_hash, this.o.hashCost) : false,
    );
    if (checked.wait > 0) throw throttled(checked.wait, 'Too many wrong passwords');
    if (!checked.ok) throw invalidRequest('The current password is wrong.', 'current_password', 'invalid_value');
    const hash = await hashPool.hash(next, this.o.hashCost);
    await this.control.apply((d) => {
      const m = d.members.find((x) => x.id === c.member_id);
      if (!m) throw apiError('invalid_admin_credential', 'The session has ended: sign in again.');
      m.password_hash = hash;
      return [auditOf(origin, c.team_id, 'member.password_changed', actorOf(c), { type: 'member', id: c.member_id })];
    });
    await this.control.sessions.endMember(c.member_id, c.session_id ?? undefined);
    return memberView(this.control.read().members.find((m) => m.id === c.member_id)!);
  }

  /** A member of the caller's team, or 404 (another team's too: D-65). */
  private own(d: ControlDocT, c: AdminCaller, id: string): MemberT {
    return teamRecord(d.members, c, id, { what: 'Member', param: 'member_id' });
  }

  /** D-72: 409 when `m` is its team's only admin. */
  private keepAnAdmin(d: ControlDocT, m: MemberT, what: 'removed' | 'demoted'): void {
    if (!d.members.some((x) => x.team_id === m.team_id && x.role === 'admin' && x.id !== m.id))
      throw apiError('last_admin', `${m.email} is the team's last admin and cannot be ${what}: make another member an admin first.`, {
        param: 'member_id',
      });
  }
}
