// Failed sign-ins back off per (email, address) and per address, never per account alone (D-69).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ADDRESS_FREE_FAILURES,
  backoffLeft,
  MEMBER_FREE_FAILURES,
  MemoryFailureCounts,
  PAIR_FREE_FAILURES,
  passwordChangeRules,
  SESSION_FREE_FAILURES,
  SignInThrottle,
  signInRules,
} from '../src/services/admin/throttle.ts';

function throttle() {
  let now = 1_000_000;
  const t = new SignInThrottle(new MemoryFailureCounts(), () => now);
  const probe = new Error('probe');
  return {
    t,
    advance: (ms: number) => (now += ms),
    /** A wrong password from `address` for `email`. */
    failed: (email: string, address: string) => t.check(signInRules(email, address), async () => false),
    succeeded: (email: string, address: string) => t.check(signInRules(email, address), async () => true),
    /** How long a sign-in would be refused: a check whose verification throws counts nothing (D-165). */
    waitMs: async (email: string, address: string) => {
      try {
        return (await t.check(signInRules(email, address), () => Promise.reject(probe))).wait;
      } catch (err) {
        assert.equal(err, probe);
        return 0;
      }
    },
  };
}

describe('sign-in throttling (D-69)', () => {
  test('a pair backs off after its free failures, doubling; another address for the same email is not slowed', async () => {
    const { advance, failed, waitMs } = throttle();
    for (let i = 0; i < PAIR_FREE_FAILURES - 1; i++) await failed('ada@example.com', '10.0.0.9');
    assert.equal(await waitMs('ada@example.com', '10.0.0.9'), 0);
    await failed('ada@example.com', '10.0.0.9');
    assert.equal(await waitMs('ada@example.com', '10.0.0.9'), 1000);
    advance(1000);
    assert.equal(await waitMs('ada@example.com', '10.0.0.9'), 0);
    await failed('ada@example.com', '10.0.0.9');
    assert.equal(await waitMs('ada@example.com', '10.0.0.9'), 2000);
    // The owner, from elsewhere, is never held back by the attacker's failures.
    assert.equal(await waitMs('ada@example.com', '192.0.2.1'), 0);
    // Another email from the attacker's address: its own pair, under the address's larger allowance.
    assert.equal(await waitMs('bob@example.com', '10.0.0.9'), 0);
  });

  test("a correct password ends its pair's count; failures past the window are forgotten", async () => {
    const { advance, failed, succeeded, waitMs } = throttle();
    for (let i = 0; i < PAIR_FREE_FAILURES; i++) await failed('ada@example.com', '10.0.0.9');
    assert.ok((await waitMs('ada@example.com', '10.0.0.9')) > 0);
    assert.deepEqual(await succeeded('ada@example.com', '10.0.0.9'), { wait: 1000, ok: false }, 'refused while backing off, right or not');
    advance(1000);
    assert.deepEqual(await succeeded('ada@example.com', '10.0.0.9'), { wait: 0, ok: true });
    for (let i = 0; i < PAIR_FREE_FAILURES; i++)
      assert.equal((await failed('ada@example.com', '10.0.0.9')).wait, 0, 'the count began again');
    for (let i = 0; i < PAIR_FREE_FAILURES + 3; i++) await failed('bob@example.com', '10.0.0.9');
    advance(15 * 60_000 + 1);
    assert.equal(await waitMs('bob@example.com', '10.0.0.9'), 0);
  });

  test('an address spraying many emails backs off as a whole', async () => {
    const { failed, waitMs } = throttle();
    for (let i = 0; i < ADDRESS_FREE_FAILURES; i++) await failed(`user${i}@example.com`, '10.0.0.9');
    assert.ok((await waitMs('fresh@example.com', '10.0.0.9')) > 0);
    assert.equal(await waitMs('fresh@example.com', '10.0.0.10'), 0);
  });

  test('the back-off is capped at 15 minutes', () => {
    assert.equal(backoffLeft(Array(PAIR_FREE_FAILURES + 30).fill(1000), PAIR_FREE_FAILURES, 1000), 15 * 60_000);
  });
});

describe('a burst of guesses checks no more passwords than guesses one after another (D-165)', () => {
  /** `n` checks at once of `rules`, each verification held until all have asked; how many ran, and the answers. */
  async function burst(n: number, rules: () => ReturnType<typeof signInRules>, right: (i: number) => boolean) {
    const { t } = throttle();
    let ran = 0;
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        t.check(rules(), async () => {
          ran++;
          await new Promise((r) => setImmediate(r));
          return right(i);
        }),
      ),
    );
    return { ran, answers };
  }

  test('100 sign-ins at once for one email from one address: the pair allows its free failures, the right password last is refused', async () => {
    const { ran, answers } = await burst(
      100,
      () => signInRules('ada@example.com', '10.0.0.9'),
      (i) => i === 99,
    );
    assert.equal(ran, PAIR_FREE_FAILURES);
    assert.deepEqual(answers.at(-1), { wait: 1000, ok: false }, 'refused with its back-off, not checked');
  });

  test('100 sign-ins at once for 100 emails from one address: the address allows its free failures', async () => {
    let i = 0;
    const { ran } = await burst(
      100,
      () => signInRules(`user${i++}@example.com`, '10.0.0.9'),
      () => false,
    );
    assert.equal(ran, ADDRESS_FREE_FAILURES);
  });

  test("20 password changes at once from one session: the session's free failures; a member's sessions together: the member's", async () => {
    const one = await burst(
      20,
      () => passwordChangeRules('mem_1', 'sess_1'),
      (i) => i === 19,
    );
    assert.equal(one.ran, SESSION_FREE_FAILURES);
    assert.equal(one.answers.at(-1)!.ok, false);
    let s = 0;
    const many = await burst(
      20,
      () => passwordChangeRules('mem_1', `sess_${s++}`),
      () => false,
    );
    assert.equal(many.ran, MEMBER_FREE_FAILURES);
  });

  test('a right password takes back its reservation: a burst of right ones all pass and leave no count', async () => {
    const { t } = throttle();
    let ran = 0;
    const answers = await Promise.all(
      Array.from({ length: 3 }, () =>
        t.check(signInRules('ada@example.com', '10.0.0.9'), async () => {
          ran++;
          return true;
        }),
      ),
    );
    assert.deepEqual([ran, answers.every((a) => a.ok)], [3, true]);
    for (let i = 0; i < PAIR_FREE_FAILURES; i++)
      assert.equal((await t.check(signInRules('ada@example.com', '10.0.0.9'), async () => false)).wait, 0);
  });
});
