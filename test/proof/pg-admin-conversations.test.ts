// D-73 on PostgreSQL: the admin surface's conversations over HTTP (test/support/admin-conversations-suite.ts),
// migration 7 (conversations deleted before it read as purged at their deletion), and instances
// sweeping at once purge each deleted history once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import postgres from 'postgres';
import { migrate, MIGRATIONS } from '../../src/store/pg/migrate.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { adminConversationsSuite, adminHarness, exportKeepsWhatIsKept } from '../support/admin-conversations-suite.ts';
import { tempDir } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { record, save } from '../support/records.ts';

usePostgres();

/** A restart on the same data directory finds the same database. */
const databases = new Map<string, Promise<string>>();
adminConversationsSuite('PostgreSQL', async (o = {}) => {
  const dataDir = o.dataDir ?? (await tempDir());
  if (!databases.has(dataDir)) databases.set(dataDir, freshDatabase());
  return adminHarness({ ...o, dataDir, databaseUrl: await databases.get(dataDir) });
});

test('migration 7: a conversation deleted before it reads as purged at its deletion; a live one is untouched', async () => {
  const url = await freshDatabase();
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  try {
    await migrate(
      sql,
      MIGRATIONS.filter((m) => m.version <= 5),
    );
    await sql`INSERT INTO conversations (id, app_id, seq, created_at, deleted_at) VALUES ('conv_m1', 'app_demo', 1, 1, 1600000000), ('conv_m2', 'app_demo', 2, 1, NULL)`;
    assert.deepEqual(
      await migrate(sql),
      MIGRATIONS.filter((m) => m.version > 5).map((m) => m.version),
    );
  } finally {
    await sql.end();
  }
  const store = new PgStore({ url, max: 2 });
  await store.open();
  try {
    assert.equal((await store.admin.get('conv_m1'))!.purgedAt, 1_600_000_000);
    assert.equal((await store.admin.get('conv_m2'))!.purgedAt, null);
    assert.deepEqual(await store.admin.restore('conv_m1'), { refused: 'purged' });
  } finally {
    await store.close();
  }
});

test('two instances sweeping at once purge each deleted history once; the kept bytes stay exact', async () => {
  const url = await freshDatabase();
  const [a, b] = [new PgStore({ url, max: 4 }), new PgStore({ url, max: 4 })];
  await a.open();
  await b.open();
  try {
    const ids = Array.from({ length: 40 }, (_, i) => `conv_s${i}`);
    for (const [i, id] of ids.entries()) {
      await a.putConversation(record(id, { seq: i + 1 }));
      await a.saveResponse(save(id, `resp_s${i}`));
      await a.updateConversation(id, (r) => ({ ...r!, deleted_at: 1_700_000_000 + i }));
    }
    // The stats row keeps the kept bytes (the bound's check, D-73) as a count over the rows says.
    const [sum] = await a.sql<{ n: string }[]>`
      SELECT sum(256 + octet_length(metadata) + history_bytes) AS n FROM conversations WHERE deleted_at IS NOT NULL AND purged_at IS NULL`;
    assert.equal(await b.admin.keptBytes('app_demo'), Number(sum!.n));
    const [na, nb] = await Promise.all([
      a.admin.purgeDeleted(1_800_000_000, 1_800_000_000),
      b.admin.purgeDeleted(1_800_000_000, 1_800_000_001),
    ]);
    assert.equal(na + nb, ids.length);
    const [items] = await a.sql<{ n: string }[]>`SELECT count(*) AS n FROM items`;
    assert.equal(Number(items!.n), 0);
    assert.equal(await b.admin.keptBytes('app_demo'), 0);
    for (const id of ids) assert.notEqual((await b.admin.get(id))!.purgedAt, null);
  } finally {
    await a.close();
    await b.close();
  }
});

test('D-73: an export carries a kept history, imported kept into PostgreSQL; a purged one is imported purged', async () => {
  const url = await freshDatabase();
  await exportKeepsWhatIsKept({ databaseUrl: url }, () => new PgStore({ url, max: 2 }));
});
