// The client kit on the clients the project ships (docs/client-kit.md, "What the project ships, judged"):
// the CLI passes every case it does, a client generated from /openapi.json fails exactly the cases the
// docs file as known (D-133), and the widget, in Chromium, fails none but those the docs file (D-135).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { CLIENT_CASES, runClientKit } from '../../conformance/client/kit.ts';
import type { RunResults } from '../../conformance/results.ts';
import { chromiumMissing } from '../support/browser.ts';
import { NO_COVERAGE, startTestServer, tempDir } from '../support/helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const exec = promisify(execFile);

/** The cases docs/client-kit.md files as known for `client`, each with the rest of its row. */
async function knownFailures(client: string): Promise<Array<{ id: string; row: string }>> {
  const docs = await fs.readFile(path.join(ROOT, 'docs/client-kit.md'), 'utf8');
  const block = new RegExp(`<!-- known-failures:${client} -->([\\s\\S]*?)<!-- /known-failures:${client} -->`).exec(docs)![1]!;
  return block.split('\n').flatMap((row) => [...row.matchAll(/`(K-[a-z0-9-]+(?:\/should)?)`/g)].map((m) => ({ id: m[1]!, row })));
}

const notPassed = (r: RunResults) =>
  r.results
    .filter((c) => c.status !== 'passed')
    .map((c) => `${c.id} ${c.status}`)
    .sort();

test('the CLI, through its adapter, passes every case it does; cancel is skipped', { timeout: 300_000 }, async () => {
  const r = await runClientKit({
    cmd: `node ${path.join(ROOT, 'conformance/client/adapters/parley-cli.mjs')}`,
    cases: CLIENT_CASES,
    timeoutMs: 60_000,
  });
  assert.deepEqual(notPassed(r), ['K-cancel skipped']);
});

test('a client generated from /openapi.json fails exactly the cases docs/client-kit.md files as known (D-133)', {
  timeout: 300_000,
}, async () => {
  const known = (await knownFailures('openapi-fetch')).map((k) => `${k.id} failed`).sort();
  // The types are generated from the live document, as a team would, beside the client.
  const dir = await tempDir('parley-kit-openapi-');
  const server = await startTestServer();
  try {
    await fs.writeFile(path.join(dir, 'openapi.json'), await (await fetch(new URL('/openapi.json', server.baseUrl))).text());
  } finally {
    await server.close();
  }
  await exec(path.join(ROOT, 'node_modules/.bin/openapi-typescript'), ['openapi.json', '--output', 'schema.ts'], {
    cwd: dir,
    env: { ...process.env, ...NO_COVERAGE },
  });
  await fs.copyFile(path.join(ROOT, 'test/fixtures/kit-clients/openapi-fetch.ts'), path.join(dir, 'kit-openapi-fetch.ts'));
  await fs.symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  await fs.writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  const r = await runClientKit({
    cmd: `node --import tsx ${path.join(dir, 'kit-openapi-fetch.ts')}`,
    cases: CLIENT_CASES,
    timeoutMs: 60_000,
  });
  assert.deepEqual(notPassed(r), known);
});

test('the widget, in Chromium, passes every case of the tasks it does but those docs/client-kit.md files as known (D-134, D-135)', {
  skip: chromiumMissing(),
  timeout: 300_000,
}, async () => {
  const known = await knownFailures('widget');
  const r = await runClientKit({
    cmd: `node ${path.join(ROOT, 'test/fixtures/kit-clients/parley-widget.mjs')}`,
    cases: CLIENT_CASES,
    timeoutMs: 60_000,
    widget: true,
  });
  const failed = r.results.filter((c) => c.status === 'failed' || c.status === 'errored');
  const filed = new Set(known.map((k) => k.id));
  assert.deepEqual(
    failed.filter((c) => !filed.has(c.id)).map((c) => `${c.id}: ${c.failure?.message}\n${c.failure?.response}`),
    [],
    'a failure the docs do not file',
  );
  // A row that says "always" fails on every run; "when" rows depend on when the browser reads (D-135).
  const always = known.filter((k) => /\|\s*always\s*\|\s*$/.test(k.row)).map((k) => k.id);
  assert.ok(always.length > 0);
  for (const id of always)
    assert.ok(
      failed.some((c) => c.id === id),
      `${id} is filed as failing always, and passed`,
    );
  // It does send-stream and cancel (a visitor's send, and Stop); every other task is skipped, never passed.
  assert.deepEqual(
    r.results.filter((c) => c.status === 'skipped').map((c) => c.id),
    CLIENT_CASES.filter((c) => c.task !== 'send-stream' && c.task !== 'cancel').map((c) => c.id),
  );
});
