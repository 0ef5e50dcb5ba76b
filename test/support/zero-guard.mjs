// A test reporter that fails the run when a test file ran no test: node --test reports such a file `ok`
// (a `before` hook that never settles, or a process that exits early, as a dependency's exit hook once
// did on a spawn error). Run beside the usual reporter by `npm test` and `npm run test:proof`. Plain
// JavaScript: node loads reporters before the `--import tsx` hook.
import path from 'node:path';

/** @param {AsyncIterable<{ type: string, data?: { file?: string, name?: string, nesting?: number, details?: { type?: string } } }>} source */
export default async function* zeroGuard(source) {
  /** @type {Map<string, number>} */
  const counts = new Map();
  for await (const { type, data } of source) {
    const file = data?.file;
    if (!file) continue;
    // Each file is enqueued once under its own path (the test of its process's run).
    if (type === 'test:enqueue' && data.nesting === 0 && data.name === file) counts.set(file, counts.get(file) ?? 0);
    if ((type === 'test:pass' || type === 'test:fail') && data.name !== file && data.details?.type !== 'suite') counts.set(file, (counts.get(file) ?? 0) + 1);
  }
  const empty = [...counts].filter(([, n]) => n === 0).map(([f]) => path.relative(process.cwd(), f));
  if (empty.length === 0) return;
  process.exitCode = 1;
  yield `\nno test ran in ${empty.length === 1 ? 'this file' : 'these files'} (a hook that never settled, or a process that exited early): ${empty.join(', ')}\n`;
}
