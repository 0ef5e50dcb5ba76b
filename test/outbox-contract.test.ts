// One outbox suite (test/support/outbox-suite.ts) against the file store; test/proof/pg-outbox-contract.test.ts
// runs the same suite against PostgreSQL.
import { FileStore } from '../src/store/file/file-store.ts';
import { tempDir } from './support/helpers.ts';
import { outboxSuite } from './support/outbox-suite.ts';

outboxSuite('file store', {
  async fresh() {
    const dataDir = await tempDir();
    return { make: (changeEvents) => new FileStore({ dataDir, changeEvents }) };
  },
});
