// Embedded PostgreSQL from a checkout anywhere: binaries under a 0700 directory (a clone in root's
// home or in mkdtemp's directory) are out of reach of the server's user when running as root; the
// server still starts (from a copy it can read) and answers (test/support/embedded-postgres.ts).
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import postgres from 'postgres';
import { copyOf, packagedBinaries, startEmbeddedPostgres } from '../support/embedded-postgres.ts';
import { tempDir } from '../support/helpers.ts';

test('a server starts from binaries inside a 0700 directory, and answers', async () => {
  const hidden = await tempDir();
  await fs.chmod(hidden, 0o700);
  const native = path.join(hidden, 'native');
  await fs.cp(packagedBinaries(), native, { recursive: true, verbatimSymlinks: true });
  const server = await startEmbeddedPostgres({ binaries: native });
  const sql = postgres(server.adminUrl, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ encoding: string; ok: number }[]>`SELECT current_setting('server_encoding') AS encoding, 1 AS ok`;
    assert.equal(row!.ok, 1);
    // Text round-trips whatever its script (the conformance suite sends CJK, emoji and right-to-left text).
    assert.equal(row!.encoding, 'UTF8');
  } finally {
    await sql.end();
    await server.stop();
    await fs.rm(copyOf(native), { recursive: true, force: true });
  }
});
