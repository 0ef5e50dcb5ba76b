// The webhook signature scheme (docs/webhooks.md, D-80) and where webhooks may go (D-82): Parley's
// signatures checked by an independent implementation written here and by the published Standard
// Webhooks package; the demo key's signing secret as a test vector; refused addresses judged without
// a socket opened (node's `net.client.socket` channel stays silent).
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { webhookSecretText, webhookSigningKey } from '../src/core/api-keys.ts';
import { signatureOf, signedHeaders, signingKeyOf, verifySignature } from '../src/core/webhook-signature.ts';
import { checkEndpointUrl, classifyAddress, type Resolver } from '../src/services/webhooks/addresses.ts';
import { Connections, send } from '../src/services/webhooks/send.ts';
import { KEY } from './support/helpers.ts';

/** docs/webhooks.md's test vector: the demo secret key's signing secret. */
const DEMO_SECRET = 'whsec_4iizSz75DhkFrCp5nX6dFb/dmAG7dfkIoXOhVGk9a+E=';

/** The scheme as the issue states it, written out independently of src/. */
function independentSignature(secretKey: string, id: string, ts: number, body: string): string {
  const s = createHmac('sha256', Buffer.from(secretKey, 'utf8')).update(Buffer.from('parley webhook signing v1', 'ascii')).digest();
  return `v1,${createHmac('sha256', s).update(`${id}.${ts}.${body}`, 'utf8').digest('base64')}`;
}

describe('D-80: the signature scheme', () => {
  test('the demo key signing secret is the test vector of docs/webhooks.md (whsec_ + 44 base64 characters)', () => {
    const text = webhookSecretText(webhookSigningKey(KEY));
    assert.equal(text, DEMO_SECRET);
    assert.equal(text.length, 'whsec_'.length + 44);
  });

  test('a signature is v1, + base64 HMAC-SHA256 keyed with the 32 bytes of S over id.timestamp.body', () => {
    const body = '{"id":"evt_1","object":"event"}';
    assert.equal(
      signatureOf(webhookSigningKey(KEY), 'evt_1', 1_700_000_000, body),
      independentSignature(KEY, 'evt_1', 1_700_000_000, body),
    );
  });

  test('the Standard Webhooks package verifies a delivery signed with two keys, with either secret', () => {
    const rolled = 'sk_live_0123456789abcdefghijABCDEFGHIJ01234567';
    const keys = [webhookSigningKey(rolled), webhookSigningKey(KEY)];
    const ts = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ id: 'evt_2', object: 'event', type: 'conversation.created', data: { text: 'é ✓' } });
    const headers = signedHeaders(keys, 'evt_2', ts, body);
    assert.equal(headers['webhook-signature']!.split(' ').length, 2);
    for (const secret of [DEMO_SECRET, webhookSecretText(webhookSigningKey(rolled))]) {
      assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
      assert.deepEqual(verifySignature(signingKeyOf(secret), headers, body, ts), { ok: true });
    }
    assert.throws(() => new Webhook(DEMO_SECRET).verify(`${body} `, headers));
    assert.throws(() => new Webhook(webhookSecretText(webhookSigningKey('sk_live_other'))).verify(body, headers));
  });

  test('verification refuses a changed body, a stale timestamp (unless told not to check it) and missing headers', () => {
    const key = signingKeyOf(DEMO_SECRET);
    const body = '{"a":1}';
    const headers = signedHeaders([key], 'evt_3', 1_000, body);
    assert.equal(verifySignature(key, headers, '{"a":2}', 1_000).ok, false);
    assert.match((verifySignature(key, headers, body, 2_000) as { reason: string }).reason, /tolerance/);
    assert.deepEqual(verifySignature(key, headers, body, 2_000, null), { ok: true });
    assert.equal(verifySignature(key, { ...headers, 'webhook-id': undefined }, body, 1_000).ok, false);
  });

  test('docs/webhooks.md test vector: the demo key signs the example delivery as written there', () => {
    const body =
      '{"id":"evt_0123456789abcdef01234567","object":"event","type":"conversation.created","created_at":1764215400,"app_id":"app_demo","data":{"id":"conv_0123456789abcdef01234567","object":"conversation","created_at":1764215400,"external_user_id":null,"title":"Hello","generated_title":{},"metadata":{}}}';
    const expected = 'v1,mhjuTTrSPG6A9IEfAbbpgJ2C+i79/+03tQGprFa+hLc=';
    assert.equal(signatureOf(signingKeyOf(DEMO_SECRET), 'evt_0123456789abcdef01234567', 1764215400, body), expected);
    assert.equal(independentSignature(KEY, 'evt_0123456789abcdef01234567', 1764215400, body), expected);
    const doc = fs.readFileSync(path.join(import.meta.dirname, '../docs/webhooks.md'), 'utf8');
    assert.ok(doc.includes(body) && doc.includes(expected) && doc.includes(DEMO_SECRET));
  });

  test("D-150: one signature per key given, however many (which keys is the endpoint's rule)", () => {
    const keys = Array.from({ length: 12 }, (_, i) => webhookSigningKey(`sk_live_${i}`));
    assert.equal(signedHeaders(keys, 'evt_4', 1, '{}')['webhook-signature']!.split(' ').length, 12);
  });
});

