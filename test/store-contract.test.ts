// One store suite (test/support/store-suite.ts) against the file store; test/proof/pg-store-contract.test.ts
// runs the same suite against PostgreSQL.
import { FileStore } from '../src/store/file/file-store.ts';
import { tempDir } from './support/helpers.ts';
import { storeSuite } from './support/store-suite.ts';

storeSuite('file store', {
  async fresh() {
    const dataDir = await tempDir();
    return { store: new FileStore({ dataDir }), reopen: () => new FileStore({ dataDir }) };
  },
});
