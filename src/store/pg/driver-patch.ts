// D-90: whether the postgres.js this process loads carries scripts/patch-postgres.mjs (porsager/postgres
// #1208), which `npm ci` applies as postinstall. An install that skipped scripts (`--ignore-scripts`, a
// package manager that runs no dependency's scripts) loads the driver as published: said at start-up,
// since a connection dying under a transaction can then end the process.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const MARK = '// Patched by parley';

/** True when both files the patch changes, in the entry point this process imports, carry its mark. */
export function driverPatched(): boolean {
  try {
    const index = fileURLToPath(import.meta.resolve('postgres'));
    return ['index.js', 'connection.js'].every((name) => fs.readFileSync(index.replace(/index\.js$/, name), 'utf8').startsWith(MARK));
  } catch {
    return false;
  }
}

// D-151: the install patches only the copy in Parley's own node_modules; a project's hoisted copy is
// patched only when its folder is named.
export const UNPATCHED_WARNING =
  "postgres.js is not patched (the install patches only the copy in Parley's own node_modules): a connection that dies under a transaction can end this process; run `npm rebuild parley`, or `node node_modules/parley/scripts/patch-postgres.mjs FOLDER` to patch the copy in FOLDER";
