// Apps (D-71), members (D-72) and the password change (D-67) on the admin surface, on PostgreSQL
// (a real server, test/support/postgres.ts): the suite of test/admin-manage.test.ts; and a change made
// on one instance of a database in effect on another.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adminClient, bearer, DEMO_ADMIN, TEST_HASH_COST } from '../support/admin-client.ts';
import { adminManageSuite } from '../support/admin-suite.ts';
import { startTestServer } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();
adminManageSuite('PostgreSQL', async (o) => startTestServer({ ...o, databaseUrl: await freshDatabase() }));

describe('two instances of one database (D-78)', () => {
  test('an app deactivated on one instance is refused app_inactive by the other, which it is told of', async () => {
    const databaseUrl = await freshDatabase();
    const a = await startTestServer({ passwordHashCost: TEST_HASH_COST, databaseUrl });
    const b = await startTestServer({ passwordHashCost: TEST_HASH_COST, databaseUrl });
    try {
      const conv = '/apps/app_stream/conversations';
      assert.equal((await b.call('GET', conv)).status, 200);
      const client = adminClient(new URL(a.baseUrl).origin);
      const admin = bearer(await client.token(DEMO_ADMIN.email, DEMO_ADMIN.password));
      const told = new Promise<void>((resolve) =>
        b.control.onChange((doc) => doc.apps.find((x) => x.id === 'app_stream')?.active === false && resolve()),
      );
      assert.equal((await client.call('PATCH', '/apps/app_stream', { active: false }, admin)).status, 200);
      await told;
      const refused = await b.call('GET', conv);
      assert.deepEqual([refused.status, refused.body.error.type], [403, 'app_inactive']);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
