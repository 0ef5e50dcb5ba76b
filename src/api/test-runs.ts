// D-125: what Parley saw of a test id (docs/scenarios.md): the requests of its run, for a client's test to assert on.
import type { RouteDef } from '../http/router.ts';
import type { TestRunService } from '../services/test-runs.ts';
import type { RestRoute } from './rows.ts';

export function testRunRoutes(runs: TestRunService): RouteDef<RestRoute>[] {
  return [
    {
      method: 'GET',
      pattern: '/apps/:app_id/test-runs/:test_id',
      route: {
        operationId: 'getTestRun',
        summary: 'D-125 The requests Parley saw of a test id (scripts, docs/scenarios.md)',
        ok: 'TestRun',
        handle: async (ctx) => runs.view(ctx.app.id, ctx.params.test_id!),
      },
    },
  ];
}
