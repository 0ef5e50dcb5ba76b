// Long proof: another team's CI uses the suite without this repository. `npm pack` makes the package,
// it is installed alone into an empty directory (dependencies from the npm cache, the registry only
// for what the cache lacks), and `npx parley conformance --target FILE` runs the whole spec profile
// against a reference server. D-151: installed into projects that hold their own postgres.js, the
// install succeeds and leaves the project's copy as it was (the npm cache first: --prefer-offline).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { FIXTURES_DIR, startTestServer, tempDir, type TestServer } from '../support/helpers.ts';
import { treeBytes } from '../support/tree-bytes.ts';

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

/** The postinstall's line when the copy Parley would use is the project's (D-151). */
const PROJECTS_COPY = /parley: postgres\.js not patched: .*node_modules\/postgres is not in .*: that copy is the project's, left as it is/;

/** A project in `dir`/`name` with these dependencies installed (the npm cache first); its folder. */
async function project(name: string, dependencies: Record<string, string>): Promise<string> {
  const app = path.join(dir, name);
  await fs.mkdir(app);
  await fs.writeFile(path.join(app, 'package.json'), JSON.stringify({ name, private: true, dependencies }));
  await exec('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app, env, timeout: 120_000 });
  return app;
}

/** Installs the packed Parley into `app` (the npm cache first, its scripts' output shown); what npm printed. */
async function installParley(app: string, ...flags: string[]): Promise<string> {
  const r = await exec('npm', ['install', '--prefer-offline', '--foreground-scripts', '--no-audit', '--no-fund', ...flags, tarball], {
    cwd: app,
    env,
    timeout: 180_000,
  });
  return r.stdout + r.stderr;
}

test("D-151: into projects holding their own postgres.js, the install succeeds and patches only Parley's own copy; the project's stays byte-identical", {
  timeout: 600_000,
}, async () => {
  const pin = (JSON.parse(await fs.readFile(path.join(ROOT, 'package.json'), 'utf8')) as { optionalDependencies: { postgres: string } })
    .optionalDependencies.postgres;
  // Another version of the driver, without the registry: the pinned release from the npm cache,
  // published again as 3.4.8 from a local tarball.
  const { stdout } = await exec('npm', ['pack', '--offline', '--json', '--pack-destination', dir, `postgres@${pin}`], { cwd: dir, env });
  const other = path.join(dir, 'other');
  await fs.mkdir(other);
  await exec('tar', ['-xzf', path.join(dir, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename), '-C', other]);
  const manifest = path.join(other, 'package', 'package.json');
  await fs.writeFile(manifest, JSON.stringify({ ...JSON.parse(await fs.readFile(manifest, 'utf8')), version: '3.4.8' }));
  await exec('tar', ['-czf', path.join(dir, 'postgres-3.4.8.tgz'), '-C', other, 'package']);

  // A project on 3.4.8: Parley gets its own pinned copy, nested, and patches that one.
  const older = await project('older', { postgres: `file:${path.join(dir, 'postgres-3.4.8.tgz')}` });
  const olderCopy = path.join(older, 'node_modules', 'postgres');
  const olderBytes = await treeBytes(olderCopy);
  const nested = path.join(older, 'node_modules', 'parley', 'node_modules', 'postgres');
  assert.match(
    await installParley(older),
    new RegExp(`patched postgres@${pin.replaceAll('.', '\\.')} \\(porsager/postgres#1208\\) in ${nested}`),
  );
  assert.equal((JSON.parse(await fs.readFile(path.join(nested, 'package.json'), 'utf8')) as { version: string }).version, pin);
  assert.match(await fs.readFile(path.join(nested, 'src', 'index.js'), 'utf8'), /^\/\/ Patched by parley/);
  assert.deepEqual(await treeBytes(olderCopy), olderBytes, "the project's 3.4.8 is untouched");

  // The same project without optional dependencies: the only postgres Parley finds is the project's
  // 3.4.8, not its own to patch; the install still succeeds.
  const omitted = await project('omitted', { postgres: `file:${path.join(dir, 'postgres-3.4.8.tgz')}` });
  const omittedCopy = path.join(omitted, 'node_modules', 'postgres');
  const omittedBytes = await treeBytes(omittedCopy);
  assert.match(await installParley(omitted, '--omit=optional'), PROJECTS_COPY);
  await assert.rejects(fs.access(path.join(omitted, 'node_modules', 'parley', 'node_modules', 'postgres')), "no copy of Parley's own");
  assert.deepEqual(await treeBytes(omittedCopy), omittedBytes);

  // A project on the pinned version itself: npm lets Parley share it; it stays the project's, unpatched.
  const same = await project('same', { postgres: pin });
  const sameCopy = path.join(same, 'node_modules', 'postgres');
  const sameBytes = await treeBytes(sameCopy);
  assert.match(await installParley(same), PROJECTS_COPY);
  assert.deepEqual(await treeBytes(sameCopy), sameBytes, "the project's own copy of the pinned version is untouched");
});
