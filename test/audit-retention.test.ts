// D-75: the audit log's retention is a setting (`--audit-retention-days`, AUDIT_RETENTION_DAYS, default
// 365) that both stores honour when they open: entries older than it are gone after a start, newer
// ones stay. The file store here; test/proof/pg-audit-retention.test.ts on PostgreSQL.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FileControlPlane } from '../src/store/file/control.ts';
import { loadFixtures } from '../src/store/fixtures.ts';
import { actionsAfterStart, writeOld } from './support/audit-retention.ts';
import { FIXTURES_DIR, tempDir } from './support/helpers.ts';

describe('the audit retention setting (D-75)', () => {
  test('the file store: the default keeps 100 days; 30 days drops the older entry at the next start', async () => {
    const dataDir = await tempDir();
    const fixtures = await loadFixtures(FIXTURES_DIR);
    await writeOld((now) => FileControlPlane.open(dataDir, { fixtures, now }));
    assert.deepEqual(await actionsAfterStart({ dataDir }), ['test.ten_days', 'test.hundred_days']);
    assert.deepEqual(await actionsAfterStart({ dataDir }, 30), ['test.ten_days']);
    assert.deepEqual(await actionsAfterStart({ dataDir }), ['test.ten_days'], 'gone for good: the journal was compacted');
  });
});
