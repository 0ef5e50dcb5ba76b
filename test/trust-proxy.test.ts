// D-168: `--trust-proxy` holds wherever an address is used, through the call's one address (D-92's rule,
// src/http/client-address.ts): the sign-in throttle's keys and the audit's recorded address take the
// forwarded client behind a trusted proxy, and the socket's address when the proxy is not trusted.
// (The widget's per-address limits take the same address: test/proof/widget-starve.test.ts.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PAIR_FREE_FAILURES } from '../src/services/admin/throttle.ts';
import { adminClient, bearer, DEMO_ADMIN } from './support/admin-client.ts';
import { startTestServer, type TestServer } from './support/helpers.ts';

let trusting: TestServer;
let plain: TestServer;
before(async () => {
  // Tests reach the server from 127.0.0.1: trusting it makes the test client a proxy. The throttle's
  // clock stands still, so that a back-off of a second cannot run out on a busy machine mid-test.
  const now = Date.now();
  const adminClock = () => now;
  [trusting, plain] = await Promise.all([
    startTestServer({ passwordHashCost: 10, trustProxy: '127.0.0.1/32', adminClock }),
    startTestServer({ passwordHashCost: 10, adminClock }),
  ]);
});
after(() => Promise.all([trusting?.close(), plain?.close()]));

const forwardedFor = (address: string) => ({ 'x-forwarded-for': address });

/** Fails `PAIR_FREE_FAILURES` sign-ins of `email` forwarded for `address`, then tries once more. */
async function lockPair(server: TestServer, email: string, address: string) {
  const admin = adminClient(new URL(server.baseUrl).origin);
  for (let i = 0; i < PAIR_FREE_FAILURES; i++) {
    const r = await admin.call('POST', '/sessions', { email, password: 'wrong guess' }, forwardedFor(address));
    assert.equal(r.status, 401, JSON.stringify(r.body));
  }
  return (from: string) => admin.call('POST', '/sessions', { email, password: 'wrong guess' }, forwardedFor(from));
}

describe('--trust-proxy: every use of the address (D-168)', () => {
  test('the sign-in throttle counts the forwarded client behind a trusted proxy', async () => {
    const again = await lockPair(trusting, 'guess@demo.example', '203.0.113.5');
    const same = await again('203.0.113.5');
    assert.deepEqual([same.status, same.body.error.code], [429, 'sign_in_throttled']);
    // Another client behind the same proxy is not held back by the first one's failures.
    assert.equal((await again('203.0.113.6')).status, 401);
  });

  test("without --trust-proxy the throttle counts the socket's address: a forwarded header changes nothing", async () => {
    const again = await lockPair(plain, 'guess@demo.example', '203.0.113.5');
    const other = await again('203.0.113.6');
    assert.deepEqual([other.status, other.body.error.code], [429, 'sign_in_throttled']);
  });

  test("the audit records the forwarded client behind a trusted proxy, the socket's address otherwise", async () => {
    for (const [server, expected] of [
      [trusting, '198.51.100.7'],
      [plain, '127.0.0.1'],
    ] as const) {
      const admin = adminClient(new URL(server.baseUrl).origin);
      const s = await admin.call('POST', '/sessions', DEMO_ADMIN, forwardedFor('198.51.100.7'));
      assert.equal(s.status, 200, JSON.stringify(s.body));
      const cookie = s.headers.get('set-cookie')!.split(';')[0]!;
      const t = await admin.call(
        'POST',
        '/tokens',
        { name: 'audit' },
        { cookie, 'x-csrf-token': s.body.csrf_token, ...forwardedFor('198.51.100.7') },
      );
      assert.equal(t.status, 200, JSON.stringify(t.body));
      const audit = await admin.call('GET', '/audit?action=token.created&limit=1', undefined, bearer(t.body.token));
      assert.equal(audit.status, 200, JSON.stringify(audit.body));
      assert.equal(audit.body.data[0].address.replace(/^::ffff:/, ''), expected);
    }
  });
});
