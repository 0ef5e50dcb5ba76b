// The test tiers' own guarantees: a test file that cannot start what it needs fails with the reason,
// and no file passes with zero tests (test/support/zero-guard.mjs, test/support/embedded-postgres.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { copyOf, startEmbeddedPostgres } from './support/embedded-postgres.ts';
import { NO_COVERAGE, tempDir } from './support/helpers.ts';

const GUARD = path.resolve(import.meta.dirname, 'support/zero-guard.mjs');

/** Runs node --test on `files` with the tiers' reporters; its exit code and both outputs. */
function runTests(dir: string, files: string[]) {
  const r = spawnSync(
    process.execPath,
    [
      '--test',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      `--test-reporter=${GUARD}`,
      '--test-reporter-destination=stderr',
      ...files,
    ],
    // Without NODE_TEST_CONTEXT, which tells a child of a test file not to run files itself.
    { cwd: dir, encoding: 'utf8', env: { ...process.env, ...NO_COVERAGE, NODE_TEST_CONTEXT: undefined } },
  );
  return { status: r.status, out: r.stdout + r.stderr };
}

describe('a test file that ran no test fails the run', () => {
  test('a file whose hook exits the process early is named, and the run fails', async () => {
    const dir = await tempDir();
    await fs.writeFile(path.join(dir, 'fine.test.mjs'), `import { test } from 'node:test';\ntest('one', () => {});\n`);
    // What embedded-postgres's exit hook did on a spawn error: the process ends, status 0, before any test.
    await fs.writeFile(
      path.join(dir, 'vanishing.test.mjs'),
      `import { before, test } from 'node:test';\nbefore(() => process.exit(0));\ntest('never runs', () => {});\n`,
    );
    const both = runTests(dir, ['fine.test.mjs', 'vanishing.test.mjs']);
    assert.equal(both.status, 1, both.out);
    assert.match(both.out, /no test ran in this file .*: vanishing\.test\.mjs/);
    assert.doesNotMatch(both.out, /fine\.test\.mjs\n/);
    const fine = runTests(dir, ['fine.test.mjs']);
    assert.equal(fine.status, 0, fine.out);
    assert.doesNotMatch(fine.out, /no test ran/);
  });
});

describe('embedded PostgreSQL fails with its reason', () => {
  test('binaries that cannot be run reject the start, naming the path and the error', async () => {
    const dir = await tempDir();
    await fs.mkdir(path.join(dir, 'bin'));
    await fs.mkdir(path.join(dir, 'lib'));
    // Not executable: spawning it fails with EACCES, as a path the server's user cannot reach does.
    await fs.writeFile(path.join(dir, 'bin', 'initdb'), '#!/bin/sh\nexit 0\n', { mode: 0o644 });
    await assert.rejects(startEmbeddedPostgres({ binaries: dir }), (err: Error) => {
      assert.match(err.message, /EACCES/);
      assert.ok(err.message.includes(path.join(dir, 'bin', 'initdb')), err.message);
      return true;
    });
    // As root a copy was tried (for a path the server's user cannot reach): it goes too.
    await fs.rm(copyOf(dir), { recursive: true, force: true });
  });

  test('an initdb that fails rejects with its exit status and output', async () => {
    const dir = await tempDir();
    // As root the server's user runs it: it must reach the directory.
    await fs.chmod(dir, 0o755);
    await fs.mkdir(path.join(dir, 'bin'));
    await fs.mkdir(path.join(dir, 'lib'));
    // Answers --version (so it is runnable), then fails as a real initdb does on a bad directory.
    await fs.writeFile(
      path.join(dir, 'bin', 'initdb'),
      '#!/bin/sh\n[ "$1" = --version ] && exit 0\necho "initdb: error: could not create directory: Permission denied" >&2\nexit 1\n',
      { mode: 0o755 },
    );
    await assert.rejects(
      startEmbeddedPostgres({ binaries: dir }),
      /initdb exited 1: initdb: error: could not create directory: Permission denied/,
    );
  });
});
