// The admin surface's low findings of the attacker's day (docs/reliability.md): an unknown email is
// checked at a stored hash's cost and stored costs follow the setting (D-66); two session cookies are
// refused and every answer of the three surfaces says `Cache-Control: no-store` (D-171); the CLI and the
// dashboard walk every page of the keys and tokens (D-173).
import assert from 'node:assert/strict';
import { after, before, describe, mock, test } from 'node:test';
import { listAll } from '../dashboard/api.ts';
import { hashPool } from '../src/services/admin/hashing.ts';
import { costOf } from '../src/core/control.ts';
import { hashPassword } from '../src/services/admin/passwords.ts';
import { adminClient, bearer, DEMO_ADMIN } from './support/admin-client.ts';
import { draft } from './support/control-suite.ts';
import { runCli } from './support/cli-helpers.ts';
import { APP, FIXTURES_DIR, startTestServer, tempDir, type TestServer } from './support/helpers.ts';
import { PK, widgetCall } from './support/widget.ts';

/** The configured cost of new hashes here; the fixtures' admin hash is at the production cost (15). */
const COST = 6;

let server: TestServer;
let client: ReturnType<typeof adminClient>;
before(async () => {
  // The fixtures themselves: the demo admin's hash at the production cost is what the first test reads.
  server = await startTestServer({ passwordHashCost: COST, fixturesDir: FIXTURES_DIR });
  client = adminClient(new URL(server.baseUrl).origin);
});
after(() => server.close());

const adminHash = () => server.control.read().members.find((m) => m.email === DEMO_ADMIN.email)!.password_hash!;

describe('verification time independent of the account (D-66)', () => {
  test("an unknown email is checked at a stored hash's cost, not the setting's; a sign-in makes the hash again at the setting's", async (t) => {
    assert.equal(costOf(adminHash()), 15, 'the fixtures hash at the production cost');
    const verify = t.mock.method(hashPool, 'verify');
    const unknown = await client.call('POST', '/sessions', { email: 'nobody@demo.example', password: 'a wrong password' });
    assert.equal(unknown.status, 401);
    // The one stored hash is at 15: an unknown email costs what the admin's sign-in costs.
    assert.deepEqual(verify.mock.calls[0]!.arguments.slice(1), [null, 15]);
    const version = server.control.read().version;
    await client.session(DEMO_ADMIN.email, DEMO_ADMIN.password);
    assert.equal(costOf(adminHash()), COST, 'the right password was hashed again at the configured cost');
    assert.ok(server.control.read().version > version);
    await client.session(DEMO_ADMIN.email, DEMO_ADMIN.password);
    verify.mock.resetCalls();
    // Two stored costs: each unknown email is checked at one of them, the same one every time.
    const hash = await hashPassword('viewer-password', 4);
    await server.control.apply((d) => {
      d.members.push({ ...member('mem_cost4', 'cost4@demo.example'), password_hash: hash });
      return [draft('team_demo', 'member.added')];
    });
    const costs = new Map<string, number>();
    for (const email of ['a@x.example', 'b@x.example', 'c@x.example', 'd@x.example', 'e@x.example', 'a@x.example']) {
      await client.call('POST', '/sessions', { email, password: 'a wrong password' });
      const cost = verify.mock.calls.at(-1)!.arguments[2] as number;
      assert.ok([COST, 4].includes(cost), `checked at ${cost}`);
      assert.equal(costs.get(email) ?? cost, cost, 'the same email, the same cost');
      costs.set(email, cost);
    }
    assert.deepEqual(new Set(costs.values()), new Set([COST, 4]), 'both stored costs are used');
    mock.restoreAll();
  });
});

