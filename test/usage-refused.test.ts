// D-157 on the file store: requests refused for credits, a rate limit and the storage quota show in the
// usage report per app, day and reason, survive a restart (`refusals.jsonl`), and `parley usage` prints
// them. PostgreSQL's twin: test/proof/pg-usage-refused.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adminToken } from './support/admin-token.ts';
import { runCli, serverEnv } from './support/cli-helpers.ts';
import { startTestServer, tempDir } from './support/helpers.ts';
import { expectedRefusals, refusedToday, refuseSome } from './support/refused-usage.ts';

describe('refused requests in usage (D-157), file store', () => {
  test('counted per app, day and reason; kept over a restart; parley usage prints them', async () => {
    const dataDir = await tempDir();
    const first = await refuseSome({ dataDir });
    try {
      assert.deepEqual(await refusedToday(first), expectedRefusals(), 'counted at once, before they are written');
    } finally {
      await first.close();
    }
    const again = await startTestServer({ dataDir, passwordHashCost: 10 });
    try {
      assert.deepEqual(await refusedToday(again), expectedRefusals(), 'written at close, read at start');
      const env = serverEnv(again.baseUrl, 'app_demo', { PARLEY_ADMIN_TOKEN: await adminToken(again.baseUrl) });
      const out = await runCli(['usage', '--since', '1d'], { env });
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /\nrefused requests:\nDATE +APP +REASON +REFUSED\n/);
      assert.match(out.stdout, /\d{4}-\d\d-\d\d +app_limited +credits \(hard limit at zero\) +2\n/);
      assert.match(out.stdout, /app_limited +rate limit \(429\) +2\n/);
      assert.match(out.stdout, /app_small +storage quota +1\n/);
    } finally {
      await again.close();
    }
  });
});
