// D-151: postgres.js is an optional dependency (package.json `optionalDependencies`, pinned to the
// version scripts/patch-postgres.mjs patches): the file store, the conformance suite and the client kit
// run without it. What needs it loads it here, on demand, so that a missing driver is one line naming
// what to install, and every other command works without it.
import fs from 'node:fs';
import path from 'node:path';
import { MissingDependency } from '../../core/errors.ts';

/** The driver itself, as imported (the seam a test replaces to play a driver that did not install). */
export type DriverProbe = () => Promise<unknown>;
const importDriver: DriverProbe = () => import('postgres');

/**
 * Runs `load` (an import of modules that import `postgres`) once the driver is found; when it is not
 * installed, throws MissingDependency, whose message says what to install.
 */
export async function withDriver<T>(load: () => Promise<T>, probe: DriverProbe = importDriver): Promise<T> {
  try {
    await probe();
  } catch (err) {
    if ((err as NodeJS.ErrnoException)?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new MissingDependency('postgres', missingDriverReason());
  }
  return load();
}

/** The one-line reason, naming the version that Parley's package.json pins. */
export function missingDriverReason(): string {
  const pkg = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../../package.json'), 'utf8')) as {
    optionalDependencies: { postgres: string };
  };
  const version = pkg.optionalDependencies.postgres;
  return (
    `the PostgreSQL store (DATABASE_URL, --database-url) needs postgres@${version}, an optional dependency of Parley that is not installed: ` +
    'install Parley with its optional dependencies (npm install --include=optional), or leave DATABASE_URL unset to use the data directory'
  );
}
