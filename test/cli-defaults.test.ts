// The offline first impression (D-64): `parley serve` outside a checkout keeps its data in the user's
// data directory and says so (no silent ./data), and `parley conformance` says which base URL to use
// when the target file's cannot be reached but PARLEY_BASE_URL names another.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { defaultDataDir } from '../cli/commands/serve.ts';
import { FIXTURES_DIR, startTestServer, tempDir, type TestServer } from './support/helpers.ts';
import { runCli } from './support/cli-helpers.ts';

describe('parley serve outside a checkout', () => {
  test('defaultDataDir: ./data in a checkout or where it exists, else the XDG data directory, said', async () => {
    const empty = await tempDir();
    const d = defaultDataDir(empty, { XDG_DATA_HOME: '/xdg', HOME: '/h' });
    assert.equal(d.dir, '/xdg/parley');
    assert.match(d.note!, /not a Parley checkout/);
    assert.equal(defaultDataDir(empty, { HOME: '/h' }).dir, '/h/.local/share/parley');
    const checkout = await tempDir();
    fs.writeFileSync(path.join(checkout, 'package.json'), '{"name":"parley"}');
    assert.deepEqual(defaultDataDir(checkout, {}), { dir: undefined });
    const withData = await tempDir();
    fs.mkdirSync(path.join(withData, 'data'));
    assert.deepEqual(defaultDataDir(withData, {}), { dir: undefined });
  });
});

describe('parley conformance with an unreachable target', () => {
  let s: TestServer;
  let target: string;
  let closedUrl: string;
  before(async () => {
    s = await startTestServer();
    // A port that was free a moment ago: nothing listens there.
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise((r) => probe.close(r));
    closedUrl = `http://127.0.0.1:${port}/v1`;
    const json = JSON.parse(fs.readFileSync(path.join(FIXTURES_DIR, 'target.json'), 'utf8'));
    target = path.join(await tempDir(), 'target.json');
    fs.writeFileSync(target, JSON.stringify({ ...json, base_url: closedUrl }));
  });
  after(() => s.close());

  test('PARLEY_BASE_URL pointing elsewhere: the run says which to use; no hint without one, or with --base-url', async () => {
    const r = await runCli(['conformance', '--target', target, '--only', 'S4.2-*'], { env: { PARLEY_BASE_URL: s.baseUrl } });
    assert.notEqual(r.code, 0);
    assert.ok(
      r.stderr.includes(
        `the target's base_url ${closedUrl} cannot be reached, and PARLEY_BASE_URL is ${s.baseUrl}: to test that one, run parley conformance --base-url ${s.baseUrl}`,
      ),
      r.stderr,
    );
    const none = await runCli(['conformance', '--target', target, '--only', 'S4.2-*']);
    assert.doesNotMatch(none.stderr, /cannot be reached, and/);
    const given = await runCli(['conformance', '--target', target, '--only', 'S4.2-*', '--base-url', closedUrl], {
      env: { PARLEY_BASE_URL: s.baseUrl },
    });
    assert.doesNotMatch(given.stderr, /cannot be reached, and/);
  });
});
