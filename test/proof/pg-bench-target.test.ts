// `parley bench --target` (the command as shipped, a process of its own) against Parley on PostgreSQL
// as a process: every figure measured beside its floor, and nothing the run made left behind.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { runCli } from '../support/cli-helpers.ts';
import { startFleet, type Fleet } from '../support/fleet.ts';
import { TARGET, tempDir } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

test('parley bench --target measures Parley on PostgreSQL against its floor and cleans up', { timeout: 180_000 }, async (t) => {
  const fleet: Fleet = await startFleet(1, { databaseUrl: await freshDatabase() });
  t.after(() => fleet.close());
  const base = fleet.instances[0]!.base;
  const file = path.join(await tempDir(), 'target.json');
  await fs.writeFile(file, JSON.stringify({ ...TARGET, base_url: base }));
  const r = await runCli(['bench', '--target', file, '--rounds', '2', '--samples', '2', '--requests', '40', '--json'], { via: 'process' });
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout) as {
    figures: Array<{ id: string; error?: string; skipped?: string; ratio?: { median: number } }>;
    leftovers: string[];
  };
  for (const f of report.figures) {
    assert.equal(f.error ?? f.skipped, undefined, `${f.id}: ${f.error ?? f.skipped}`);
    assert.ok(Number.isFinite(f.ratio?.median), `${f.id} has a ratio`);
  }
  assert.deepEqual(report.leftovers, []);
  const list = await fetch(`${base}/apps/app_demo/conversations?limit=100`, { headers: { authorization: `Bearer ${TARGET.api_key}` } });
  const seeded = ((await list.json()) as { data: Array<{ title: string | null }> }).data.filter((c) => c.title?.startsWith('parley bench'));
  assert.deepEqual(seeded, [], 'no conversation the bench made is left');
  t.diagnostic(r.stdout.length > 0 ? `${report.figures.length} figures` : '');
});
