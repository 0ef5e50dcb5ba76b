// D-151: postgres.js is an optional dependency, loaded only when the PostgreSQL store is chosen; a
// missing driver is a one-line start-up reason naming what to install. The processes themselves
// (a server and the CLI without the driver) are test/proof/optional-driver.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { MissingDependency, startupReason } from '../src/core/errors.ts';
import { withDriver } from '../src/store/pg/driver.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

/** What `import('postgres')` throws where the package is not installed. */
const notInstalled = async () => {
  throw Object.assign(new Error("Cannot find package 'postgres' imported from /app/src/store/pg/driver.ts"), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
};

test('D-151: without the driver, what needs it is not loaded, and the reason names the pinned version and what to do, in one line', async () => {
  const pin = (JSON.parse(await fs.readFile(path.join(ROOT, 'package.json'), 'utf8')) as { optionalDependencies: { postgres: string } })
    .optionalDependencies.postgres;
  let loaded = false;
  const err = await withDriver(async () => (loaded = true), notInstalled).then(
    () => assert.fail('resolved without the driver'),
    (e: unknown) => e,
  );
  assert.equal(loaded, false, 'the modules that import the driver are not loaded');
  assert.ok(err instanceof MissingDependency);
  assert.equal(err.pkg, 'postgres');
  const reason = startupReason(err)!;
  assert.ok(reason.includes(`postgres@${pin}`), reason);
  assert.match(
    reason,
    /not installed: install Parley with its optional dependencies \(npm install --include=optional\), or leave DATABASE_URL unset/,
  );
  assert.doesNotMatch(reason, /\n/);
});

test('D-151: with the driver, what needs it is loaded; any other failure of the driver is not called missing', async () => {
  assert.equal(await withDriver(async () => 'loaded'), 'loaded', 'the installed driver is found');
  const broken = async () => {
    throw new SyntaxError('Unexpected token');
  };
  await assert.rejects(
    withDriver(async () => 'loaded', broken),
    (e: unknown) => e instanceof SyntaxError,
  );
});
