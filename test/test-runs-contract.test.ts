// The test-run suite (test/support/test-runs-suite.ts) against one process's memory (the file store's
// backend); test/proof/pg-test-runs-contract.test.ts runs it against PostgreSQL.
import { MemoryTestRuns } from '../src/store/file/test-runs.ts';
import { testRunsSuite } from './support/test-runs-suite.ts';

testRunsSuite('memory', {
  async fresh() {
    const runs = new MemoryTestRuns();
    return { runs, twin: runs, close: () => runs.close() };
  },
});
