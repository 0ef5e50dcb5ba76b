// D-75: an audit log a person can read: a new key's entry names the key, a failed sign-in's actor is
// nobody proven (its address says where from, in the CLI too), and the known actions are one list that the admin
// API's filter and the CLI's --action both check, a mistyped action refused with the list.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AUDIT_ACTIONS } from '../src/contract/audit-actions.ts';
import { adminClient, bearer, DEMO_ADMIN, TEST_HASH_COST } from './support/admin-client.ts';
import { runCli } from './support/cli-helpers.ts';
import { startTestServer, tempDir, type TestServer } from './support/helpers.ts';

let server: TestServer;
let admin: ReturnType<typeof adminClient>;
let auth: Record<string, string>;
let token: string;
before(async () => {
  server = await startTestServer({ passwordHashCost: TEST_HASH_COST });
  admin = adminClient(new URL(server.baseUrl).origin);
  token = await admin.token(DEMO_ADMIN.email, DEMO_ADMIN.password);
  auth = bearer(token);
});
after(() => server.close());

const entries = async (action: string) => {
  const r = await admin.call('GET', `/audit?action=${action}`, undefined, auth);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.data as Array<{ actor: { type: string; id: string | null; email: string | null }; [k: string]: any }>;
};

test("D-75: key.created records the key's name and type (the key by its redacted form only), made or rolled", async () => {
  const made = await admin.call('POST', '/keys', { type: 'publishable', name: 'Storefront widget' }, auth);
  assert.equal(made.status, 200);
  const rolled = await admin.call('POST', `/keys/${made.body.id}/roll`, {}, auth);
  assert.equal(rolled.status, 200);
  const created = await entries('key.created');
  for (const key of [made.body, rolled.body]) {
    const e = created.find((x) => x.target.id === key.id);
    assert.deepEqual(e?.changes, {
      name: [null, 'Storefront widget'],
      type: [null, 'publishable'],
      redacted: [null, key.redacted],
    });
    assert.equal(JSON.stringify(e).includes(key.key), false, 'never the key itself');
  }
});

test("D-75: a failed sign-in's actor is anonymous, not the service; its address and the member tried are the entry's", async () => {
  const r = await admin.call('POST', '/sessions', { email: DEMO_ADMIN.email, password: 'not-the-password' });
  assert.equal(r.status, 401);
  const [e] = await entries('session.failed');
  assert.deepEqual(e?.actor, { type: 'anonymous', id: null, email: null });
  assert.equal(e?.address, '127.0.0.1');
  assert.deepEqual(e?.target, { type: 'member', id: 'mem_demo_admin' });
  const env = { PARLEY_BASE_URL: server.baseUrl, PARLEY_ADMIN_TOKEN: token, XDG_CONFIG_HOME: await tempDir('parley-cli-audit-') };
  const cli = await runCli(['audit', 'list', '--action', 'session.failed'], { env });
  assert.equal(cli.code, 0, cli.stderr);
  assert.match(cli.stdout, /session\.failed\s+anonymous from 127\.0\.0\.1\s+mem_demo_admin/);
});

test('D-75: the filter takes the known actions only; a mistyped one is 400 naming them, not an empty page', async () => {
  const r = await admin.call('GET', '/audit?action=key.revokd', undefined, auth);
  assert.equal(r.status, 400);
  assert.equal(r.body.error.param, 'action');
  for (const a of AUDIT_ACTIONS) assert.ok(r.body.error.message.includes(a), `${a} in: ${r.body.error.message}`);
  for (const a of AUDIT_ACTIONS) assert.equal((await admin.call('GET', `/audit?action=${a}`, undefined, auth)).status, 200, a);
});

test("D-75, D-79: the CLI's audit list --action key.revokd exits 2 naming the known actions, before any request", async () => {
  const home = await tempDir('parley-cli-audit-');
  // No login and an address nothing listens on: the refusal comes from the CLI's own check.
  const r = await runCli(['audit', 'list', '--action', 'key.revokd'], {
    env: { PARLEY_BASE_URL: 'http://127.0.0.1:9/v1', XDG_CONFIG_HOME: home },
  });
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /key\.revokd/);
  for (const a of AUDIT_ACTIONS) assert.ok(r.stderr.includes(a), `${a} in: ${r.stderr}`);
});
