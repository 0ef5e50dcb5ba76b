// Versioned migrations of the PostgreSQL store (src/store/pg/migrate.ts, D-41), on a real server.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import postgres from 'postgres';
import { MIGRATIONS, migrate, migrationStatus, type Migration } from '../../src/store/pg/migrate.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

const connect = (url: string) => postgres(url, { max: 2, onnotice: () => {} });

test('five instances migrating one empty database at once: each migration runs exactly once, in order', async () => {
  const url = await freshDatabase();
  const clients = Array.from({ length: 5 }, () => connect(url));
  try {
    const applied = await Promise.all(clients.map((sql) => migrate(sql)));
    // Exactly one instance applied everything; the others waited on the lock and found nothing to do.
    assert.deepEqual(applied.flat().sort(), MIGRATIONS.map((m) => m.version).sort());
    const status = await migrationStatus(clients[0]!);
    assert.deepEqual(
      status.applied.map((r) => r.version),
      MIGRATIONS.map((m) => m.version),
    );
    assert.deepEqual(status.pending, []);
    assert.deepEqual(await migrate(clients[0]!), [], 'a second run does nothing');
  } finally {
    await Promise.all(clients.map((sql) => sql.end()));
  }
});

test('status of an empty database lists every migration as pending; a failing migration changes nothing and names itself', async () => {
  const url = await freshDatabase();
  const sql = connect(url);
  try {
    assert.deepEqual(
      (await migrationStatus(sql)).pending.map((m) => m.version),
      MIGRATIONS.map((m) => m.version),
    );
    const broken: Migration[] = [
      ...MIGRATIONS,
      { version: 999, name: 'broken', sql: 'CREATE TABLE half (x int); SELECT no_such_function()' },
    ];
    await assert.rejects(migrate(sql, broken), /migration 999 \(broken\) failed/);
    const tables = await sql`SELECT to_regclass('half') IS NULL AS gone`;
    assert.equal(tables[0]!.gone, true, 'the failed migration was rolled back whole');
    assert.deepEqual(
      (await migrationStatus(sql, broken)).pending.map((m) => m.version),
      [999],
    );
  } finally {
    await sql.end();
  }
});

test('a database migrated by a newer Parley is refused with a clear error', async () => {
  const url = await freshDatabase();
  const sql = connect(url);
  try {
    await migrate(sql, [...MIGRATIONS, { version: 1000, name: 'future', sql: 'SELECT 1' }]);
    await assert.rejects(migrate(sql), /schema is version 1000, newer than this Parley knows/);
  } finally {
    await sql.end();
  }
});
