// --retry (D-62): a 429 is tried again after its Retry-After, a longer wait is reported instead; a network
// failure is retried only when repeating cannot apply the request twice, and every POST carries an
// Idempotency-Key, the same on each attempt. Against a scripted implementation (the waits are the
// server's), and against the real server for the key's replay.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { retryDelay } from '../cli/client.ts';
import { ApiError, ConnectionError } from '../cli/core/error.ts';
import { startTestServer, type TestServer } from './support/helpers.ts';
import { runCli, sendJson, serverEnv, startFakeApi, type FakeApi } from './support/cli-helpers.ts';

const conv = (id: string) => ({ id, object: 'conversation', created_at: 1, title: null, generated_title: {}, metadata: {} });
const rateLimited = { error: { type: 'rate_limit_exceeded', message: 'too many requests', param: null, code: null } };

let api: FakeApi;
let s: TestServer;
before(async () => {
  api = await startFakeApi();
  s = await startTestServer();
});
after(async () => {
  await api.close();
  await s.close();
});

describe('--retry', () => {
  test('a 429 is sent again after its Retry-After, with the same Idempotency-Key', async () => {
    api.requests.length = 0;
    let n = 0;
    api.handle((_req, res) => {
      if (n++ === 0) {
        res.setHeader('retry-after', '1');
        res.setHeader('x-request-id', 'req_first');
        return sendJson(res, rateLimited, 429);
      }
      sendJson(res, conv('c1'));
    });
    const r = await runCli(['conversations', 'create', '--json', '--retry', '2'], { env: api.env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).id, 'c1');
    assert.match(r.stderr, /^retry 1\/2 in 1 s \(429 rate_limit_exceeded\)$/m);
    assert.equal(api.requests.length, 2);
    const keys = api.requests.map((q) => q.headers['idempotency-key']);
    assert.match(String(keys[0]), /^[0-9a-f-]{36}$/);
    assert.equal(keys[1], keys[0]);
  });

  test('a Retry-After beyond the 60 s cap (a daily limit) is reported at once, not waited for; without --retry nothing is retried', async () => {
    api.requests.length = 0;
    api.handle((_req, res) => {
      res.setHeader('retry-after', '3600');
      res.setHeader('x-request-id', 'req_daily');
      sendJson(res, rateLimited, 429);
    });
    const r = await runCli(['conversations', 'create', '--retry', '3'], { env: api.env });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /not retrying: the server asks to wait 3600 s, more than the 60 s --retry waits/);
    assert.match(r.stderr, /^retry after 3600 s$/m);
    assert.match(r.stderr, /^request id: req_daily$/m);
    assert.equal(api.requests.length, 1);
    api.requests.length = 0;
    const none = await runCli(['conversations', 'create'], { env: api.env });
    assert.equal(none.code, 1);
    assert.equal(api.requests.length, 1);
    assert.equal(api.requests[0]!.headers['idempotency-key'], undefined, 'no key without --retry');
  });

  test('a connection cut after a POST was sent: retried with its key; a PATCH is not; without --retry exit 3', async () => {
    let n = 0;
    api.handle((req, res) => {
      if (n++ === 0) return req.method === 'PATCH' || req.method === 'POST' ? res.socket!.destroy() : undefined;
      sendJson(res, conv('c2'));
    });
    api.requests.length = 0;
    const post = await runCli(['conversations', 'create', '--json', '--retry', '1'], { env: api.env });
    assert.equal(post.code, 0, post.stderr);
    assert.equal(api.requests.length, 2);
    assert.equal(api.requests[1]!.headers['idempotency-key'], api.requests[0]!.headers['idempotency-key']);

    n = 0;
    api.requests.length = 0;
    const patch = await runCli(['conversations', 'update', 'c2', '--title', 'x', '--retry', '3'], { env: api.env });
    assert.equal(patch.code, 3, patch.stderr);
    assert.equal(api.requests.length, 1, 'a PATCH that may have been applied is not repeated');

    n = 0;
    api.requests.length = 0;
    const once = await runCli(['conversations', 'create'], { env: api.env });
    assert.equal(once.code, 3);
    assert.equal(api.requests.length, 1);
  });

  test('against the real server: a retried create carries a key the server honours (a replay, not a second conversation)', async () => {
    const env = serverEnv(s.baseUrl);
    const r = await runCli(['conversations', 'create', '--title', 'retried', '--retry', '1', '--json', '--verbose'], { env });
    assert.equal(r.code, 0, r.stderr);
    const key = /^> idempotency-key: (\S+)$/m.exec(r.stderr)?.[1];
    assert.ok(key, r.stderr);
    // What a retry with that key would get: the same conversation, replayed.
    const replay = await runCli(
      ['api', 'POST', '/apps/{app}/conversations', '-f', 'title=retried', '-H', `Idempotency-Key: ${key}`, '-i'],
      { env },
    );
    assert.equal(replay.code, 0, replay.stderr);
    assert.equal(JSON.parse(replay.stdout).id, JSON.parse(r.stdout).id);
    assert.match(replay.stderr, /^idempotent-replayed: true$/m);
    const usage = await runCli(['conversations', 'list', '--retry', 'x'], { env });
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--retry must be a whole number/);
  });

  test('retryDelay: who may be repeated, and after how long', () => {
    const e429 = (h: Record<string, string>) => new ApiError(429, 'rate_limit_exceeded', 'x', null, null, '', h, undefined);
    assert.equal(retryDelay(e429({ 'retry-after': '2' }), 0, false), 2000);
    assert.equal(retryDelay(e429({}), 2, false), 4000);
    const date = new Date(Date.now() + 30_000).toUTCString();
    const wait = retryDelay(e429({ 'retry-after': date }), 0, false)!;
    assert.ok(wait > 20_000 && wait <= 30_000, String(wait));
    assert.equal(retryDelay(new ApiError(400, 'invalid_request_error', 'x', null, null, '', {}, undefined), 0, true), undefined);
    assert.equal(
      retryDelay(new ApiError(409, 'conflict', 'x', null, 'idempotency_key_in_use', '', { 'retry-after': '1' }, undefined), 0, true),
      1000,
    );
    const refused = new ConnectionError('u', 'refused', { cause: { code: 'ECONNREFUSED' } });
    assert.equal(retryDelay(refused, 1, false), 1000, 'nothing was sent: any method');
    const reset = new ConnectionError('u', 'reset', { cause: { code: 'ECONNRESET' } });
    assert.equal(retryDelay(reset, 0, false), undefined, 'may have been applied');
    assert.equal(retryDelay(reset, 0, true), 500);
  });

  test('D-62 (revised by the client kit): a 408, a busy conversation and a 5xx are repeated when the request may be; never after x-should-retry: false', () => {
    const err = (status: number, code: string | null, h: Record<string, string> = {}) =>
      new ApiError(status, 'service_unavailable', 'x', null, code, '', h, undefined);
    assert.equal(retryDelay(err(503, 'store_unavailable', { 'retry-after': '1' }), 0, true), 1000);
    assert.equal(retryDelay(err(500, null), 1, true), 2000);
    assert.equal(retryDelay(err(408, null), 0, true), 1000);
    assert.equal(retryDelay(err(409, 'conversation_busy'), 0, true), 1000);
    assert.equal(retryDelay(err(503, 'store_unavailable'), 0, false), undefined, 'a PATCH may have been applied');
    assert.equal(retryDelay(err(409, 'conversation_taken'), 0, true), undefined, 'another 409 is final');
    assert.equal(retryDelay(err(503, null, { 'x-should-retry': 'false' }), 0, true), undefined);
    assert.equal(retryDelay(err(429, null, { 'x-should-retry': 'false' }), 0, true), undefined);
  });
});
