// D-165's bursts, for the file store (test/sign-in-burst.test.ts) and two PostgreSQL instances
// (test/proof/pg-sign-in-burst.test.ts): guesses sent at once, spread over `origins` in turn, the
// passwords checked counted at the hashing pool's seam (D-166), never by timing.
import assert from 'node:assert/strict';
import { hashPool } from '../../src/services/admin/hashing.ts';
import { MEMBER_FREE_FAILURES, PAIR_FREE_FAILURES, SESSION_FREE_FAILURES } from '../../src/services/admin/throttle.ts';
import type { ControlPlane } from '../../src/store/control.ts';
import { adminClient, seedMember } from './admin-client.ts';

/** `n` sign-ins for `email` at once, the last with `password` and the others wrong; the passwords checked and the answers' statuses. */
export async function signInBurst(origins: string[], n: number, email: string, password: string) {
  const before = hashPool.checked;
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      adminClient(origins[i % origins.length]!).call('POST', '/sessions', { email, password: i === n - 1 ? password : `wrong guess ${i}` }),
    ),
  );
  return { checked: hashPool.checked - before, statuses: answers.map((a) => a.status) };
}

/**
 * D-165: 100 sign-ins at once, the right password last: at most the pair's free failures checked, the
 * right one refused 429, no session; then 20 password changes at once with one stolen session, the
 * right current password last: at most the session's free failures checked, the password unchanged
 * and the owner's other session alive.
 */
export async function assertBurstsHold(control: ControlPlane, origins: string[]) {
  const owner = { id: 'mem_burst', team_id: 'team_demo', email: 'burst@demo.example', role: 'admin' as const };
  await seedMember(control, owner, 'the-right-password');
  const signIns = await signInBurst(origins, 100, owner.email, 'the-right-password');
  assert.ok(signIns.checked <= PAIR_FREE_FAILURES, `${signIns.checked} passwords checked`);
  assert.equal(signIns.statuses.filter((s) => s === 200 || s === 401).length, signIns.checked);
  assert.equal(signIns.statuses.at(-1), 429, 'the right password, after the allowed guesses, is not signed in');

  const other = { ...owner, id: 'mem_burst2', email: 'burst2@demo.example' };
  await seedMember(control, other, 'the-right-password');
  const client = adminClient(origins[0]!);
  const stolen = await client.session(other.email, 'the-right-password');
  const owners = await client.session(other.email, 'the-right-password');
  const hash = control.read().members.find((m) => m.id === other.id)!.password_hash;
  const before = hashPool.checked;
  const changes = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      adminClient(origins[i % origins.length]!).call(
        'POST',
        '/password',
        { current_password: i === 19 ? 'the-right-password' : `wrong guess ${i}`, new_password: 'taken-over-password' },
        stolen.headers,
      ),
    ),
  );
  const checked = hashPool.checked - before;
  assert.ok(checked <= SESSION_FREE_FAILURES && SESSION_FREE_FAILURES <= MEMBER_FREE_FAILURES, `${checked} passwords checked`);
  assert.equal(changes.at(-1)!.status, 429, JSON.stringify(changes.at(-1)!.body));
  assert.equal(control.read().members.find((m) => m.id === other.id)!.password_hash, hash, 'the password is unchanged');
  assert.equal((await client.call('GET', '/session', undefined, owners.headers)).status, 200, "the owner's session lives");
}
