// package.json's allowScripts (read by npm 11; npm 10 ignores it) decides every dependency with an
// install script in package-lock.json, and nothing else: a new one must be reviewed, a gone one goes.
// Read from the files only; no npm command, no registry.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { driverPatched } from '../src/store/pg/driver-patch.ts';
import { treeBytes } from './support/tree-bytes.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const readJson = async (file: string) => JSON.parse(await fs.readFile(path.join(ROOT, file), 'utf8'));

test('allowScripts names exactly the packages of package-lock.json that have install scripts', async () => {
  const pkg = (await readJson('package.json')) as { allowScripts?: Record<string, unknown> };
  const lock = (await readJson('package-lock.json')) as { packages: Record<string, { hasInstallScript?: boolean }> };
  const withScripts = new Set(
    Object.entries(lock.packages)
      .filter(([where, p]) => where !== '' && p.hasInstallScript === true)
      .map(([where]) => where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length)),
  );
  assert.ok(pkg.allowScripts, 'package.json has allowScripts');
  // An entry is a name, or a name pinned to versions (`esbuild@0.28.2`); its value allows or denies.
  const decided = new Set(Object.keys(pkg.allowScripts).map((k) => k.replace(/(?<=.)@.*$/, '')));
  for (const [k, v] of Object.entries(pkg.allowScripts)) assert.equal(typeof v, 'boolean', `allowScripts["${k}"] is true or false`);
  assert.deepEqual([...withScripts].filter((n) => !decided.has(n)).sort(), [], 'install scripts that allowScripts does not decide');
  assert.deepEqual([...decided].filter((n) => !withScripts.has(n)).sort(), [], 'allowScripts entries no package needs');
  const readme = await fs.readFile(path.join(ROOT, 'README.md'), 'utf8');
  assert.match(readme, /`allowScripts`/, 'the README says what the field is for');
});

interface PatchScript {
  EDITS: Record<string, { find: string; replace: string }[]>;
  MARKER: string;
  PATCHED_VERSION: string;
  patchPackage: (dir: string) => string[];
  patchText: (name: string, text: string) => string;
  postinstall: (root: string) => string;
}
const SCRIPT = path.join(ROOT, 'scripts', 'patch-postgres.mjs');
const script = async () => (await import(pathToFileURL(SCRIPT).href)) as PatchScript;
const INSTALLED = path.join(ROOT, 'node_modules', 'postgres');

/** Writes into `dir` the driver as published (package.json and the files the patch edits), made back from the installed, patched copy. */
async function publishedCopy(dir: string, version?: string): Promise<void> {
  const { EDITS, MARKER, patchText } = await script();
  const pkg = JSON.parse(await fs.readFile(path.join(INSTALLED, 'package.json'), 'utf8')) as { version: string };
  await fs.mkdir(dir, { recursive: true });
  await fs.writeFile(path.join(dir, 'package.json'), JSON.stringify({ ...pkg, version: version ?? pkg.version }));
  for (const sub of ['src', 'cjs/src']) {
    await fs.mkdir(path.join(dir, sub), { recursive: true });
    for (const name of Object.keys(EDITS)) {
      const patched = await fs.readFile(path.join(INSTALLED, sub, name), 'utf8');
      assert.ok(patched.startsWith(`${MARKER}\n`), `node_modules/postgres/${sub}/${name} is patched`);
      let text = patched.slice(MARKER.length + 1);
      for (const e of EDITS[name]!) text = text.replace(e.replace, e.find);
      assert.equal(patchText(name, text), patched);
      await fs.writeFile(path.join(dir, sub, name), text);
    }
  }
}

