// One Response resource (src/services/send/response-resource.ts): send message's JSON answer, the
// look-up (D-32) and the response.completed webhook (D-83, revised) carry the same response key for
// key, on the file store (test/proof/pg-response-resource.test.ts: on PostgreSQL).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from './support/helpers.ts';
import { proveOneResponse } from './support/response-everywhere.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer({ passwordHashCost: 10, webhookPollMs: 20 });
});
after(() => server?.close());

test('D-83, D-32: the same response reads the same in the send answer, the look-up and the webhook, items in §2.4 shape', {
  timeout: 60_000,
}, async () => {
  const types = await proveOneResponse(server.baseUrl);
  assert.deepEqual([...types].sort(), ['data_spec', 'function_call', 'message']);
});
