// D-92 on PostgreSQL: the widget's share of the storage quota is checked in the create's transaction,
// and its budget's shares (per visitor, per address) and refunds are rows every instance counts.
// The file store's run and the process-local caps (streams, detached replies): test/proof/widget-starve.test.ts.
import { before, test } from 'node:test';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import assert from 'node:assert/strict';
import { startTestServer, tempDir } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { budgetSharesScenario, starveFixtures, storageShareScenario } from '../support/widget-starve.ts';

usePostgres();

let fixturesDir: string;
before(async () => {
  fixturesDir = await starveFixtures();
});

test("widget messages fill the widget's share of the quota; the team's REST creates and sends still succeed (D-92)", async () => {
  const s = await startTestServer({ fixturesDir, databaseUrl: await freshDatabase() });
  try {
    assert.ok(s.store instanceof PgStore);
    await storageShareScenario(s);
  } finally {
    await s.close();
  }
});

test('a 404 costs nothing (across a restart); a visitor, then an address, spends only its share of the day (D-92)', async () => {
  const databaseUrl = await freshDatabase();
  const dataDir = await tempDir();
  await budgetSharesScenario(() => startTestServer({ fixturesDir, databaseUrl, dataDir }));
});
