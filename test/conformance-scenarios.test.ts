// The suite's capability `scenarios` (D-120…D-124, docs/scenarios.md): a target that declares it has its
// disconnect case cut by the server (drop-after) instead of by the suite racing the reply, and its own
// case of a cut resumed exactly once; a target that does not is never sent a scenario.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { exercisedBy, runConformance } from '../conformance/run.ts';
import { parseTarget } from '../conformance/target.ts';
import { startTestServer, TARGET_JSON as targetJson, type TestServer } from './support/helpers.ts';

const ONLY = 'S4.6-left-reply-runs-on,S4.6-scenario-drop-resumes-once';

describe('capability scenarios', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  for (const declared of [true, false]) {
    test(`declared ${declared}: the cut is the server's (Parley-Scenario sent) or the suite's (none sent)`, async () => {
      const capabilities = ['resumable', 'idempotency', 'widget', 'webhooks', ...(declared ? ['scenarios'] : [])];
      const target = parseTarget({ ...targetJson, capabilities }, { baseUrl: s.baseUrl });
      const sent: string[] = [];
      const r = await runConformance({
        target,
        profile: 'reference',
        only: ONLY,
        handleSignals: false,
        onCaseExchanges: (id, exchanges) => {
          for (const ex of exchanges) if (exercisedBy(ex.request, { api: target.baseUrl }) === 'scenarios') sent.push(id);
        },
      });
      const status = Object.fromEntries(r.results.map((c) => [c.id, c.status]));
      assert.deepEqual(status, {
        'S4.6-left-reply-runs-on': 'passed',
        'S4.6-scenario-drop-resumes-once': declared ? 'passed' : 'skipped',
      });
      assert.deepEqual([...new Set(sent)].sort(), declared ? ['S4.6-left-reply-runs-on', 'S4.6-scenario-drop-resumes-once'] : []);
    });
  }
});
