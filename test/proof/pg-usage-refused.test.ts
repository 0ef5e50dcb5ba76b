// D-157 on PostgreSQL: requests refused for credits, a rate limit and the storage quota show in the usage
// report per app, day and reason (`usage_refusals`, migration 13, plus the instance's counts not yet
// written), the same on another instance once written, and after a restart. The file store's twin:
// test/usage-refused.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import postgres, { type Sql } from 'postgres';
import { startTestServer, type TestServer } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { expectedRefusals, refusedToday, refuseSome } from '../support/refused-usage.ts';

usePostgres();

let url: string;
let sql: Sql;
const servers: TestServer[] = [];
before(async () => {
  url = await freshDatabase();
  sql = postgres(url, { max: 1, onnotice: () => {} });
});
after(async () => {
  await Promise.allSettled(servers.map((s) => s.close()));
  await sql?.end();
});

describe('refused requests in usage (D-157), PostgreSQL', () => {
  test('counted per app, day and reason; written in one row each; read by another instance and after a restart', async () => {
    const a = await refuseSome({ databaseUrl: url });
    servers.push(a);
    const b = await startTestServer({ databaseUrl: url, passwordHashCost: 10 });
    servers.push(b);
    assert.deepEqual(await refusedToday(a), expectedRefusals(), 'the instance that refused sees them at once');
    await a.close();
    const rows = await sql<{ app_id: string; reason: string; n: string }[]>`
      SELECT app_id, reason, n FROM usage_refusals ORDER BY app_id, reason`;
    assert.deepEqual(
      rows.map((r) => [r.app_id, r.reason, Number(r.n)]),
      [
        ['app_limited', 'credits', 2],
        ['app_limited', 'rate_limit', 2],
        ['app_small', 'storage_quota', 1],
      ],
    );
    assert.deepEqual(await refusedToday(b), expectedRefusals(), 'another instance reads the rows');
    const c = await startTestServer({ databaseUrl: url, passwordHashCost: 10 });
    servers.push(c);
    assert.deepEqual(await refusedToday(c), expectedRefusals());
  });
});
