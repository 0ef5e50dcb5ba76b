// A test reporter that fails the run when a test file ran no test: node --test reports such a file as a
// passing test named by the file's own path (a `before` hook that never settled, or a process that
// exited early, as a dependency's exit hook once did on a spawn error). Run beside the usual reporter by
// `npm test` and `npm run test:proof`. Plain JavaScript: node loads reporters before `--import tsx`.
import path from 'node:path';

/** Node 20 names a file's own test by its absolute path, Node 22 and later relative to the working directory. */
const namesItsFile = (name = '', file = '') => name === file || path.resolve(name) === file;

/** @param {AsyncIterable<{ type: string, data?: { file?: string, name?: string, nesting?: number } }>} source */
export default async function* zeroGuard(source) {
  /** @type {string[]} */
  const empty = [];
  for await (const { type, data } of source) {
    if (type === 'test:pass' && data?.nesting === 0 && data.file && namesItsFile(data.name, data.file))
      empty.push(path.relative(process.cwd(), data.file));
  }
  if (empty.length === 0) return;
  process.exitCode = 1;
  yield `\nno test ran in ${empty.length === 1 ? 'this file' : 'these files'} (a hook that never settled, or a process that exited early): ${empty.join(', ')}\n`;
}
