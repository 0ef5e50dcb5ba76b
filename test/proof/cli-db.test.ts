// `parley db migrate` / `parley db status` (docs/postgres.md, D-41) against a real PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import postgres from 'postgres';
import { MIGRATION_LOCK, MIGRATIONS } from '../../src/store/pg/migrate.ts';
import { runCli, startCli, waitFor } from '../support/cli-helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

test('status lists every migration pending (exit 1); migrate applies them; then status exits 0 and migrate is up to date', async () => {
  const url = await freshDatabase();
  const status = await runCli(['db', 'status', '--database-url', url]);
  assert.equal(status.code, 1, status.stderr);
  assert.deepEqual(
    status.stdout.trim().split('\n'),
    MIGRATIONS.map((m) => `pending  #${m.version} ${m.name}`),
  );
  const migrated = await runCli(['db', 'migrate'], { env: { DATABASE_URL: url } });
  assert.equal(migrated.code, 0, migrated.stderr);
  assert.equal(migrated.stdout.trim(), `applied ${MIGRATIONS.map((m) => `#${m.version}`).join(', ')}`);
  assert.doesNotMatch(migrated.stderr, /waiting/, 'nobody held the lock');
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

test('migrate while another migrator holds the lock: says that it waits, applies nothing until the lock is freed, then migrates', {
  timeout: 30_000,
}, async () => {
  const url = await freshDatabase();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const other = await sql.reserve();
  try {
    // D-41: the lock a starting server or another `parley db migrate` takes around the migrations.
    await other`SELECT pg_advisory_lock(${MIGRATION_LOCK})`;
    const run = startCli(['db', 'migrate', '--database-url', url]);
    await waitFor(run.stderr, /waiting for another migration to finish/);
    const [held] = await other<{ table: string | null }[]>`SELECT to_regclass('schema_migrations')::text AS table`;
    assert.equal(held!.table, null, 'it migrated without the lock');
    await other`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`;
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `applied ${MIGRATIONS.map((m) => `#${m.version}`).join(', ')}`);
  } finally {
    other.release();
    await sql.end();
  }
});
