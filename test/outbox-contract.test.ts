// One outbox suite (test/support/outbox-suite.ts) and the fair delivery over it (test/support/fair-delivery.ts)
// against the file store; test/proof/pg-outbox-contract.test.ts runs the same against PostgreSQL.
import { FileStore } from '../src/store/file/file-store.ts';
import { tempDir } from './support/helpers.ts';
import { fairDeliverySuite } from './support/fair-delivery.ts';
import { type OutboxHarness, outboxSuite } from './support/outbox-suite.ts';

const files: OutboxHarness = {
  async fresh() {
    const dataDir = await tempDir();
    return { make: (changeEvents) => new FileStore({ dataDir, changeEvents }) };
  },
};
outboxSuite('file store', files);
fairDeliverySuite('file store', files);
