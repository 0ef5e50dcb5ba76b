// The repository stands on its own: the generated parts of docs/ and the README are current (npm run docs), no file
// refers to a path outside the repository, every relative link of a document leads to a file of it,
// and docs/target.md describes every key the conformance suite reads from a target.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { APP_KEYS } from '../conformance/target.ts';
import { decisionRules, firstSentence, readDocs } from '../scripts/decision-rules.ts';
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

test('the pages hold the generated blocks they are read for (a block lost in a merge is never filled again)', async () => {
  const needs: Record<string, string[]> = {
    'docs/decisions.md': ['decision-rules', 'decision-index'],
    'README.md': ['settings'],
  };
  for (const [file, blocks] of Object.entries(needs)) {
    const text = await fs.readFile(path.join(ROOT, file), 'utf8');
    for (const b of blocks) assert.ok(text.includes(`<!-- generated:${b} -->`), `${file} lost its generated block ${b}`);
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

// Decisions 1 to 114 were numbered one after another; from 115 on each issue has its own range of
// numbers (architecture from 115, scenarios from 120, papercuts from 150), so a gap past 114 is a
// number not yet used.
const CONTIGUOUS_UNTIL = 114;

test('every decision cited in the sources, and every id up to D-114, has its one-line rule in docs/', async () => {
  const rules = decisionRules(await readDocs(ROOT));
  const cited = await decisionCitations();
  const ids = new Set([...Array.from({ length: CONTIGUOUS_UNTIL }, (_, i) => i + 1), ...cited.keys()]);
  const missing: string[] = [];
  for (const id of [...ids].sort((a, b) => a - b)) if (!rules.get(id)?.rule) missing.push(`D-${id}`);
  assert.deepEqual(missing, [], 'write each as **D-n Rule.** in the page of its subject');
});

test("a decision's rule is read where it is written: its bold lead, else its first sentence, else below its heading", () => {
  const page = [
    '- **X-1 One rule in bold.** Details. More.',
    '- **X-2** (revised by X-5, [x](x.md)) The first sentence, e.g. this one. The second.',
    '  Its continuation.',
    '',
    '- **X-2 (revised): a later rule.** Why.',
    '- **X-1 (2) A part.** Not a rule.',
    '- **X-3** Three. Why.',
    '- **X-3, extended: more cases.** Why.',
    '',
    '**X-4 Widens X-2 (revises X-1 and X-3).** In a paragraph.',
    '',
    '## X-5 A heading',
    '',
    'What it says (see X-1). Then more.',
    '',
    "- **X-1's secret** is not a decision of its own.",
    '```',
    '- **X-9** in a code block is not one either.',
    '```',
  ]
    .join('\n')
    // Written as X-n so that this file cites no decision in the index.
    .replaceAll('X-', 'D-');
  const rules = decisionRules(new Map([['a.md', page]]));
  assert.deepEqual(
    [...rules.values()].map((r) => [r.id, r.file, r.rule.replaceAll('D-', 'X-'), r.amendments, r.revisedBy]),
    [
      [1, 'a.md', 'One rule in bold.', [], [4]],
      [2, 'a.md', 'The first sentence, e.g. this one.', ['Revised: a later rule.'], [5]],
      [3, 'a.md', 'Three.', ['Extended: more cases.'], [4]],
      [4, 'a.md', 'Widens X-2 (revises X-1 and X-3).', [], []],
      [5, 'a.md', 'What it says (see X-1).', [], []],
    ],
  );
  assert.equal(firstSentence('A `x. y` (b. c) rule. Then'), 'A `x. y` (b. c) rule.');
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
