// A small client of the admin surface (/admin/v1) for tests: JSON in and out, a member signed in to a
// personal access token, and a member added straight into the control plane.
import assert from 'node:assert/strict';
import type { MemberT } from '../../src/core/control.ts';
import { hashPassword } from '../../src/services/admin/passwords.ts';
import type { ControlPlane } from '../../src/store/control.ts';
import { draft } from './control-suite.ts';
import { TEST_HASH_COST } from './helpers.ts';

export interface AdminAnswer {
  status: number;
  body: any;
  headers: Headers;
}

export { DEMO_ADMIN } from './admin-token.ts';
export { TEST_HASH_COST } from './helpers.ts';

export function adminClient(origin: string) {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<AdminAnswer> => {
    const res = await fetch(`${origin}/admin/v1${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };
  /** Signs in: the session's cookie and CSRF token. */
  const session = async (email: string, password: string) => {
    const s = await call('POST', '/sessions', { email, password });
    assert.equal(s.status, 200, JSON.stringify(s.body));
    const cookie = s.headers.get('set-cookie')!.split(';')[0]!;
    return { cookie, csrf: s.body.csrf_token as string, headers: { cookie, 'x-csrf-token': s.body.csrf_token as string } };
  };
  /** Signs in and returns a personal access token of the member. */
  const token = async (email: string, password: string) => {
    const s = await session(email, password);
    const t = await call('POST', '/tokens', { name: 'tests' }, s.headers);
    assert.equal(t.status, 200, JSON.stringify(t.body));
    return t.body.token as string;
  };
  return { call, session, token };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Puts a member with a password straight into the control plane (as the fixtures would). */
export async function seedMember(control: ControlPlane, m: Pick<MemberT, 'id' | 'team_id' | 'email' | 'role'>, password: string) {
  const hash = await hashPassword(password, TEST_HASH_COST);
  await control.apply((d) => {
    d.members.push({ ...m, name: null, created_at: 0, password_hash: hash, invite: null, last_sign_in_at: null });
    return [draft(m.team_id, 'member.added', { target: { type: 'member', id: m.id } })];
  });
}