describe('D-82: where webhooks may go', () => {
  test('addresses are classified, IPv4-mapped, NAT64 and 6to4 IPv6 by the IPv4 address they carry', () => {
    const table: Array<[string, string]> = [
      ['93.184.216.34', 'public'],
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['10.0.0.1', 'private'],
      ['172.16.5.4', 'private'],
      ['192.168.1.1', 'private'],
      ['100.64.0.1', 'private'],
      ['169.254.169.254', 'metadata'],
      ['169.254.3.3', 'link-local'],
      ['0.0.0.0', 'reserved'],
      ['224.0.0.1', 'reserved'],
      ['::1', 'loopback'],
      ['::', 'reserved'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['::ffff:a00:1', 'private'],
      ['64:ff9b::a9fe:a9fe', 'metadata'],
      ['2002:a00:1::', 'private'],
      ['fd00::1', 'unique-local'],
      ['fc12:3456::1', 'unique-local'],
      ['fd00:ec2::254', 'metadata'],
      ['fe80::1', 'link-local'],
      ['ff02::1', 'reserved'],
      ['2606:4700::1111', 'public'],
    ];
    for (const [ip, kind] of table) assert.equal(classifyAddress(ip), kind, ip);
  });

  test('URLs are refused at save time in every spelling of a refused address; allowed by the settings', async () => {
    const strict = { allowLoopback: false, allowPrivate: false };
    const refused = [
      'http://127.0.0.1:9/',
      'http://2130706433/',
      'http://0x7f000001/',
      'http://0177.0.0.1/',
      'http://localhost:8080/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://10.0.0.1/',
      'http://0xa000001/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://0.0.0.0/',
    ];
    for (const url of refused) assert.ok(await checkEndpointUrl(url, strict), url);
    assert.equal(await checkEndpointUrl('http://127.0.0.1:9/', { allowLoopback: true, allowPrivate: false }), null);
    assert.ok(await checkEndpointUrl('http://10.0.0.1/', { allowLoopback: true, allowPrivate: false }));
    assert.equal(await checkEndpointUrl('http://10.0.0.1/', { allowLoopback: false, allowPrivate: true }), null);
    assert.match((await checkEndpointUrl('ftp://example.com/', strict))!, /http/);
    assert.match((await checkEndpointUrl('https://u:p@example.com/', strict))!, /password/);
    const resolve: Resolver = async () => [{ address: '10.0.0.1', family: 4 }];
    assert.match((await checkEndpointUrl('https://hooks.example.com/', strict, resolve))!, /resolves to 10\.0\.0\.1 is a private address/);
    const unresolvable: Resolver = async () => {
      throw new Error('ENOTFOUND');
    };
    assert.equal(await checkEndpointUrl('https://hooks.example.com/', strict, unresolvable), null);
  });

  test('at delivery, a name resolving to a refused address is refused before any connection is attempted', async () => {
    const attempts: unknown[] = [];
    // Every client socket of the process: a refused address must never reach a connection attempt.
    const watch = (m: unknown) => (m as { socket: NodeJS.EventEmitter }).socket.on('connectionAttempt', (ip) => attempts.push(ip));
    diagnostics.subscribe('net.client.socket', watch);
    try {
      for (const address of ['10.0.0.1', '169.254.169.254', 'fd00::1', '::ffff:10.0.0.1']) {
        const resolve: Resolver = async () => [{ address, family: address.includes(':') ? 6 : 4 }];
        const r = await send(
          'http://hooks.example.com/in',
          '{}',
          {},
          { timeoutMs: 5_000, policy: { allowLoopback: true, allowPrivate: false }, resolve },
        );
        assert.equal(r.status, null);
        assert.match(r.error!, /address refused/, address);
      }
      const literal = await send(
        'http://[fd00::1]/in',
        '{}',
        {},
        {
          timeoutMs: 5_000,
          policy: { allowLoopback: true, allowPrivate: false },
          resolve: async () => [],
        },
      );
      assert.match(literal.error!, /address refused/);
      // Through an endpoint's kept-alive connection (D-82, revised) a new connection is judged the same way.
      const connections = new Connections();
      const resolve: Resolver = async () => [{ address: '10.0.0.1', family: 4 }];
      const viaAgent = await send(
        'http://hooks.example.com/in',
        '{}',
        {},
        { timeoutMs: 5_000, policy: { allowLoopback: true, allowPrivate: false }, resolve },
        connections.agentFor('we_1', new URL('http://hooks.example.com/in')),
      );
      connections.close();
      assert.match(viaAgent.error!, /address refused/);
      assert.deepEqual(attempts, []);
    } finally {
      diagnostics.unsubscribe('net.client.socket', watch);
    }
  });

  test('an endpoint keeps its connection between attempts, another has its own; a kept one reset as a request goes out is tried once more on a new one', async () => {
    let connections = 0;
    let requests = 0;
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        // The third request: the receiver drops the kept connection instead of answering.
        if (++requests === 3) return req.socket.destroy();
        res.writeHead(204).end();
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/in`;
    const kept = new Connections();
    const o = { timeoutMs: 5_000, policy: { allowLoopback: true, allowPrivate: false }, resolve: async () => [] };
    try {
      const attempt = (endpoint: string) => send(url, '{}', {}, o, kept.agentFor(endpoint, new URL(url)));
      assert.equal((await attempt('we_1')).status, 204);
      assert.equal((await attempt('we_1')).status, 204);
      assert.equal(connections, 1, 'the second attempt went over the first one’s connection');
      const again = await attempt('we_1');
      assert.equal(again.status, 204, again.error ?? '');
      assert.equal(requests, 4);
      assert.equal(connections, 2);
      assert.equal((await attempt('we_2')).status, 204);
      assert.equal(connections, 3, 'another endpoint, its own connection');
    } finally {
      kept.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  test('D-85, D-87: an answer: a 3xx is a failed attempt and not followed; only its first 1,024 bytes are kept; Retry-After read on 429 and 503 only', async () => {
    let followed = 0;
    const elsewhere = http.createServer((_req, res) => {
      followed++;
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => elsewhere.listen(0, '127.0.0.1', r));
    const there = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/`;
    const big = 'x'.repeat(200_000);
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/moved') res.writeHead(307, { location: there }).end('moved');
        else if (req.url === '/big') res.writeHead(200).end(big);
        else if (req.url === '/busy') res.writeHead(503, { 'retry-after': '7' }).end();
        else if (req.url === '/slow-down') res.writeHead(429, { 'retry-after': new Date(Date.now() + 60_000).toUTCString() }).end();
        else res.writeHead(500, { 'retry-after': '7' }).end('no');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const o = { timeoutMs: 5_000, policy: { allowLoopback: true, allowPrivate: false }, resolve: async () => [] };
    const kept = new Connections();
    try {
      const attempt = (p: string) => send(base + p, '{}', {}, o, kept.agentFor('we_1', new URL(base)));
      const moved = await attempt('/moved');
      assert.equal(moved.status, 307);
      assert.equal(moved.response, 'moved');
      assert.equal(followed, 0, 'the redirect was not followed');
      const large = await attempt('/big');
      assert.equal(large.status, 200);
      assert.equal(large.response, 'x'.repeat(1024));
      const busy = await attempt('/busy');
      assert.deepEqual([busy.status, busy.retryAfterS], [503, 7]);
      const slow = await attempt('/slow-down');
      assert.equal(slow.status, 429);
      assert.ok(slow.retryAfterS! >= 58 && slow.retryAfterS! <= 60, String(slow.retryAfterS));
      const failed = await attempt('/fails');
      assert.deepEqual([failed.status, failed.retryAfterS, failed.response], [500, null, 'no']);
    } finally {
      kept.close();
      for (const s of [server, elsewhere]) {
        s.closeAllConnections();
        await new Promise((r) => s.close(r));
      }
    }
  });
});
