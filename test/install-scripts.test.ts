// package.json's allowScripts (read by npm 11; npm 10 ignores it) decides every dependency with an
// install script in package-lock.json, and nothing else: a new one must be reviewed, a gone one goes.
// Read from the files only; no npm command, no registry.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

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
