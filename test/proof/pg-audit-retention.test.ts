// D-75: the audit retention setting on PostgreSQL: entries older than `--audit-retention-days` are gone
// after a start, newer ones stay (the file store's case: test/audit-retention.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PgControlPlane } from '../../src/store/pg/control.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { loadFixtures } from '../../src/store/fixtures.ts';
import { actionsAfterStart, writeOld } from '../support/audit-retention.ts';
import { FIXTURES_DIR, tempDir } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

test('the audit retention setting on PostgreSQL (D-75): the default keeps 100 days; 30 days drops the older entry at the next start', async () => {
  const databaseUrl = await freshDatabase();
  const dataDir = await tempDir();
  const fixtures = await loadFixtures(FIXTURES_DIR);
  await writeOld(async (now) => {
    // Opening the store creates the schema, as a server's start does.
    const store = new PgStore({ url: databaseUrl, max: 2 });
    await store.open();
    const c = await PgControlPlane.open(store.sql, { fixtures, now });
    return {
      audit: c.audit,
      close: async () => {
        await c.close();
        await store.close();
      },
    };
  });
  assert.deepEqual(await actionsAfterStart({ dataDir, databaseUrl }), ['test.ten_days', 'test.hundred_days']);
  assert.deepEqual(await actionsAfterStart({ dataDir, databaseUrl }, 30), ['test.ten_days']);
});
