// Long proof: another team's CI uses the suite without this repository. `npm pack` makes the package,
// it is installed alone into an empty directory (dependencies from the npm cache, the registry only
// for what the cache lacks), and `npx parley conformance --target FILE` runs the whole spec profile
// against a reference server.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { FIXTURES_DIR, startTestServer, tempDir, type TestServer } from '../support/helpers.ts';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
// What `npm run test:proof` exports for itself (npm_config_*, npm_package_*) must not steer the npm under test.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

let s: TestServer;
let dir: string;
let tarball: string;
before(async () => {
  s = await startTestServer();
  dir = await tempDir('parley-pack-');
  const { stdout } = await exec('npm', ['pack', '--json', '--pack-destination', dir], { cwd: ROOT, env });
  tarball = path.join(dir, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename);
});
after(() => s.close());

test('the package holds the CLI, the suite, the reference server and its docs; no tests, no repository tooling', async () => {
  const { stdout } = await exec('tar', ['-tzf', tarball]);
  const files = stdout
    .trim()
    .split('\n')
    .map((f) => f.replace(/^package\//, ''));
  for (const f of [
    'package.json',
    'bin/parley.js',
    'cli/main.ts',
    'conformance/run.ts',
    'conformance/cases/events.ts',
    'src/contract/index.ts',
    'fixtures/target.json',
    'docs/conformance.md',
    'docs/conformance-reference.md',
  ])
    assert.ok(files.includes(f), `${f} is missing`);
  assert.deepEqual(
    files.filter((f) => /^(test|bench|\.ci)\/|^conformance\/docs\.ts$|^node_modules\//.test(f)),
    [],
  );
});

test('npx parley conformance --target FILE in an empty directory with only the tarball installed: the whole spec profile passes', {
  timeout: 240_000,
}, async () => {
  const app = path.join(dir, 'ci');
  await fs.mkdir(app);
  await fs.writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'another-teams-ci', private: true }));
  await exec('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: app, env, timeout: 180_000 });
  const target = JSON.parse(await fs.readFile(path.join(FIXTURES_DIR, 'target.json'), 'utf8'));
  await fs.writeFile(path.join(app, 'target.json'), JSON.stringify({ ...target, base_url: s.baseUrl }));

  const run = await exec(
    'npx',
    ['--offline', 'parley', 'conformance', '--target', 'target.json', '--reporter', 'html', '--out', 'report.html'],
    { cwd: app, env, timeout: 120_000 },
  ).catch((err: { code: number; stdout: string; stderr: string }) => err);
  const { stdout, stderr } = run as { stdout: string; stderr: string };
  assert.equal((run as { code?: number }).code ?? 0, 0, stdout + stderr);
  assert.match(stdout.trimEnd().split('\n').at(-1)!, /^conformance: \d+ passed, 0 failed, 0 flaky, 0 skipped, 0 errored$/);
  assert.match(await fs.readFile(path.join(app, 'report.html'), 'utf8'), /judging interface 1\.0\.0, profile <b>spec-1\.0\.0<\/b>/);
  // The directory lies outside the repository, so every module ran from the installed package.
  assert.ok((await fs.stat(path.join(app, 'node_modules/parley/conformance/run.ts'))).isFile());
  assert.deepEqual((await s.call('GET', `/apps/${target.app_id}/conversations`)).body.data, [], 'the run deleted what it created');
});
