// D-165 across instances: bursts of sign-ins and password changes split between two instances of one
// PostgreSQL database (a real server, test/support/postgres.ts) check no more passwords than one
// instance would: the reservation is counted in the shared table under a lock per key.
import { test } from 'node:test';
import { TEST_HASH_COST } from '../support/admin-client.ts';
import { startTestServer } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { assertBurstsHold } from '../support/sign-in-burst.ts';

usePostgres();

test('two instances: 100 sign-ins and 20 password changes at once, split between them, check at most the allowed passwords', async () => {
  const databaseUrl = await freshDatabase();
  // One stopped clock: a burst's back-off cannot run out while a loaded machine takes its time.
  const at = Date.now();
  const a = await startTestServer({ passwordHashCost: TEST_HASH_COST, databaseUrl, adminClock: () => at });
  const b = await startTestServer({ passwordHashCost: TEST_HASH_COST, databaseUrl, adminClock: () => at });
  try {
    // D-78: a change is answered once every live instance holds it, so b knows the members `a` seeds.
    await assertBurstsHold(a.control, [new URL(a.baseUrl).origin, new URL(b.baseUrl).origin]);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
