// Emails (D-172), caps and pages (D-173) and a rolled key's lifetime (D-174) on the admin surface, on
// the data directory's files (the same suite runs on PostgreSQL in test/proof/pg-admin-limits.test.ts).
import { adminLimitsSuite } from './support/admin-limits-suite.ts';
import { startTestServer } from './support/helpers.ts';

adminLimitsSuite('file store', (o) => startTestServer(o));
