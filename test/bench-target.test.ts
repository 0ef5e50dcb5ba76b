// `parley bench --target` (conformance/bench/): its figures come from what the implementation does,
// its floor answers the target's own bytes, it deletes what it made, and it refuses a target elsewhere.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runBench } from '../conformance/bench/run.ts';
import { parseTarget } from '../conformance/target.ts';
import { runCli } from './support/cli-helpers.ts';
import { startTestServer, TARGET_JSON, tempDir, type TestServer } from './support/helpers.ts';

/**
 * An implementation slowed on purpose: a proxy in front of Parley that holds each cancel `holdMs`
 * before passing it on, so that the reply stops that much later; everything else streams through.
 */
async function slowCancelProxy(upstream: string, holdMs: number): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const up = new URL(upstream);
  const server = http.createServer((req, res) => {
    const forward = () => {
      const out = http.request({ host: up.hostname, port: up.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      out.on('error', () => res.destroy());
      req.pipe(out);
    };
    if (req.method === 'POST' && /\/cancel$/.test(req.url ?? '')) setTimeout(forward, holdMs);
    else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const small = { rounds: 1, samples: 1, requests: { read: 4, write: 4 }, maxSeconds: 60 };

describe('parley bench --target', () => {
  let parley: TestServer;
  before(async () => {
    parley = await startTestServer();
  });
  after(async () => {
    await parley?.close();
  });

  test('the cancel figure moves by the time an implementation takes to act on a cancel', async () => {
    const holdMs = 300;
    const proxy = await slowCancelProxy(parley.baseUrl, holdMs);
    try {
      const target = parseTarget({ ...TARGET_JSON, base_url: proxy.baseUrl });
      const report = await runBench({ ...small, target, only: ['cancel'] });
      const cancel = report.figures.find((f) => f.id === 'cancel')!;
      assert.equal(cancel.error, undefined, cancel.error);
      assert.ok(
        cancel.target!.median >= holdMs,
        `the cancel figure ${cancel.target!.median} ms counts the ${holdMs} ms the cancel was held`,
      );
    } finally {
      await proxy.close();
    }
  });

  test('every figure is measured against its floor, and what the run made is deleted', async () => {
    const list = async () => (await parley.call('GET', '/apps/app_demo/conversations?limit=100')).body.data.length as number;
    const before = await list();
    const target = parseTarget({ ...TARGET_JSON, base_url: parley.baseUrl });
    const report = await runBench({ ...small, target });
    for (const f of report.figures) {
      assert.equal(f.error ?? f.skipped, undefined, `${f.id}: ${f.error ?? f.skipped}`);
      assert.ok(f.target!.median > 0 && f.floor!.median > 0, `${f.id} has both figures`);
      assert.ok(Number.isFinite(f.ratio!.median), `${f.id} has a ratio`);
    }
    assert.deepEqual(report.leftovers, []);
    assert.equal(await list(), before, 'the conversations the bench made are deleted');
  });

  test('a target that is not on this machine is refused before any request, unless --remote', async () => {
    const file = path.join(await tempDir(), 'target.json');
    // A documentation address (RFC 5737): nothing is sent there, the refusal comes first.
    await fs.writeFile(file, JSON.stringify({ ...TARGET_JSON, base_url: 'http://192.0.2.10:8787/v1' }));
    const r = await runCli(['bench', '--target', file]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /192\.0\.2\.10:8787\/v1 is not on this machine.*--remote/);
  });
});
