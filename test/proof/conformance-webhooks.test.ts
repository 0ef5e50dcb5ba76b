// Long proof of the webhook cases (D-80…D-87, D-109 extended) beyond the profile and mutant runs: the
// receiver listens where --receiver-url says, and the endpoints a run registers are gone after it,
// also when a case failed half-way (the runner's cleanup deletes what the case could not).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { runConformance } from '../../conformance/run.ts';
import { parseTarget } from '../../conformance/target.ts';
import { startTestServer, TARGET_JSON } from '../support/helpers.ts';
import { startMutantProxy } from '../support/mutant-proxy.ts';
import { WEBHOOK_MUTANTS } from '../support/webhook-mutants.ts';
import { demoAdminToken } from '../support/webhook-receiver.ts';

/** A port nothing listens on now (the receiver takes it right after). */
async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function endpointsLeft(origin: string): Promise<unknown[]> {
  const token = await demoAdminToken(origin);
  const r = await fetch(`${origin}/admin/v1/webhook_endpoints`, { headers: { authorization: `Bearer ${token}` } });
  return ((await r.json()) as { data: unknown[] }).data;
}

describe('the webhook cases', () => {
  test('--receiver-url: the receiver listens at its port and the endpoints are registered beneath it', { timeout: 60_000 }, async (t) => {
    const s = await startTestServer();
    t.after(() => s.close());
    const receiverUrl = `http://127.0.0.1:${await freePort()}/hooks`;
    const registered: string[] = [];
    const r = await runConformance({
      target: parseTarget(TARGET_JSON, { baseUrl: s.baseUrl }),
      profile: 'reference',
      only: 'S5.5-webhook-signature,S5.5-webhook-gone',
      receiverUrl,
      handleSignals: false,
      onCaseExchanges: (_id, exchanges) => {
        for (const ex of exchanges)
          if (ex.request.url.endsWith('/admin/v1/webhook_endpoints') && ex.request.method === 'POST')
            registered.push(JSON.parse(ex.request.body!).url);
      },
    });
    assert.deepEqual(
      r.results.map((c) => `${c.id}: ${c.status} ${c.failure?.message ?? ''}`),
      ['S5.5-webhook-signature: passed ', 'S5.5-webhook-gone: passed '],
    );
    assert.equal(registered.length, 2);
    for (const u of registered) assert.ok(u.startsWith(`${receiverUrl}/parley-conformance-${r.runId}/`), u);
    // The password and the session never reach a report.
    assert.doesNotMatch(JSON.stringify(r), new RegExp(TARGET_JSON.admin.password));
    assert.deepEqual(await endpointsLeft(new URL(s.baseUrl).origin), []);
  });

  test('a case that fails half-way leaves no endpoint behind: the run deletes it', { timeout: 60_000 }, async (t) => {
    const s = await startTestServer();
    t.after(() => s.close());
    const m = WEBHOOK_MUTANTS.find((x) => x.id === 'webhook-410-ignored')!;
    const proxy = await startMutantProxy(s.baseUrl, m.hooks());
    t.after(() => proxy.close());
    const r = await runConformance({
      target: parseTarget(TARGET_JSON, { baseUrl: proxy.baseUrl }),
      profile: 'reference',
      only: 'S5.5-webhook-gone',
      settleTimeoutMs: 3000,
      handleSignals: false,
    });
    assert.equal(r.results[0]!.status, 'failed');
    assert.match(r.results[0]!.failure!.message, m.because);
    assert.deepEqual(r.cleanup.failed, []);
    assert.deepEqual(await endpointsLeft(new URL(s.baseUrl).origin), []);
    // Its evidence shows the sign-in, without the password or the session's cookie.
    const evidence = JSON.stringify(r.results[0]!.failure);
    assert.match(evidence, /\/admin\/v1\/sessions/);
    assert.match(evidence, /\$ADMIN_PASSWORD/);
    assert.doesNotMatch(evidence, new RegExp(TARGET_JSON.admin.password));
    assert.doesNotMatch(evidence, /parley_session=(?!\(hidden\))/);
  });
});
