// Export format version 2 on PostgreSQL (D-79): the export of a file store whose control plane was
// changed restores on a database as it was, and a database whose control plane was changed refuses it
// (the cases of test/support/data-control.ts; the file store's in test/data-control.test.ts).
import { before, describe, test } from 'node:test';
import { makeSource, refusesChanged, restores, type Source } from '../support/data-control.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

let source: Source;
before(async () => {
  source = await makeSource();
});

describe('export format version 2 on PostgreSQL (D-79)', () => {
  test("restored on a new database: keys, the revocation, the member's password and the audit log are as they were", async () => {
    await restores(source, { databaseUrl: await freshDatabase() });
  });

  test('a database whose control plane was changed is refused, and nothing is imported', async () => {
    await refusesChanged(source, { databaseUrl: await freshDatabase() });
  });
});
