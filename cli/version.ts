// The package's version, read once from package.json: `parley --version` and the User-Agent say it.
import fs from 'node:fs';
import path from 'node:path';

export const VERSION = (JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../package.json'), 'utf8')) as { version: string })
  .version;

/** What every request of the CLI (and of the client as a library) says it is, unless the caller sets its own. */
export const USER_AGENT = `parley-cli/${VERSION} node/${process.versions.node}`;
