// The suite's own command as a process (long tier): exit codes, the summary line, redaction.
// keeps its exit-code and output contract, its reporters render, and docs/conformance.md is current.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { CASES } from '../../conformance/run.ts';
import { FIXTURES_DIR, NO_COVERAGE, startTestServer, tempDir, type TestServer, TARGET_JSON as targetJson } from '../support/helpers.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

describe('the command (node --import tsx conformance/main.ts)', () => {
  async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'conformance/main.ts', ...args], {
        cwd: ROOT,
        env: { ...process.env, ...NO_COVERAGE },
        timeout: 60_000,
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }
  const targetFile = path.join(FIXTURES_DIR, 'target.json');

  test('a passing run exits 0, redacts nothing it needs to, ends with the summary line', async () => {
    const r = await cli(['--target', targetFile, '--base-url', s.baseUrl, '--only', 'S4.8-*']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stdout.trimEnd().split('\n').at(-1), 'conformance: 3 passed, 0 failed, 0 flaky, 0 skipped, 0 errored');
  });

  test('a failing run exits 1 and shows the request as curl with the key redacted', async () => {
    // A target whose app_id has streaming on breaks S4.8-config-shape's expectation.
    const dir = await tempDir();
    const file = path.join(dir, 'target.json');
    await fs.writeFile(file, JSON.stringify({ ...targetJson, app_id: targetJson.apps.stream_default }));
    const out = path.join(dir, 'report.xml');
    const r = await cli(['--target', file, '--base-url', s.baseUrl, '--only', 'S4.8-config-shape', '--reporter', 'junit', '--out', out]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /curl -sS -X GET '.*\/config' -H "authorization: Bearer \$API_KEY"/);
    assert.ok(!r.stdout.includes(targetJson.api_key), 'the key is in the output');
    assert.equal(r.stdout.trimEnd().split('\n').at(-1), 'conformance: 0 passed, 1 failed, 0 flaky, 0 skipped, 0 errored');
    assert.match(await fs.readFile(out, 'utf8'), /<failure message="\[stream, generative_ui\]/);
  });

  test('--bail shows the failure once', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'target.json');
    await fs.writeFile(file, JSON.stringify({ ...targetJson, app_id: targetJson.apps.stream_default }));
    const r = await cli(['--target', file, '--base-url', s.baseUrl, '--only', 'S4.8-*', '--bail']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout.split('✗ S4.8-config-shape [MUST').length - 1, 1, r.stdout);
    assert.equal(r.stdout.trimEnd().split('\n').at(-1), 'conformance: 0 passed, 1 failed, 0 flaky, 2 skipped, 0 errored');
  });

  test('an --only that matches no case exits 2 with the reason', async () => {
    const r = await cli(['--target', targetFile, '--base-url', s.baseUrl, '--only', 'S4.8-typo']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--only 'S4\.8-typo' matches no case of profile spec/);
    assert.equal(r.stdout.trimEnd().split('\n').at(-1), 'conformance: 0 passed, 0 failed, 0 flaky, 0 skipped, 0 errored');
  });

  test('usage errors and an unreachable target exit 2', async () => {
    assert.equal((await cli(['--target', targetFile, '--profile', 'strict'])).code, 2);
    const settle = await cli(['--target', targetFile, '--settle-timeout', 'soon']);
    assert.equal(settle.code, 2);
    assert.match(settle.stderr, /--settle-timeout must be a positive integer/);
    assert.equal((await cli(['--bogus'])).code, 2);
    assert.equal((await cli([])).code, 2);
    assert.equal((await cli(['--target', '/nonexistent/target.json'])).code, 2);
    const closed = await startTestServer();
    const url = closed.baseUrl;
    await closed.close();
    const r = await cli(['--target', targetFile, '--base-url', url]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unreachable/);
  });

  test('--list prints every selected case with its level and needs', async () => {
    const r = await cli(['--list', '--profile', 'reference']);
    assert.equal(r.code, 0);
    for (const c of CASES) assert.ok(r.stdout.includes(c.id), c.id);
    assert.match(r.stdout, /S4\.8-config-generative-ui {2}MUST .*\[needs apps\.generative_ui\]/);
  });
});
