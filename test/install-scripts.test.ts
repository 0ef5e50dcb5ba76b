// package.json's allowScripts (read by npm 11; npm 10 ignores it) decides every dependency with an
// install script in package-lock.json, and nothing else: a new one must be reviewed, a gone one goes.
// Read from the files only; no npm command, no registry.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { driverPatched } from '../src/store/pg/driver-patch.ts';

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

// D-90: postgres.js 3.4.9 patched at install (porsager/postgres#1208); the proof that the patch works
// on a real PostgreSQL is test/proof/pg-driver-faults.test.ts.
test('scripts/patch-postgres.mjs: patches both entry points once, again changes nothing, refuses another version or text it cannot find', async () => {
  const { EDITS, MARKER, PATCHED_VERSION, patchPackage, patchText } = (await import(
    pathToFileURL(path.join(ROOT, 'scripts', 'patch-postgres.mjs')).href
  )) as {
    EDITS: Record<string, { find: string; replace: string }[]>;
    MARKER: string;
    PATCHED_VERSION: string;
    patchPackage: (dir: string) => string[];
    patchText: (name: string, text: string) => string;
  };
  assert.equal(driverPatched(), true, 'the driver this process imports is patched (else start-up warns, D-90)');
  const pkg = (await readJson('package.json')) as { scripts: Record<string, string>; files: string[] };
  assert.equal(pkg.scripts.postinstall, 'node scripts/patch-postgres.mjs', 'npm ci runs the patch');
  assert.ok(pkg.files.includes('scripts/patch-postgres.mjs'), 'the published package carries it');
  const installed = path.join(ROOT, 'node_modules', 'postgres');
  assert.equal(((await readJson('node_modules/postgres/package.json')) as { version: string }).version, PATCHED_VERSION);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-pg-patch-'));
  try {
    // The published text, made back from the installed (patched) one.
    await fs.copyFile(path.join(installed, 'package.json'), path.join(dir, 'package.json'));
    for (const sub of ['src', 'cjs/src']) {
      await fs.mkdir(path.join(dir, sub), { recursive: true });
      for (const name of Object.keys(EDITS)) {
        const patched = await fs.readFile(path.join(installed, sub, name), 'utf8');
        assert.ok(patched.startsWith(`${MARKER}\n`), `node_modules/postgres/${sub}/${name} is patched`);
        let text = patched.slice(MARKER.length + 1);
        for (const e of EDITS[name]!) text = text.replace(e.replace, e.find);
        assert.equal(patchText(name, text), patched);
        await fs.writeFile(path.join(dir, sub, name), text);
      }
    }
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
