// D-94 on PostgreSQL: an import applies the API bounds and the target apps, and names the line of any
// refusal (the cases in test/support/import-bounds.ts; test/import-bounds.test.ts runs them on files).
import { test } from 'node:test';
import { importBounds } from '../support/import-bounds.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

test('D-94: an import into PostgreSQL applies the API bounds and the target apps, and names the line of any refusal', async () => {
  await importBounds({ databaseUrl: await freshDatabase() });
});
