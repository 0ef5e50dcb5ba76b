// Apps (D-71), members (D-72) and the password change (D-67) on the admin surface, on PostgreSQL
// (a real server, test/support/postgres.ts): the suite of test/admin-manage.test.ts.
import { adminManageSuite } from './support/admin-suite.ts';
import { startTestServer } from './support/helpers.ts';
import { freshDatabase, usePostgres } from './support/postgres.ts';

usePostgres();
adminManageSuite('PostgreSQL', async (o) => startTestServer({ ...o, databaseUrl: await freshDatabase() }));
