// D-94: an import applies the API bounds and the target apps, and names the line of any refusal (the cases
// in test/support/import-bounds.ts; test/proof/pg-import-bounds.test.ts runs them on PostgreSQL).
import { test } from 'node:test';
import { tempDir } from './support/helpers.ts';
import { importBounds } from './support/import-bounds.ts';

test('D-94: an import into the file store applies the API bounds and the target apps, and names the line of any refusal', async () => {
  await importBounds({ dataDir: await tempDir() });
});
