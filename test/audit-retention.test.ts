// D-75: the audit log's retention is a setting (`--audit-retention-days`, AUDIT_RETENTION_DAYS, default
// 365) that both stores honour when they open: entries older than it are gone after a start, newer
// ones stay.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FileControlPlane } from '../src/store/file/control.ts';
import { PgControlPlane } from '../src/store/pg/control.ts';
import { PgStore } from '../src/store/pg/pg-store.ts';
import { loadFixtures } from '../src/store/tenants.ts';
import { draft } from './support/control-suite.ts';
import { FIXTURES_DIR, startTestServer, tempDir } from './support/helpers.ts';
import { freshDatabase, usePostgres } from './support/postgres.ts';

usePostgres();

const DAY = 86_400_000;

/** Entries of 100 days and of 10 days ago, written by a control plane whose clock says so. */
async function writeOld(
  open: (now: () => number) => Promise<{ audit: { append: FileControlPlane['audit']['append'] }; close(): Promise<void> }>,
) {
  for (const [age, action] of [
    [100, 'test.hundred_days'],
    [10, 'test.ten_days'],
  ] as const) {
    const c = await open(() => Date.now() - age * DAY);
    try {
      await c.audit.append([draft('team_demo', action)]);
    } finally {
      await c.close();
    }
  }
}

async function actionsAfterStart(where: { dataDir: string; databaseUrl?: string }, days?: number): Promise<string[]> {
  const server = await startTestServer({ ...where, ...(days === undefined ? {} : { auditRetentionDays: days }) });
  try {
    const page = await server.control.audit.list({ team_id: 'team_demo', limit: 100 });
    return page.data.map((a) => a.action).filter((a) => a.startsWith('test.'));
  } finally {
    await server.close();
  }
}

describe('the audit retention setting (D-75)', () => {
  test('the file store: the default keeps 100 days; 30 days drops the older entry at the next start', async () => {
    const dataDir = await tempDir();
    const fixtures = await loadFixtures(FIXTURES_DIR);
    await writeOld((now) => FileControlPlane.open(dataDir, { fixtures, now }));
    assert.deepEqual(await actionsAfterStart({ dataDir }), ['test.ten_days', 'test.hundred_days']);
    assert.deepEqual(await actionsAfterStart({ dataDir }, 30), ['test.ten_days']);
    assert.deepEqual(await actionsAfterStart({ dataDir }), ['test.ten_days'], 'gone for good: the journal was compacted');
  });

  test('PostgreSQL: the same', async () => {
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
});
