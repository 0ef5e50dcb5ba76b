// The scripts suite (test/support/scripts-suite.ts) on the file store; test/proof/pg-scripts.test.ts runs
// it on PostgreSQL with two instances.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { APP, startTestServer } from './support/helpers.ts';
import { scriptsSuite } from './support/scripts-suite.ts';

scriptsSuite('file store', {
  async start() {
    const server = await startTestServer();
    return { servers: [server], close: () => server.close() };
  },
});

test('D-122, D-125: with scenarios off a request carrying a test id is refused and counted nowhere', async () => {
  const server = await startTestServer({ scenarios: false });
  try {
    const r = await server.call('GET', `/apps/${APP}/conversations`, undefined, { headers: { 'parley-test-id': 'off-1' } });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'scenarios_disabled');
    assert.equal((await server.call('GET', `/apps/${APP}/test-runs/off-1`)).status, 404);
  } finally {
    await server.close();
  }
});
