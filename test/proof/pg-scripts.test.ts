// The scripts suite (test/support/scripts-suite.ts) on PostgreSQL: two Parley instances on one database
// follow one script, request by request (test/scripts.test.ts: the file store).
import { startTestServer } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { scriptsSuite } from '../support/scripts-suite.ts';

usePostgres();
scriptsSuite('PostgreSQL, two instances', {
  async start() {
    const databaseUrl = await freshDatabase();
    const one = await startTestServer({ databaseUrl });
    const two = await startTestServer({ databaseUrl });
    return { servers: [one, two], close: async () => void (await Promise.all([one.close(), two.close()])) };
  },
});
