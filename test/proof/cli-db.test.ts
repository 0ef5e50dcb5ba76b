// `parley db migrate` / `parley db status` (docs/postgres.md, D-41) against a real PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MIGRATIONS } from '../../src/store/pg/migrate.ts';
import { runCli } from '../support/cli-helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

test('status lists every migration pending (exit 1); migrate applies them; then status exits 0 and migrate is up to date', async () => {
  const url = await freshDatabase();
  const status = await runCli(['db', 'status', '--database-url', url]);
  assert.equal(status.code, 1, status.stderr);
  assert.deepEqual(status.stdout.trim().split('\n'), MIGRATIONS.map((m) => `pending  #${m.version} ${m.name}`));
  const migrated = await runCli(['db', 'migrate'], { env: { DATABASE_URL: url } });
  assert.equal(migrated.code, 0, migrated.stderr);
  assert.equal(migrated.stdout.trim(), `applied ${MIGRATIONS.map((m) => `#${m.version}`).join(', ')}`);
  const after = await runCli(['db', 'status'], { env: { DATABASE_URL: url } });
  assert.equal(after.code, 0, after.stderr);
  assert.match(after.stdout, new RegExp(`^applied  #${MIGRATIONS.length} `, 'm'));
  assert.equal((await runCli(['db', 'migrate', '--database-url', url])).stdout.trim(), 'up to date');
});

test('no database URL, or one of another scheme: a usage error (exit 2) that does not echo the URL', async () => {
  const none = await runCli(['db', 'status'], { env: { DATABASE_URL: undefined } });
  assert.equal(none.code, 2);
  assert.match(none.stderr, /--database-url or set DATABASE_URL/);
  const other = await runCli(['db', 'migrate', '--database-url', 'mysql://u:secret@h/db']);
  assert.equal(other.code, 2);
  assert.doesNotMatch(other.stderr, /secret/);
});
