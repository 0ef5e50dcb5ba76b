// Where `npm run bench` writes: the latest figures into docs/benchmarks.md (its generated blocks, as
// scripts/docs.ts fills docs/interface.md), and the figures a run replaces into bench/log.md,
// newest first, so that the page holds only the latest run and no run is lost.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fillBlocks } from '../scripts/docs.ts';

export const PAGE = 'docs/benchmarks.md';
export const LOG = 'bench/log.md';
/** The line of the log below which replaced runs are added. */
export const LOG_MARK = '<!-- npm run bench adds the runs it replaces on docs/benchmarks.md below this line, newest first -->';

/** The page's generated blocks, and the heading a replaced one gets in the log. */
export const RUN_BLOCKS = {
  bench: 'Parley beside the baseline',
  'bench-stores': 'The two stores side by side',
  'bench-control': 'The control plane across instances',
  'bench-webhooks': 'Webhooks',
  'bench-sign-in': 'A burst of sign-ins beside /v1',
} as const;
export type RunBlock = keyof typeof RUN_BLOCKS;

/** The text of the generated block `name` of `text`, or undefined when the page has no such block. */
export function blockOf(text: string, name: string): string | undefined {
  let found: string | undefined;
  fillBlocks(text, (n, current) => {
    if (n === name) found = current;
    return current;
  });
  return found;
}

/** What the page and the log become when `body` replaces the block `name`. Throws when either lacks its marker. */
export function replaceRun(page: string, log: string, name: RunBlock, body: string): { page: string; log: string } {
  const previous = blockOf(page, name);
  if (previous === undefined) throw new Error(`${PAGE} has no generated block ${name}`);
  const at = log.indexOf(LOG_MARK);
  if (at === -1) throw new Error(`${LOG} has no line ${LOG_MARK}`);
  const next = fillBlocks(page, (n, current) => (n === name ? body : current));
  if (previous.trim() === '') return { page: next, log };
  const when = /^Run (\S+?),? /.exec(previous)?.[1] ?? 'of unknown date';
  const entry = `\n### ${RUN_BLOCKS[name]}: run ${when}\n\n${previous.trim()}\n`;
  const end = at + LOG_MARK.length;
  return { page: next, log: `${log.slice(0, end)}\n${entry}${log.slice(end).replace(/^\n+/, '\n')}` };
}

/** Fails before a long run when its figures would have nowhere to go. */
export async function checkPages(root: string, names: readonly RunBlock[]): Promise<void> {
  const [page, log] = await Promise.all([PAGE, LOG].map((f) => fs.readFile(path.join(root, f), 'utf8')));
  for (const name of names) replaceRun(page!, log!, name, '');
}

/** Writes `body` into the page's block `name` and moves what it replaces to the log. */
export async function writeRun(root: string, name: RunBlock, body: string): Promise<void> {
  const [page, log] = await Promise.all([PAGE, LOG].map((f) => fs.readFile(path.join(root, f), 'utf8')));
  const out = replaceRun(page!, log!, name, body);
  await fs.writeFile(path.join(root, LOG), out.log);
  await fs.writeFile(path.join(root, PAGE), out.page);
}
