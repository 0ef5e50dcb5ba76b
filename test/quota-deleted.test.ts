// D-176 (one rule with D-73): a deleted conversation's kept responses leave its app's storage count
// with its history, on the file store, and come back with a restore; a restart keeps them out. The
// conformance suite run again and again against one server relies on it (its §8 cases fill app_small).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { adminToken } from './support/admin-token.ts';
import { startTestServer, type TestServer } from './support/helpers.ts';

const APP = 'app_small';
const base = `/apps/${APP}/conversations`;

describe("D-176: a deleted conversation's kept responses are outside the quota", () => {
  let s: TestServer;
  let token: string;
  before(async () => {
    s = await startTestServer({ passwordHashCost: 10 });
    token = await adminToken(s.baseUrl);
  });
  after(() => s?.close());

  test('deleted: the app counts what it counted before the conversation; restored: all of it again; restarted: still out', async () => {
    const empty = await s.store.storedBytes(APP);
    const id = (await s.call('POST', base, {})).body.id as string;
    for (const content of ['one', 'two', 'three'])
      assert.equal((await s.call('POST', `${base}/${id}`, { message: { content }, stream: false })).status, 200);
    const live = await s.store.storedBytes(APP);
    const history = (await s.store.readHistory(id)).bytes;
    // The responses' files are kept for the hour (D-93), and count while the conversation lives.
    assert.ok(live > empty + history, `${live} > ${empty} + ${history}: the kept responses count`);
    assert.equal((await s.call('DELETE', `${base}/${id}`)).status, 200);
    assert.equal(await s.store.storedBytes(APP), empty, 'nothing of the deleted conversation counts');
    const origin = new URL(s.baseUrl).origin;
    const restored = await fetch(`${origin}/admin/v1/apps/${APP}/conversations/${id}/restore`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(restored.status, 200);
    assert.equal(await s.store.storedBytes(APP), live, 'restored: it all counts again');
    assert.equal((await s.call('DELETE', `${base}/${id}`)).status, 200);
    const dataDir = s.dataDir;
    await s.close();
    s = await startTestServer({ dataDir, passwordHashCost: 10 });
    assert.equal(
      await s.store.storedBytes(APP),
      empty,
      'a restart reads the kept responses of a deleted conversation as outside the count',
    );
  });
});
