// The scenario directives on PostgreSQL (test/scenarios.test.ts: the file store).
import { startTestServer } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { scenarioSuite } from '../support/scenario-suite.ts';

usePostgres();
scenarioSuite('PostgreSQL', async () => startTestServer({ databaseUrl: await freshDatabase() }));
