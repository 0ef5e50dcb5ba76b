// One Response resource (src/services/send/response-resource.ts): send message's JSON answer, the
// look-up (D-32) and the response.completed webhook (D-83, revised) carry the same response key for
// key, on the file store (test/proof/pg-response-resource.test.ts: on PostgreSQL).
import { startTestServer } from './support/helpers.ts';
import { oneResponseEverywhere } from './support/response-everywhere.ts';

oneResponseEverywhere('the file store', () => startTestServer({ passwordHashCost: 10, webhookPollMs: 20 }));
