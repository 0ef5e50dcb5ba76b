// D-92: the public surface cannot starve the private one. The widget has its own share of the storage
// quota, its own stream and detached-reply caps apart from REST's, and its budget is divided per visitor
// and per address, charged only for work done; per-address shares take the socket's address unless
// --trust-proxy names the proxy whose X-Forwarded-For is believed. PostgreSQL: test/proof/pg-widget-starve.test.ts.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { TrustedProxies } from '../../src/http/client-address.ts';
import { KEY, startTestServer, tempDir } from '../support/helpers.ts';
import { originOf, SHOP } from '../support/widget.ts';
import {
  budgetSharesScenario,
  starveFixtures,
  storageShareScenario,
  visitorWithConversation,
  widgetSend,
} from '../support/widget-starve.ts';

let fixturesDir: string;
before(async () => {
  fixturesDir = await starveFixtures();
});

/** A stream opened and held (its body unread) until `ctrl` aborts it; resolves once its answer began. */
async function openStream(
  url: string,
  auth: string,
  body?: unknown,
): Promise<{ status: number; id: string | null; ctrl: AbortController; code?: string }> {
  const ctrl = new AbortController();
  const res = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${auth}`, origin: SHOP, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: ctrl.signal,
  });
  if (res.status !== 200) return { status: res.status, id: null, ctrl, code: ((await res.json()) as any).error.code };
  assert.match(res.headers.get('content-type')!, /^text\/event-stream/);
  return { status: res.status, id: res.headers.get('parley-response-id'), ctrl };
}

/** Polls `check` until it holds (the server's state, not a time). */
async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setImmediate(resolve));
}

describe('D-92 on the file store', () => {
  test("widget messages fill the widget's share of the quota; the team's REST creates and sends still succeed (revises D-27)", async () => {
    const s = await startTestServer({ fixturesDir });
    try {
      await storageShareScenario(s);
    } finally {
      await s.close();
    }
  });

  test('a 404 costs nothing (across a restart); a visitor, then an address, spends only its share of the day (revises D-52)', async () => {
    const dataDir = await tempDir();
    await budgetSharesScenario(() => startTestServer({ fixturesDir, dataDir }));
  });

  test("widget streams and event replays count in the widget's pools and each visitor's, apart from REST's (revises the cap of 64)", async () => {
    const s = await startTestServer({ fixturesDir, maxStreamsPerApp: 2, shutdownGraceMs: 0 });
    const held: AbortController[] = [];
    try {
      const app = 'app_stuck';
      const widget = `${originOf(s)}/widget/v1/apps/${app}`;
      const a = await visitorWithConversation(s, app);
      const first = await openStream(`${widget}/conversations/${a.conversation}`, a.token, { message: { content: 'hello' } });
      held.push(first.ctrl);
      assert.equal(first.status, 200);
      // The same visitor replaying the events of its reply: past its own cap of 1.
      const replay = await openStream(`${widget}/responses/${first.id}/events`, a.token);
      assert.deepEqual([replay.status, replay.code], [429, 'too_many_streams']);
      const b = await visitorWithConversation(s, app);
      const second = await openStream(`${widget}/conversations/${b.conversation}`, b.token, { message: { content: 'hello' } });
      held.push(second.ctrl);
      assert.equal(second.status, 200);
      // The widget's pool (2) is full for every visitor.
      const c = await visitorWithConversation(s, app);
      const third = await openStream(`${widget}/conversations/${c.conversation}`, c.token, { message: { content: 'hello' } });
      assert.deepEqual([third.status, third.code], [429, 'too_many_streams']);
      // REST's two streams are the team's whatever the visitors hold.
      for (let i = 0; i < 2; i++) {
        const conv = await s.call('POST', `/apps/${app}/conversations`, {});
        const rest = await openStream(`${s.baseUrl}/apps/${app}/conversations/${conv.body.id}`, KEY, { message: { content: 'hi' } });
        held.push(rest.ctrl);
        assert.equal(rest.status, 200, `REST stream ${i}: ${rest.code}`);
      }
    } finally {
      for (const ctrl of held) ctrl.abort();
      await s.close();
    }
  });

  test("visitors who leave fill only the widget's cap of detached replies, not REST's (revises D-34)", async () => {
    const s = await startTestServer({ fixturesDir, shutdownGraceMs: 0 });
    try {
      const app = 'app_stuck';
      const widget = `${originOf(s)}/widget/v1/apps/${app}`;
      const status = async (id: string) => (await s.call('GET', `/apps/${app}/responses/${id}`)).body.status;
      // A visitor leaves: its reply runs on, detached, in the widget's cap of 1.
      const a = await visitorWithConversation(s, app);
      const left = await openStream(`${widget}/conversations/${a.conversation}`, a.token, { message: { content: 'hello' } });
      left.ctrl.abort();
      await until(() => s.responses.detachedCount(app, true) === 1);
      // Another visitor leaves: past the widget's cap, its reply stops (D-19).
      const b = await visitorWithConversation(s, app);
      const stopped = await openStream(`${widget}/conversations/${b.conversation}`, b.token, { message: { content: 'hello' } });
      stopped.ctrl.abort();
      await until(async () => (await status(stopped.id!)) === 'failed');
      // REST's cap is untouched by the visitors; the team's client leaves: its reply runs on, in it.
      assert.equal(s.responses.detachedCount(app), 0);
      const conv = await s.call('POST', `/apps/${app}/conversations`, {});
      const rest = await openStream(`${s.baseUrl}/apps/${app}/conversations/${conv.body.id}`, KEY, { message: { content: 'hi' } });
      rest.ctrl.abort();
      await until(async () => s.responses.detachedCount(app) === 1 || (await status(rest.id!)) === 'failed');
      assert.equal(await status(rest.id!), 'in_progress');
      assert.equal(s.responses.detachedCount(app), 1);
      assert.equal(s.responses.detachedCount(app, true), 1);
    } finally {
      await s.close();
    }
  });
});

describe('--trust-proxy: whose address a per-address share counts (D-92)', () => {
  test('behind a trusted proxy, X-Forwarded-For names the address; without one, the socket does', async () => {
    const app = 'app_budget';
    const s = await startTestServer({ fixturesDir, trustProxy: '127.0.0.1/32' });
    try {
      const from = (address: string) => ({ 'x-forwarded-for': `198.51.100.9, ${address}` });
      // Two visitors of one address spend its share (4): create, send, create, send.
      const a = await visitorWithConversation(s, app, from('203.0.113.7'));
      assert.equal((await widgetSend(s, app, a, 'hi', from('203.0.113.7'))).status, 200);
      const b = await visitorWithConversation(s, app, from('203.0.113.7'));
      assert.equal((await widgetSend(s, app, b, 'hi', from('203.0.113.7'))).status, 200);
      const refused = await widgetSend(s, app, b, 'again', from('203.0.113.7'));
      assert.equal(refused.status, 429);
      assert.match(refused.body.error.message, /address has used its share/);
      // Another address behind the same proxy is not refused (what the client wrote left of it is ignored).
      const c = await visitorWithConversation(s, app, from('203.0.113.8'));
      assert.equal((await widgetSend(s, app, c, 'hi', from('203.0.113.8'))).status, 200);
    } finally {
      await s.close();
    }
    // Without --trust-proxy the header is anyone's to write: every request is the socket's address.
    const plain = await startTestServer({ fixturesDir });
    try {
      const headers = (n: number) => ({ 'x-forwarded-for': `203.0.113.${n}` });
      const a = await visitorWithConversation(plain, app, headers(1));
      assert.equal((await widgetSend(plain, app, a, 'hi', headers(2))).status, 200);
      const b = await visitorWithConversation(plain, app, headers(3));
      assert.equal((await widgetSend(plain, app, b, 'hi', headers(4))).status, 200);
      assert.equal((await widgetSend(plain, app, b, 'hi', headers(5))).status, 429);
    } finally {
      await plain.close();
    }
  });

  test('the rule: the first untrusted hop from the right; IPv6 and IPv4-mapped addresses; a bad CIDR is a usage error', () => {
    const req = (peer: string, xff?: string | string[]) =>
      ({ socket: { remoteAddress: peer }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } }) as unknown as IncomingMessage;
    const proxies = TrustedProxies.parse('10.0.0.0/8, fd00::/8,127.0.0.1');
    assert.equal(proxies.clientOf(req('10.1.2.3', '203.0.113.5')), '203.0.113.5');
    assert.equal(proxies.clientOf(req('::ffff:10.1.2.3', 'evil, 203.0.113.5, 10.9.9.9')), '203.0.113.5');
    assert.equal(proxies.clientOf(req('fd00::1', ['2001:db8::7', '10.0.0.2'])), '2001:db8::7');
    // From an untrusted peer, the header is not read.
    assert.equal(proxies.clientOf(req('203.0.113.9', '198.51.100.1')), '203.0.113.9');
    // Only proxies in the chain: the leftmost; no header or a garbled hop: the last proxy that is an address.
    assert.equal(proxies.clientOf(req('127.0.0.1', '10.0.0.3, 10.0.0.2')), '10.0.0.3');
    assert.equal(proxies.clientOf(req('127.0.0.1')), '127.0.0.1');
    assert.equal(proxies.clientOf(req('127.0.0.1', 'not-an-ip')), '127.0.0.1');
    assert.equal(TrustedProxies.none.clientOf(req('::ffff:127.0.0.1', '203.0.113.5')), '127.0.0.1');
    for (const bad of ['10.0.0.0/33', 'proxy.local', '', '10.0.0.0/8,,'])
      assert.throws(() => TrustedProxies.parse(bad), /not an address or CIDR/);
    assert.equal(loadConfig(['--trust-proxy', '10.0.0.0/8'], {}).trustProxy, '10.0.0.0/8');
    assert.equal(loadConfig([], { TRUST_PROXY: '::1' }).trustProxy, '::1');
    assert.throws(
      () => loadConfig([], { TRUST_PROXY: '10.0.0.0/99' }),
      (e: Error) => e instanceof ConfigError && /TRUST_PROXY/.test(e.message),
    );
  });
});
