// One Response resource on PostgreSQL (test/response-resource.test.ts: the file store): send message's
// JSON answer, the look-up (D-32) and the response.completed webhook (D-83, revised), written in the
// exchange's transaction (D-84), carry the same response key for key.
import { startTestServer } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { oneResponseEverywhere } from '../support/response-everywhere.ts';

usePostgres();
oneResponseEverywhere('PostgreSQL', async () =>
  startTestServer({ databaseUrl: await freshDatabase(), passwordHashCost: 10, webhookPollMs: 20 }),
);