// D-90: postgres.js 3.4.9 patched at install (porsager/postgres#1208); the proof that the patch works
// on a real PostgreSQL is test/proof/pg-driver-faults.test.ts.
test('scripts/patch-postgres.mjs: patches both entry points once, again changes nothing, refuses another version or text it cannot find', async () => {
  const { PATCHED_VERSION, patchPackage, patchText } = await script();
  assert.equal(driverPatched(), true, 'the driver this process imports is patched (else start-up warns, D-90)');
  const pkg = (await readJson('package.json')) as {
    scripts: Record<string, string>;
    files: string[];
    dependencies: Record<string, string>;
    optionalDependencies: Record<string, string>;
  };
  assert.equal(pkg.scripts.postinstall, 'node scripts/patch-postgres.mjs', 'npm ci runs the patch');
  assert.ok(pkg.files.includes('scripts/patch-postgres.mjs'), 'the published package carries it');
  // D-151: optional, and pinned to the version the edits are written for.
  assert.equal(pkg.dependencies.postgres, undefined);
  assert.match(pkg.optionalDependencies.postgres!, /^\d+\.\d+\.\d+$/, 'an exact version');
  assert.equal(PATCHED_VERSION, pkg.optionalDependencies.postgres);
  assert.equal(((await readJson('node_modules/postgres/package.json')) as { version: string }).version, PATCHED_VERSION);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-pg-patch-'));
  try {
    await publishedCopy(dir);
    assert.equal(patchPackage(dir).length, 4, 'src/ and cjs/src/, connection.js and index.js');
    assert.deepEqual(patchPackage(dir), [], 'a second run changes nothing');
    const other = { name: 'postgres', version: '3.4.10' };
    await fs.writeFile(path.join(dir, 'package.json'), JSON.stringify(other));
    assert.throws(() => patchPackage(dir), /postgres@3\.4\.10; scripts\/patch-postgres\.mjs is for postgres@3\.4\.9/);
    assert.throws(() => patchText('index.js', 'something else'), /found 0 times, not once/);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test("D-151: the postinstall patches only the copy in Parley's own node_modules, leaves a project's copy byte-identical, and never fails", async () => {
  const { postinstall, PATCHED_VERSION } = await script();
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-pg-own-'));
  /** A project with Parley installed, and the driver hoisted (the project's) or nested (Parley's), at these versions. */
  const project = async (name: string, o: { hoisted?: string; nested?: string }) => {
    const parley = path.join(tmp, name, 'node_modules', 'parley');
    await fs.mkdir(parley, { recursive: true });
    await fs.writeFile(path.join(parley, 'package.json'), JSON.stringify({ name: 'parley', version: '0.1.0' }));
    const hoisted = path.join(tmp, name, 'node_modules', 'postgres');
    const nested = path.join(parley, 'node_modules', 'postgres');
    if (o.hoisted) await publishedCopy(hoisted, o.hoisted);
    if (o.nested) await publishedCopy(nested, o.nested);
    return { parley, hoisted, nested, own: `${path.join(await fs.realpath(parley), 'node_modules')}/` };
  };
  try {
    const none = await project('none', {});
    assert.match(postinstall(none.parley), /^parley: postgres\.js not patched: not installed \(an optional dependency/);

    // The project's own copy of the pinned version, which Parley shares (npm hoisted it): the project's.
    const shared = await project('shared', { hoisted: PATCHED_VERSION });
    const before = await treeBytes(shared.hoisted);
    assert.equal(
      postinstall(shared.parley),
      `parley: postgres.js not patched: ${shared.hoisted} is not in ${shared.own}: that copy is the project's, left as it is`,
    );
    assert.deepEqual(await treeBytes(shared.hoisted), before);

    // Parley's own copy beside a project's other version: that one patched, the project's untouched.
    const both = await project('both', { hoisted: '3.4.8', nested: PATCHED_VERSION });
    const other = await treeBytes(both.hoisted);
    assert.equal(postinstall(both.parley), `patched postgres@${PATCHED_VERSION} (porsager/postgres#1208) in ${both.nested}`);
    assert.equal(postinstall(both.parley), `postgres@${PATCHED_VERSION} in ${both.nested} is already patched`);
    assert.ok((await fs.readFile(path.join(both.nested, 'src', 'index.js'), 'utf8')).startsWith('// Patched by parley'));
    assert.deepEqual(await treeBytes(both.hoisted), other);

    // Its own copy of another version (installed by hand): said, not patched, not thrown.
    const unpinned = await project('unpinned', { nested: '3.4.10' });
    const bytes = await treeBytes(unpinned.nested);
    assert.equal(
      postinstall(unpinned.parley),
      `parley: postgres.js not patched: ${unpinned.nested} is postgres@3.4.10, not the pinned ${PATCHED_VERSION}`,
    );
    assert.deepEqual(await treeBytes(unpinned.nested), bytes);
    // Text it cannot find: said in one line.
    const changed = await project('changed', { nested: PATCHED_VERSION });
    await fs.writeFile(path.join(changed.nested, 'src', 'index.js'), 'something else');
    assert.match(
      postinstall(changed.parley),
      /^parley: postgres\.js not patched: index\.js: the text to patch is found 0 times, not once:$/,
    );
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
});

test('D-151: run as the postinstall of a package without the driver, the script prints one line and exits 0', async () => {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-pg-none-'));
  try {
    await fs.mkdir(path.join(root, 'scripts'));
    await fs.copyFile(SCRIPT, path.join(root, 'scripts', 'patch-postgres.mjs'));
    await fs.copyFile(path.join(ROOT, 'package.json'), path.join(root, 'package.json'));
    const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'patch-postgres.mjs')], { cwd: root, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^parley: postgres\.js not patched: not installed [^\n]*\n$/);
  } finally {
    await fs.rm(root, { recursive: true, force: true });
  }
});
