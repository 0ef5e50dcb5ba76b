// D-157, proved on each store (test/usage-refused.test.ts on files, test/proof/pg-usage-refused.test.ts on
// PostgreSQL): requests refused for credits (a hard plan at zero), a rate limit (a 429) and the storage
// quota are counted per app, UTC day and reason in `GET /admin/v1/usage`'s `refused`, and the counts
// outlive a restart.
import assert from 'node:assert/strict';
import type { ParleyOptions } from '../../src/app.ts';
import { dateOf, dayOf } from '../../src/core/credits.ts';
import { adminGet, adminToken } from './admin-token.ts';
import { draft } from './control-suite.ts';
import { startTestServer, type TestServer } from './helpers.ts';

/** The refusals the steps below make, as the report lists them (today's, by app and reason). */
export function expectedRefusals(): unknown[] {
  const date = dateOf(dayOf(Date.now() / 1000));
  return [
    { app_id: 'app_limited', date, reason: 'credits', requests: 2 },
    { app_id: 'app_limited', date, reason: 'rate_limit', requests: 2 },
    { app_id: 'app_small', date, reason: 'storage_quota', requests: 1 },
  ];
}

/** `refused` of the team's usage report (today's only, so that a run near midnight reads one day). */
export async function refusedToday(server: TestServer): Promise<unknown[]> {
  const date = dateOf(dayOf(Date.now() / 1000));
  const r = await adminGet(server.baseUrl, await adminToken(server.baseUrl), `/usage?since=${date}&until=${date}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.refused;
}

/**
 * Starts a server with `opts`, makes the refusals of `expectedRefusals` (the `limited` plan hard at zero
 * credits, its 5 requests a minute passed by 2, and `tiny`'s quota below one conversation) and returns it.
 */
export async function refuseSome(opts: ParleyOptions & { dataDir?: string }): Promise<TestServer> {
  const server = await startTestServer({ passwordHashCost: 10, ...opts });
  await server.control.apply((d) => {
    for (const p of d.plans) p.credits = { ...p.credits, monthly_allowance: 0 };
    d.plans.find((p) => p.id === 'limited')!.credits.limit = 'hard';
    d.plans.find((p) => p.id === 'tiny')!.storage_bytes = 100;
    return [draft('team_demo', 'plan.updated')];
  });
  const statuses: string[] = [];
  const call = async (app: string, path: string, body: unknown) => {
    const r = await server.call('POST', `/apps/${app}${path}`, body);
    statuses.push(`${r.status}${r.body?.error?.code ? ` ${r.body.error.code}` : ''}`);
  };
  for (let i = 0; i < 2; i++) await call('app_limited', '/completions', { prompt: 'hello' });
  for (let i = 0; i < 7; i++) await call('app_limited', '/conversations', {});
  await call('app_small', '/conversations', { metadata: { note: 'x'.repeat(50) } });
  assert.deepEqual(statuses, [
    '429 credits_exhausted',
    '429 credits_exhausted',
    ...Array(5).fill('200'),
    // A plan's rate limit is §7's rate_limit_exceeded, which has no code.
    '429',
    '429',
    '429 storage_quota_exceeded',
  ]);
  return server;
}
