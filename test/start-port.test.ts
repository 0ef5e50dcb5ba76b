// D-113: a start that cannot listen leaves nothing behind: the address is checked before the data
// directory (or the database) is touched, and the server listens only once the store is open.
import assert from 'node:assert/strict';
import fsSync from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import { APP, startTestServer, tempDir } from './support/helpers.ts';

describe('a start that cannot listen leaves nothing behind (D-113)', () => {
  test('a port in use on 127.0.0.1: the start fails with EADDRINUSE and the fresh data directory is never created', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    const dataDir = path.join(await tempDir(), 'data');
    try {
      await assert.rejects(startTestServer({ port, dataDir }), (err: NodeJS.ErrnoException) => err.code === 'EADDRINUSE');
      assert.equal(fsSync.existsSync(dataDir), false, `${dataDir} was created`);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
    // The same start once the port is free: the check lets it through, and it listens there.
    const s = await startTestServer({ port, dataDir });
    try {
      assert.equal(s.port, port);
      assert.equal((await s.call('GET', `/apps/${APP}/conversations`)).status, 200);
    } finally {
      await s.close();
    }
  });
});
