// The live tenant registry (docs/control-plane.md, D-70, D-78): a change of the control plane's document
// is read by the next request of the instance that made it, without a restart: new and revoked keys,
// an app disabled or added; and a mistyped checksummed key is refused without a look-up.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { newSecret, redacted, sha256Hex } from '../src/core/api-keys.ts';
import type { ControlDocT } from '../src/core/control.ts';
import type { KeyT } from '../src/core/tenants.ts';
import { draft } from './support/control-suite.ts';
import { APP, KEY, startTestServer, type TestServer } from './support/helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

const keyOf = (id: string, text: string, over: Partial<KeyT> = {}): KeyT => ({
  id,
  team_id: 'team_demo',
  type: 'secret',
  sha256: sha256Hex(text),
  name: id,
  redacted: redacted(text),
  created_at: Math.floor(Date.now() / 1000),
  created_by: null,
  expires_at: null,
  revoked_at: null,
  rolled_to: null,
  signing_key: null,
  scenario: null,
  ...over,
});

const change = (fn: (d: ControlDocT) => void) =>
  server.control.apply((d) => {
    fn(d);
    return [draft('team_demo', 'test.changed')];
  });

const config = (key: string, app = APP) => server.call('GET', `/apps/${app}/config`, undefined, { key });

describe('the registry follows the control plane (D-78)', () => {
  test('D-70: a key added is accepted by the next request; revoked, or past its expiry, it is refused at once', async () => {
    const text = newSecret('sk_live_');
    assert.equal((await config(text)).status, 401, 'unknown before it is added');
    await change((d) => d.keys.push(keyOf('key_live_a', text)));
    assert.equal((await config(text)).status, 200);
    await change((d) => {
      d.keys.find((k) => k.id === 'key_live_a')!.revoked_at = Math.floor(Date.now() / 1000);
    });
    const revoked = await config(text);
    assert.equal(revoked.status, 401);
    assert.deepEqual(
      [(revoked.body as any).error.type, (revoked.body as any).error.message],
      ['invalid_api_key', 'This API key was revoked.'],
    );
    const rolled = newSecret('sk_live_');
    await change((d) => d.keys.push(keyOf('key_live_b', rolled, { expires_at: Math.floor(Date.now() / 1000) - 1 })));
    const expired = await config(rolled);
    assert.deepEqual([expired.status, (expired.body as any).error.message], [401, 'This API key has expired.']);
  });

  test('D-70: a key of the checksummed shape with a wrong checksum is refused, naming the checksum; a personal access token is no API key', async () => {
    const text = newSecret('sk_live_');
    await change((d) => d.keys.push(keyOf('key_live_c', text)));
    const last = text.at(-1) === 'a' ? 'b' : 'a';
    const typo = await config(text.slice(0, -1) + last);
    assert.equal(typo.status, 401);
    assert.equal((typo.body as any).error.type, 'invalid_api_key');
    assert.match((typo.body as any).error.message, /checksum/);
    const unknown = await config(newSecret('sk_live_'));
    assert.deepEqual([unknown.status, (unknown.body as any).error.message], [401, 'Invalid API key.'], 'a right checksum is looked up');
    const pat = await config(newSecret('pat_'));
    assert.deepEqual([pat.status, (pat.body as any).error.type], [401, 'invalid_api_key']);
  });

  test('an app disabled answers app_inactive at once; an app added is served, its engine made on first use', async () => {
    await change((d) => {
      d.apps.find((a) => a.id === 'app_genui')!.active = false;
    });
    assert.equal(((await config(KEY, 'app_genui')).body as any).error.type, 'app_inactive');
    await change((d) => {
      const demo = d.apps.find((a) => a.id === APP)!;
      d.apps.push({ ...structuredClone(demo), id: 'app_live_new', name: 'Added while running', widget: undefined });
    });
    const conv = await server.call('POST', '/apps/app_live_new/conversations', {});
    assert.equal(conv.status, 200);
    const sent = await server.call('POST', `/apps/app_live_new/conversations/${(conv.body as any).id}`, {
      message: { content: 'hello' },
      stream: false,
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
  });

  test("D-70: a key's use is known at once, off the request path", async () => {
    const before = Math.floor(Date.now() / 1000);
    assert.equal((await config(KEY)).status, 200);
    const used = await server.control.keyUse.lastUsed(['key_demo_secret']);
    assert.ok((used.get('key_demo_secret') ?? 0) >= before);
  });
});
