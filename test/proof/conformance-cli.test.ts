// The conformance suite's own command as a process (conformance/main.ts): exit codes, one line on stderr,
// D-108's hint, --write-baseline and --expected-failures, --rate-limit over a whole run. The everyday
// tier checks the same rules in-process (test/conformance-ci.test.ts); these need the process.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { baselineText, parseBaseline } from '../../conformance/baseline.ts';
import { type CaseResult, exitCode, type RunResults } from '../../conformance/run.ts';
import { FIXTURES_DIR, startTestServer, tempDir, type TestServer, TARGET_JSON as targetJson } from '../support/helpers.ts';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, ['--import', 'tsx', 'conformance/main.ts', ...args], {
      cwd: ROOT,
      timeout: 60_000,
      env: { ...process.env, PARLEY_API_KEY: '', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function writeTarget(json: unknown): Promise<string> {
  const file = path.join(await tempDir(), 'target.json');
  await fs.writeFile(file, JSON.stringify(json));
  return file;
}

const result = (id: string, status: CaseResult['status']): CaseResult => ({
  id,
  section: '4.8',
  level: 'MUST',
  description: id,
  status,
  ms: 0,
  ...(status === 'failed' || status === 'flaky' ? { failure: { message: `${id} broke\nsecond line` } } : {}),
});

describe('the command as a process', () => {
  test('D-108: a target that does not answer at its base_url: exit 2, and the hint to pass --base-url (PARLEY_BASE_URL named when it is another)', async () => {
    // Port 2 on loopback (below the ephemeral range, so no port-0 server gets it): nothing listens there,
    // whereas a port another test's server just closed may be taken by a test running beside this one.
    const closed = { baseUrl: 'http://127.0.0.1:2/v1' };
    const file = await writeTarget({ ...targetJson, base_url: closed.baseUrl });
    const r = await cli(['--target', file]);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /^conformance: target http:\/\/127\.0\.0\.1:\d+\/v1 is unreachable: connection refused \(is the server running\?\); if the server listens elsewhere, run again with --base-url <its base URL, ending in \/v1>, which overrides the target file's base_url\n$/,
    );
    const named = await cli(['--target', file], { PARLEY_BASE_URL: s.baseUrl });
    assert.match(
      named.stderr,
      new RegExp(`; PARLEY_BASE_URL is ${s.baseUrl.replace(/[.]/g, '\\.')}: to test that one, run again with --base-url `),
    );
    // Given --base-url, the URL is the one asked for: no hint.
    assert.doesNotMatch((await cli(['--target', file, '--base-url', closed.baseUrl])).stderr, /--base-url/);
  });

  test('the command: exit 2 with one line on stderr; a missing key names --api-key and PARLEY_API_KEY', async () => {
    const wrong = await cli(['--target', await writeTarget({ ...targetJson, api_key: 'sk_live_wrong' }), '--base-url', s.baseUrl]);
    assert.equal(wrong.code, 2);
    assert.equal(wrong.stderr.trim().split('\n').length, 1, wrong.stderr);
    assert.match(wrong.stderr, /^conformance: the key was refused/);
    assert.equal(wrong.stdout.trimEnd().split('\n').at(-1), 'conformance: 0 passed, 0 failed, 0 flaky, 0 skipped, 0 errored');
    const { api_key: _, ...noKey } = targetJson;
    const file = await writeTarget(noKey);
    const missing = await cli(['--target', file, '--base-url', s.baseUrl]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /api_key is missing: pass --api-key KEY or set PARLEY_API_KEY/);
    const fromEnv = await cli(['--target', file, '--base-url', s.baseUrl, '--only', 'S4.8-config-shape'], {
      PARLEY_API_KEY: targetJson.api_key,
    });
    assert.equal(fromEnv.code, 0, fromEnv.stderr);
    const typo = await cli([
      '--target',
      await writeTarget({ ...targetJson, apps: { generativ_ui: 'app_genui' } }),
      '--base-url',
      s.baseUrl,
    ]);
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /unknown key apps\.generativ_ui \(did you mean apps\.generative_ui\?\)/);
  });

  test('exit codes: a skip fails the run only with --fail-on-skip', async () => {
    const run = {
      results: [{ id: 'S9-x', status: 'skipped' }],
      summary: { passed: 0, failed: 0, flaky: 0, skipped: 1, errored: 0 },
    } as unknown as RunResults;
    assert.equal(exitCode(run), 0);
    assert.equal(exitCode(run, { failOnSkip: true }), 1);
    // Without capabilities (a declared widget would make publishable_key required, D-105 extended).
    const { publishable_key: _, capabilities: _c, ...noPk } = targetJson;
    const args = ['--target', await writeTarget(noPk), '--base-url', s.baseUrl, '--only', 'S5-publishable-key-refused'];
    assert.equal((await cli(args)).code, 0);
    const strict = await cli([...args, '--fail-on-skip']);
    assert.equal(strict.code, 1);
    assert.equal(strict.stdout.trimEnd().split('\n').at(-1), 'conformance: 0 passed, 0 failed, 0 flaky, 1 skipped, 0 errored');
  });

  test('--write-baseline then --expected-failures: the same failing run exits 0, and 1 once the case passes', async () => {
    const dir = await tempDir();
    const broken = await writeTarget({ ...targetJson, app_id: targetJson.apps.stream_default });
    const file = path.join(dir, 'baseline.txt');
    const first = await cli(['--target', broken, '--base-url', s.baseUrl, '--only', 'S4.8-config-shape', '--write-baseline', file]);
    assert.equal(first.code, 1);
    const written = await fs.readFile(file, 'utf8');
    assert.match(written, /^S4\.8-config-shape \[stream, generative_ui\]/m);
    assert.match(
      baselineText({
        suite: { name: 'n', version: '1' },
        results: [{ ...result('S4.8-config-shape', 'flaky'), reason: 'failed 1 of 2 tries' }],
      } as RunResults),
      /\nS4\.8-config-shape \[flaky\] S4\.8-config-shape broke\n$/,
    );
    assert.deepEqual([...parseBaseline(written, file).keys()], ['S4.8-config-shape']);
    const again = await cli(['--target', broken, '--base-url', s.baseUrl, '--only', 'S4.8-config-shape', '--expected-failures', file]);
    assert.equal(again.code, 0, again.stdout);
    assert.equal(
      again.stdout.trimEnd().split('\n').at(-1),
      'conformance: 0 passed, 1 failed, 0 flaky, 0 skipped, 0 errored (baseline: 1 expected failure, 0 stale)',
    );
    const fixed = await cli([
      '--target',
      await writeTarget(targetJson),
      '--base-url',
      s.baseUrl,
      '--only',
      'S4.8-config-shape',
      '--expected-failures',
      file,
    ]);
    assert.equal(fixed.code, 1);
    assert.match(fixed.stdout, /stale \(they fail the run\):\n {4}S4\.8-config-shape: listed as failing, but it passed: delete its line/);
    assert.equal(
      baselineText({
        ...JSON.parse(JSON.stringify({ suite: { name: 'n', version: '1' } })),
        results: [result('S4.8-config-shape', 'failed')],
      } as RunResults)
        .split('\n')
        .at(-2),
      'S4.8-config-shape S4.8-config-shape broke',
    );
  });

  test('--rate-limit 5/s: a whole run of a selection completes and cleans up', async () => {
    const fresh = await startTestServer();
    try {
      const r = await cli([
        '--target',
        path.join(FIXTURES_DIR, 'target.json'),
        '--base-url',
        fresh.baseUrl,
        '--only',
        'S4.3-*',
        '--profile',
        'reference',
        '--rate-limit',
        '5/s',
        '--reporter',
        'json',
      ]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const report = JSON.parse(r.stdout.slice(0, r.stdout.lastIndexOf('\nconformance:')));
      assert.equal(report.summary.passed, 3);
      assert.equal(report.cleanup.deleted, 1);
      assert.deepEqual((await fresh.call('GET', `/apps/${targetJson.app_id}/conversations`)).body.data, []);
    } finally {
      await fresh.close();
    }
  });
});

test('the conformance guide and reference are up to date by the command CI can run: npm run conformance:docs -- --check', async () => {
  const { stdout } = await exec(process.execPath, ['--import', 'tsx', 'conformance/docs.ts', '--check'], { cwd: ROOT });
  assert.match(stdout, /^docs\/conformance\.md is up to date$/m);
  assert.match(stdout, /^docs\/conformance-reference\.md is up to date$/m);
});
