// The scenario directives on the file store (test/support/scenario-suite.ts; PostgreSQL: test/proof/pg-scenarios.test.ts).
import { startTestServer } from './support/helpers.ts';
import { scenarioSuite } from './support/scenario-suite.ts';

scenarioSuite('file store', () => startTestServer());
