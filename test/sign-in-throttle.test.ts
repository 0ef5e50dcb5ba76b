// Failed sign-ins back off per (email, address) and per address, never per account alone (D-69).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ADDRESS_FREE_FAILURES, MemoryFailureCounts, PAIR_FREE_FAILURES, SignInThrottle } from '../src/services/admin/throttle.ts';

function throttle() {
  let now = 1_000_000;
  const t = new SignInThrottle(new MemoryFailureCounts(), () => now);
  return { t, advance: (ms: number) => (now += ms) };
}

describe('sign-in throttling (D-69)', () => {
  test('a pair backs off after its free failures, doubling; another address for the same email is not slowed', async () => {
    const { t, advance } = throttle();
    for (let i = 0; i < PAIR_FREE_FAILURES - 1; i++) await t.failed('ada@example.com', '10.0.0.9');
    assert.equal(await t.waitMs('ada@example.com', '10.0.0.9'), 0);
    await t.failed('ada@example.com', '10.0.0.9');
    assert.equal(await t.waitMs('ada@example.com', '10.0.0.9'), 1000);
    advance(1000);
    assert.equal(await t.waitMs('ada@example.com', '10.0.0.9'), 0);
    await t.failed('ada@example.com', '10.0.0.9');
    assert.equal(await t.waitMs('ada@example.com', '10.0.0.9'), 2000);
    // The owner, from elsewhere, is never held back by the attacker's failures.
    assert.equal(await t.waitMs('ada@example.com', '192.0.2.1'), 0);
    // Another email from the attacker's address: its own pair, under the address's larger allowance.
    assert.equal(await t.waitMs('bob@example.com', '10.0.0.9'), 0);
  });

  test("a correct password ends its pair's count; failures past the window are forgotten", async () => {
    const { t, advance } = throttle();
    for (let i = 0; i < PAIR_FREE_FAILURES; i++) await t.failed('ada@example.com', '10.0.0.9');
    assert.ok((await t.waitMs('ada@example.com', '10.0.0.9')) > 0);
    await t.succeeded('ada@example.com', '10.0.0.9');
    assert.equal(await t.waitMs('ada@example.com', '10.0.0.9'), 0);
    for (let i = 0; i < PAIR_FREE_FAILURES + 3; i++) await t.failed('bob@example.com', '10.0.0.9');
    advance(15 * 60_000 + 1);
    assert.equal(await t.waitMs('bob@example.com', '10.0.0.9'), 0);
  });

  test('an address spraying many emails backs off as a whole', async () => {
    const { t } = throttle();
    for (let i = 0; i < ADDRESS_FREE_FAILURES; i++) await t.failed(`user${i}@example.com`, '10.0.0.9');
    assert.ok((await t.waitMs('fresh@example.com', '10.0.0.9')) > 0);
    assert.equal(await t.waitMs('fresh@example.com', '10.0.0.10'), 0);
  });

  test('the back-off is capped at 15 minutes', async () => {
    const { t } = throttle();
    for (let i = 0; i < PAIR_FREE_FAILURES + 30; i++) await t.failed('ada@example.com', '10.0.0.9');
    assert.equal(await t.waitMs('ada@example.com', '10.0.0.9'), 15 * 60_000);
  });
});
