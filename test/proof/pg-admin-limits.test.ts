// Emails (D-172), caps and pages (D-173) and a rolled key's lifetime (D-174) on the admin surface, on
// PostgreSQL (a real server, test/support/postgres.ts): the suite of test/admin-limits.test.ts.
import { adminLimitsSuite } from '../support/admin-limits-suite.ts';
import { startTestServer } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();
adminLimitsSuite('PostgreSQL', async (o) => startTestServer({ ...o, databaseUrl: await freshDatabase() }));
