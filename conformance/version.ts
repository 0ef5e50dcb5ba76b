// What a report says it is: the suite's version (the package's), the interface version its cases
// judge, and the version of the target-file format it reads.
import fs from 'node:fs';
import path from 'node:path';

export const SUITE_NAME = 'parley-conformance';
export const SUITE_VERSION = (
  JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../package.json'), 'utf8')) as { version: string }
).version;
export const INTERFACE_VERSION = '1.0.0';
/** The target-file format this suite knows (`"version"` in a target; 1 when absent). */
export const TARGET_FORMAT_VERSION = 5;
