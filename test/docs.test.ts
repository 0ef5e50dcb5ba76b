// The repository stands on its own: the generated parts of docs/ and the README are current (npm run docs), no file
// refers to a path outside the repository, every relative link of a document leads to a file of it,
// and docs/target.md describes every key the conformance suite reads from a target.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { APP_KEYS } from '../conformance/target.ts';
import { ROOT, decisionCitations, fillBlocks, renderDocs } from '../scripts/docs.ts';

/** Every text file of the project that a person or a tool reads. */
async function projectFiles(): Promise<string[]> {
  const out = ['README.md', 'package.json', 'tsconfig.json', '.ci/run'];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await fs.readdir(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) await walk(rel);
      else if (/\.(ts|js|md|json|txt)$/.test(entry.name)) out.push(rel);
    }
  };
  for (const dir of ['src', 'cli', 'conformance', 'test', 'bench', 'bin', 'docs', 'scripts', 'fixtures']) await walk(dir);
  return out;
}

test('the generated parts of docs/ and the README are current (run `npm run docs` after changing the contract, a D-id citation or a setting)', async () => {
  for (const [file, expected] of await renderDocs()) {
    const committed = await fs.readFile(path.join(ROOT, file), 'utf8');
    assert.ok(committed === expected, `${file} is stale: run npm run docs`);
  }
});

test('fillBlocks replaces exactly the generated blocks and keeps the hand-written text', () => {
  const text = 'intro\n<!-- generated:a -->\nold\n<!-- /generated:a -->\nmiddle\n<!-- generated:b -->\n<!-- /generated:b -->\nend\n';
  assert.equal(
    fillBlocks(text, (name) => `new ${name}`),
    'intro\n<!-- generated:a -->\nnew a\n<!-- /generated:a -->\nmiddle\n<!-- generated:b -->\nnew b\n<!-- /generated:b -->\nend\n',
  );
  const seen: string[] = [];
  fillBlocks(text, (name, current) => {
    seen.push(`${name}=${current}`);
    return current;
  });
  assert.deepEqual(seen, ['a=old', 'b=']);
});

test('the decision index sees every decision D-1…D-24 cited somewhere', async () => {
  const cited = await decisionCitations();
  for (let id = 1; id <= 24; id++) assert.ok(cited.get(id)?.length, `D-${id} is cited nowhere`);
});

test('no file refers to a path outside the repository, and relative links of documents resolve inside it', async () => {
  // Written in pieces so that this file does not match itself.
  const outside = [new RegExp('\\.\\./' + 'shared/'), new RegExp('shared/' + 'spec/'), new RegExp('/' + 'work/')];
  const faults: string[] = [];
  for (const file of await projectFiles()) {
    const text = await fs.readFile(path.join(ROOT, file), 'utf8');
    for (const re of outside) if (re.test(text)) faults.push(`${file}: ${re.source}`);
    if (!file.endsWith('.md')) continue;
    for (const m of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue;
      const resolved = path.resolve(ROOT, path.dirname(file), target);
      if (!resolved.startsWith(ROOT + path.sep)) faults.push(`${file}: link ${target} leaves the repository`);
      else if (!(await fs.stat(resolved).catch(() => null))) faults.push(`${file}: link ${target} leads nowhere`);
    }
  }
  assert.deepEqual(faults, []);
});

test('docs/target.md describes every key the conformance suite reads from a target', async () => {
  const text = await fs.readFile(path.join(ROOT, 'docs/target.md'), 'utf8');
  for (const key of [
    'version',
    'base_url',
    'api_key',
    'app_id',
    ...APP_KEYS.map((k) => `apps.${k}`),
    'publishable_key',
    'other_team_api_key',
    ...['base_url', 'origin', 'identity_secret', 'short_token_app'].map((k) => `widget.${k}`),
    'admin',
    ...['base_url', 'email', 'password'].map((k) => `admin.${k}`),
  ]) {
    assert.match(text, new RegExp(`\\| \`${key.replace('.', '\\.')}\` \\|`), key);
  }
});
