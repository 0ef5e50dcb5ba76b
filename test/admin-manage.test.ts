// Apps (D-71), members (D-72) and the password change (D-67) on the admin surface, on the data
// directory's files (the same suite runs on PostgreSQL in test/proof/pg-admin-manage.test.ts).
import { adminManageSuite } from './support/admin-suite.ts';
import { startTestServer } from './support/helpers.ts';

adminManageSuite('file store', (o) => startTestServer(o));
