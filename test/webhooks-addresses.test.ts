// D-170 (issue 42 items 6 and 7): loopback endpoints in local development only, in every spelling of a
// loopback URL, judged without a socket opened (node's `net.client.socket` channel stays silent and the
// resolver is never asked); the special IPv6 ranges that carry or translate IPv4; `localhost` names
// connected through the guard's own look-up, never the system's.
import assert from 'node:assert/strict';
import diagnostics from 'node:diagnostics_channel';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { addressesOf, addressPolicy, checkEndpointUrl, classifyAddress, type Resolver } from '../src/services/webhooks/addresses.ts';
import { send } from '../src/services/webhooks/send.ts';
import { APP, startTestServer } from './support/helpers.ts';
import { demoAdminToken } from './support/webhook-receiver.ts';

/** A resolver that must not be asked: a loopback name is judged without a look-up. */
const unasked: Resolver = async (host) => {
  throw new Error(`the resolver was asked for ${host}`);
};

const LOOPBACK_FORMS = [
  'http://127.0.0.1:9/',
  'http://localhost:9/',
  'http://[::ffff:127.0.0.1]:9/',
  'http://2130706433:9/',
  'http://127.0.0.2:9/',
  'http://hooks.localhost:9/',
  'http://[::1]:9/',
];

test('D-170: the one rule: loopback endpoints only while Parley listens on loopback with no --public-url, or with --webhook-allow-private', () => {
  assert.equal(addressPolicy('127.0.0.1', null, false).allowLoopback, true, 'npm start: local development');
  assert.equal(addressPolicy('localhost', undefined, false).allowLoopback, true);
  assert.equal(addressPolicy('::1', null, false).allowLoopback, true);
  assert.equal(addressPolicy('127.0.0.1', 'https://parley.example.com', false).allowLoopback, false, 'behind a TLS proxy on the host');
  assert.equal(addressPolicy('0.0.0.0', null, false).allowLoopback, false, 'listening beyond loopback');
  assert.equal(addressPolicy('10.0.0.5', null, false).allowLoopback, false);
  assert.equal(addressPolicy('0.0.0.0', 'https://parley.example.com', true).allowPrivate, true);
});

test('D-170: every loopback URL form is refused behind a public URL and beyond loopback, at save and at delivery, without a connection or a look-up', async () => {
  const attempts: unknown[] = [];
  const watch = (m: unknown) => (m as { socket: NodeJS.EventEmitter }).socket.on('connectionAttempt', (ip) => attempts.push(ip));
  diagnostics.subscribe('net.client.socket', watch);
  try {
    for (const policy of [addressPolicy('127.0.0.1', 'https://parley.example.com', false), addressPolicy('0.0.0.0', null, false)]) {
      for (const url of LOOPBACK_FORMS) {
        const why = await checkEndpointUrl(url, policy, unasked);
        assert.match(why ?? 'accepted', /loopback address \(loopback is allowed only in local development/, url);
        const r = await send(url, '{}', {}, { timeoutMs: 5_000, policy, resolve: unasked });
        assert.equal(r.status, null, url);
        assert.match(r.error!, /^address refused: .*loopback/, url);
      }
    }
    for (const policy of [addressPolicy('127.0.0.1', null, false), addressPolicy('0.0.0.0', 'https://parley.example.com', true)])
      for (const url of LOOPBACK_FORMS) assert.equal(await checkEndpointUrl(url, policy, unasked), null, url);
    assert.deepEqual(attempts, [], 'no connection was attempted');
  } finally {
    diagnostics.unsubscribe('net.client.socket', watch);
  }
});

test('D-170: 64:ff9b:1::/48 (local-use NAT64) is private; ::ffff:0:0/96 and ::ffff:0:0:0/96 are judged by the IPv4 they carry, and special when that is public', async () => {
  const table: Array<[string, string]> = [
    ['64:ff9b:1::808:808', 'private'],
    ['64:ff9b:1:ffff::1', 'private'],
    ['64:ff9b::808:808', 'public'],
    ['::ffff:8.8.8.8', 'reserved'],
    ['::ffff:808:808', 'reserved'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:0:808:808', 'reserved'],
    ['::ffff:0:7f00:1', 'loopback'],
    ['::ffff:0:a00:1', 'private'],
  ];
  for (const [ip, kind] of table) assert.equal(classifyAddress(ip), kind, ip);
  const strict = addressPolicy('0.0.0.0', null, false);
  for (const host of ['[64:ff9b:1::808:808]', '[::ffff:8.8.8.8]', '[::ffff:0:808:808]'])
    assert.ok(await checkEndpointUrl(`https://${host}/hook`, strict), host);
  const resolve: Resolver = async () => [{ address: '64:ff9b:1::a00:1', family: 6 }];
  assert.match((await checkEndpointUrl('https://hooks.example.com/', strict, resolve))!, /is a private address/);
});

test('D-170: a *.localhost name is this host’s loopback, connected through the guard’s own look-up, never the system’s', async () => {
  assert.deepEqual(await addressesOf('app.localhost', unasked), [{ address: '127.0.0.1', family: 4 }]);
  assert.deepEqual(await addressesOf('LOCALHOST.', unasked), [{ address: '127.0.0.1', family: 4 }]);
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `http://hooks.localhost:${(server.address() as AddressInfo).port}/in`;
    // The system's look-up need not know the name (it often does not): the guard maps it to loopback.
    const r = await send(url, '{}', {}, { timeoutMs: 5_000, policy: addressPolicy('127.0.0.1', null, false), resolve: unasked });
    assert.equal(r.status, 204, r.error ?? '');
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

test('D-170: a Parley on loopback behind --public-url refuses a loopback endpoint with invalid_webhook_url, saying the rule', {
  timeout: 30_000,
}, async () => {
  const server = await startTestServer({ passwordHashCost: 10, publicUrl: 'https://parley.example.com' });
  try {
    const origin = new URL(server.baseUrl).origin;
    const token = await demoAdminToken(origin);
    for (const url of ['http://127.0.0.1:9/hook', 'http://app.localhost:9/hook']) {
      const r = await fetch(`${origin}/admin/v1/webhook_endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ app_id: APP, url, events: ['*'] }),
      });
      const body = (await r.json()) as { error: { code: string; param: string; message: string } };
      assert.equal(r.status, 400, url);
      assert.deepEqual([body.error.code, body.error.param], ['invalid_webhook_url', 'url']);
      assert.match(body.error.message, /only in local development/);
    }
  } finally {
    await server.close();
  }
});