describe('session cookies and caching (D-171)', () => {
  test('a request with two session cookies is refused 401, whichever of them is the real one', async () => {
    const s = await client.session(DEMO_ADMIN.email, DEMO_ADMIN.password);
    const other = await client.session(DEMO_ADMIN.email, DEMO_ADMIN.password);
    assert.equal((await client.call('GET', '/session', undefined, { cookie: s.cookie })).status, 200);
    for (const cookie of [`${s.cookie}; ${other.cookie}`, `${s.cookie}; parley_session=planted`, `parley_session=planted; ${s.cookie}`]) {
      const r = await client.call('GET', '/session', undefined, { cookie });
      assert.deepEqual([r.status, r.body.error.code], [401, 'invalid_admin_credential'], cookie);
      assert.match(r.body.error.message, /several parley_session cookies/);
    }
    // Other cookies beside the one session cookie are no concern.
    assert.equal((await client.call('GET', '/session', undefined, { cookie: `theme=dark; ${s.cookie}; x=1` })).status, 200);
  });

  test('every answer of /v1, /widget/v1 and /admin/v1, an error too, says Cache-Control: no-store', async () => {
    const token = bearer(await client.token(DEMO_ADMIN.email, DEMO_ADMIN.password));
    const answers = [
      await server.call('GET', `/apps/${APP}/config`),
      await server.call('GET', `/apps/${APP}/conversations`),
      await server.call('GET', `/apps/${APP}/config`, undefined, { key: 'sk_live_wrong' }),
      await widgetCall(server, 'POST', `/apps/${APP}/visitors`, { auth: PK, body: {} }),
      await widgetCall(server, 'GET', `/apps/${APP}/config`, { auth: 'not-a-token' }),
      await client.call('GET', '/keys', undefined, token),
      await client.call('GET', '/members', undefined, token),
      await client.call('GET', '/keys'),
      await client.call('PUT', '/keys', undefined, token),
    ];
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 401, 200, 401, 200, 200, 401, 405],
    );
    for (const a of answers) assert.equal(a.headers.get('cache-control'), 'no-store');
  });
});

describe('the CLI and the dashboard walk every page (D-173)', () => {
  test('keys list and admin tokens list show every key and token past the first page of 100', async () => {
    await server.control.apply((d) => {
      for (let i = 0; i < 130; i++) {
        d.keys.push({
          ...d.keys.find((k) => k.id === 'key_demo_publishable')!,
          id: `key_seeded_${i}`,
          sha256: i.toString(16).padStart(64, 'a'),
        });
      }
      return [draft('team_demo', 'key.created')];
    });
    const text = await client.token(DEMO_ADMIN.email, DEMO_ADMIN.password);
    const admin = bearer(text);
    const first = await client.call('GET', '/keys', undefined, admin);
    assert.deepEqual([first.body.data.length, first.body.has_more], [100, true], 'the API answers a page');
    const teamKeys = server.control
      .read()
      .keys.filter((k) => k.team_id === 'team_demo')
      .map((k) => k.id);
    const env = { PARLEY_BASE_URL: server.baseUrl, PARLEY_ADMIN_TOKEN: text, XDG_CONFIG_HOME: await tempDir() };
    const keys = await runCli(['keys', 'list', '--json'], { env });
    assert.equal(keys.code, 0, keys.stderr);
    const listed = JSON.parse(keys.stdout);
    assert.deepEqual(
      listed.data.map((k: { id: string }) => k.id),
      teamKeys,
    );
    assert.equal(listed.has_more, false);
    const table = await runCli(['keys', 'list'], { env });
    assert.match(table.stdout, /key_seeded_129/);
    for (let i = 0; i < 102; i++) await client.call('POST', '/tokens', { name: `t${i}` }, admin);
    const tokens = await runCli(['admin', 'tokens', 'list', '--json'], { env });
    assert.equal(tokens.code, 0, tokens.stderr);
    const mine = server.control.read().tokens.filter((t) => t.member_id === 'mem_demo_admin' && t.revoked_at === null);
    assert.deepEqual(
      JSON.parse(tokens.stdout).data.map((t: { id: string }) => t.id),
      mine.map((t) => t.id),
    );
  });

  test("the dashboard's lists read page after page until has_more is false", async (t) => {
    const asked: string[] = [];
    const pages = [
      { data: [{ id: 'a' }, { id: 'b' }], has_more: true, last_id: 'b' },
      { data: [{ id: 'c' }], has_more: false, last_id: 'c' },
    ];
    t.mock.method(globalThis, 'fetch', async (url: string) => {
      asked.push(url);
      return new Response(JSON.stringify(pages[asked.length - 1]), { status: 200 });
    });
    const all = await listAll<{ id: string }>('/keys');
    assert.deepEqual(
      all.data.map((k) => k.id),
      ['a', 'b', 'c'],
    );
    assert.deepEqual(asked, ['/admin/v1/keys?limit=100', '/admin/v1/keys?limit=100&after=b']);
  });
});

function member(id: string, email: string) {
  return {
    id,
    team_id: 'team_demo',
    email,
    name: null,
    role: 'viewer' as const,
    created_at: 0,
    password_hash: null,
    invite: null,
    last_sign_in_at: null,
  };
}
