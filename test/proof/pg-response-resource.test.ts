// One Response resource on PostgreSQL (test/response-resource.test.ts: the file store): send message's
// JSON answer, the look-up (D-32) and the response.completed webhook (D-83, revised), written in the
// exchange's transaction (D-84), carry the same response key for key.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { proveOneResponse } from '../support/response-everywhere.ts';

usePostgres();

let server: TestServer;
before(async () => {
  server = await startTestServer({ databaseUrl: await freshDatabase(), passwordHashCost: 10, webhookPollMs: 20 });
});
after(() => server?.close());

test('D-83, D-32 on PostgreSQL: the same response reads the same in the send answer, the look-up and the webhook', {
  timeout: 120_000,
}, async () => {
  const types = await proveOneResponse(server.baseUrl);
  assert.deepEqual([...types].sort(), ['data_spec', 'function_call', 'message']);
});
