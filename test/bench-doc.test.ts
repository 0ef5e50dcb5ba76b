// Where `npm run bench` writes (bench/doc.ts): the latest run into the generated blocks of
// docs/benchmarks.md, the run it replaces to the top of bench/log.md, and nothing else.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { checkPages, LOG_MARK, replaceRun } from '../bench/doc.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

const page = [
  '# Benchmarks',
  'Hand-written.',
  '<!-- generated:bench -->',
  'Run 2026-01-01T00:00:00.000Z, a machine.',
  '| a table |',
  '<!-- /generated:bench -->',
  'Between.',
  '<!-- generated:bench-stores -->',
  'Run 2026-01-02T00:00:00.000Z, stores.',
  '<!-- /generated:bench-stores -->',
  'End.',
  '',
].join('\n');
const log = ['# Log', '', LOG_MARK, '', '## Analyses', 'Kept.', ''].join('\n');

test('a run replaces its block on the page and moves the run it replaces to the top of the log', () => {
  const first = replaceRun(page, log, 'bench', 'Run 2026-02-01T00:00:00.000Z, newer.\n| new |');
  assert.equal(
    first.page,
    page.replace('Run 2026-01-01T00:00:00.000Z, a machine.\n| a table |', 'Run 2026-02-01T00:00:00.000Z, newer.\n| new |'),
  );
  assert.equal(
    first.log,
    [
      '# Log',
      '',
      LOG_MARK,
      '',
      '### Parley beside the baseline: run 2026-01-01T00:00:00.000Z',
      '',
      'Run 2026-01-01T00:00:00.000Z, a machine.',
      '| a table |',
      '',
      '## Analyses',
      'Kept.',
      '',
    ].join('\n'),
  );
  // The next run's replaced tables go above: newest first.
  const second = replaceRun(first.page, first.log, 'bench-stores', 'Run 2026-02-02T00:00:00.000Z, stores again.');
  assert.match(
    second.page,
    /<!-- generated:bench-stores -->\nRun 2026-02-02T00:00:00\.000Z, stores again\.\n<!-- \/generated:bench-stores -->/,
  );
  assert.match(second.page, /Run 2026-02-01T00:00:00\.000Z, newer\./);
  const order = ['The two stores side by side: run 2026-01-02', 'Parley beside the baseline: run 2026-01-01', '## Analyses'].map((s) =>
    second.log.indexOf(s),
  );
  assert.ok(
    order.every((at, i) => at > 0 && (i === 0 || at > order[i - 1]!)),
    second.log,
  );
});

test('an empty block moves nothing to the log', () => {
  const empty = page.replace('Run 2026-01-01T00:00:00.000Z, a machine.\n| a table |\n', '');
  assert.equal(replaceRun(empty, log, 'bench', 'Run x, y.').log, log);
});

test('a page without the block, or a log without its line, is refused before anything is written', () => {
  assert.throws(() => replaceRun('# no blocks\n', log, 'bench', 'x'), /docs\/benchmarks\.md has no generated block bench/);
  assert.throws(() => replaceRun(page, '# Log\n', 'bench', 'x'), /bench\/log\.md has no line/);
});

test('the committed benchmarks page and log have the blocks and the line npm run bench writes to', async () => {
  await checkPages(ROOT, ['bench', 'bench-stores']);
});
