// Who may do what on the admin surface (issue 25 item 12; D-65): ONE table of every route of /admin/v1.
// A viewer's write is 403 admin_role_required; another team's keys, apps, members, tokens and audit
// entries are 404 (or absent from a list); neither changes anything. A route added to the admin surface
// fails the first test until it has its row here.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { adminClient, bearer, DEMO_ADMIN, seedMember, TEST_HASH_COST } from './support/admin-client.ts';
import { draft } from './support/control-suite.ts';
import { OTHER_TEAM_KEY, startTestServer, type TestServer } from './support/helpers.ts';

interface Row {
  /** Signing in, accepting an invitation: no credential, so neither check applies. */
  open?: boolean;
  /** Called by a viewer (a valid request): `403` for a change only an admin may make, else anything but 403. */
  viewer?: { path: string; body?: unknown; expect: 403 | 'allowed' };
  /** The same route naming another team's resource, called by this team's admin: 404 naming `param`. */
  otherTeam?: { path: string; body?: unknown; param: string };
  /** A list: none of these ids (another team's) appears in it. */
  lists?: { path: string; never: string[] };
}

const OTHER_TOKEN = 'tok_other_team_test';
/** Filled in `before`: a conversation of the other team's app (made through /v1). */
const OTHER_CONV = '{other_conv}';
/** D-107: the fixtures' conversation of app_inactive (the demo team's). */
const SEEDED_CONV = 'conv_5eed00000000000000000001';
let otherConv = '';
const filled = (path: string) => path.replace(OTHER_CONV, otherConv);

/** Every route of /admin/v1, by `METHOD pattern`. */
const ROUTES: Record<string, Row> = {
  'POST /sessions': { open: true },
  'GET /session': { viewer: { path: '/session', expect: 'allowed' } },
  'DELETE /sessions/current': { viewer: { path: '/sessions/current', expect: 'allowed' } },
  'GET /tokens': { lists: { path: '/tokens', never: [OTHER_TOKEN] } },
  'POST /tokens': { viewer: { path: '/tokens', body: { name: 'viewer' }, expect: 'allowed' } },
  'DELETE /tokens/:token_id': { otherTeam: { path: `/tokens/${OTHER_TOKEN}`, param: 'token_id' } },
  'GET /keys': { lists: { path: '/keys', never: ['key_other_secret'] } },
  'POST /keys': { viewer: { path: '/keys', body: { type: 'secret', name: 'x' }, expect: 403 } },
  'POST /keys/:key_id/roll': {
    viewer: { path: '/keys/key_demo_secret/roll', body: {}, expect: 403 },
    otherTeam: { path: '/keys/key_other_secret/roll', body: {}, param: 'key_id' },
  },
  'POST /keys/:key_id/revoke': {
    viewer: { path: '/keys/key_demo_secret/revoke', expect: 403 },
    otherTeam: { path: '/keys/key_other_secret/revoke', param: 'key_id' },
  },
  'GET /audit': { lists: { path: '/audit?limit=100', never: ['other.team.action'] } },
  'GET /credits': { viewer: { path: '/credits', expect: 'allowed' } },
  'GET /usage': {
    viewer: { path: '/usage', expect: 'allowed' },
    otherTeam: { path: '/usage?app_id=app_other', param: 'app_id' },
  },
  'GET /apps': { lists: { path: '/apps', never: ['app_other'] } },
  'POST /apps': { viewer: { path: '/apps', body: { name: 'x' }, expect: 403 } },
  'GET /apps/:app_id': { otherTeam: { path: '/apps/app_other', param: 'app_id' } },
  'PATCH /apps/:app_id': {
    viewer: { path: '/apps/app_demo', body: { name: 'x' }, expect: 403 },
    otherTeam: { path: '/apps/app_other', body: { name: 'x' }, param: 'app_id' },
  },
  'GET /apps/:app_id/conversations': {
    lists: { path: '/apps/app_inactive/conversations?deleted=include', never: [OTHER_CONV] },
    otherTeam: { path: '/apps/app_other/conversations', param: 'app_id' },
  },
  'GET /apps/:app_id/conversations/:conversation_id': {
    otherTeam: { path: `/apps/app_demo/conversations/${OTHER_CONV}`, param: 'conversation_id' },
  },
  'POST /apps/:app_id/conversations/:conversation_id/restore': {
    viewer: { path: `/apps/app_inactive/conversations/${SEEDED_CONV}/restore`, expect: 403 },
    otherTeam: { path: `/apps/app_other/conversations/${OTHER_CONV}/restore`, param: 'app_id' },
  },
  'GET /members': { lists: { path: '/members', never: ['mem_other_boss'] } },
  'POST /members': { viewer: { path: '/members', body: { email: 'x@demo.example', role: 'admin' }, expect: 403 } },
  'PATCH /members/:member_id': {
    viewer: { path: '/members/mem_demo_admin', body: { role: 'viewer' }, expect: 403 },
    otherTeam: { path: '/members/mem_other_boss', body: { role: 'viewer' }, param: 'member_id' },
  },
  'DELETE /members/:member_id': {
    viewer: { path: '/members/mem_demo_admin', expect: 403 },
    otherTeam: { path: '/members/mem_other_boss', param: 'member_id' },
  },
  'POST /members/:member_id/invite': {
    viewer: { path: '/members/mem_demo_admin/invite', expect: 403 },
    otherTeam: { path: '/members/mem_other_boss/invite', param: 'member_id' },
  },
  'POST /invites/accept': { open: true },
  // A wrong body: the route is open to a viewer (their own password), and nothing changes.
  'POST /password': { viewer: { path: '/password', body: {}, expect: 'allowed' } },
};

let server: TestServer;
let client: ReturnType<typeof adminClient>;
let admin: Record<string, string>;
let viewer: Record<string, string>;
before(async () => {
  server = await startTestServer({ passwordHashCost: TEST_HASH_COST });
  client = adminClient(new URL(server.baseUrl).origin);
  await seedMember(
    server.control,
    { id: 'mem_demo_viewer', team_id: 'team_demo', email: 'viewer@demo.example', role: 'viewer' },
    'viewer-password',
  );
  await seedMember(
    server.control,
    { id: 'mem_other_boss', team_id: 'team_other', email: 'boss@other.example', role: 'admin' },
    'boss-password',
  );
  await server.control.apply((d) => {
    d.tokens.push({
      id: OTHER_TOKEN,
      member_id: 'mem_other_boss',
      team_id: 'team_other',
      name: 'other',
      sha256: '0'.repeat(64),
      redacted: 'pat_…0000',
      created_at: 0,
      expires_at: 4_000_000_000,
      revoked_at: null,
    });
    return [draft('team_other', 'other.team.action')];
  });
  const made = await server.call('POST', '/apps/app_other/conversations', {}, { key: OTHER_TEAM_KEY });
  assert.equal(made.status, 200);
  otherConv = made.body.id;
  admin = bearer(await client.token(DEMO_ADMIN.email, DEMO_ADMIN.password));
  viewer = bearer(await client.token('viewer@demo.example', 'viewer-password'));
});
after(() => server.close());

describe('every admin route, by role and by team (D-65)', () => {
  test('the table has one row per route of /admin/v1, and each row checks something', () => {
    const routes = server.adminRoutes.map((r) => `${r.method} ${r.pattern}`);
    assert.deepEqual([...routes].sort(), Object.keys(ROUTES).sort(), 'a new admin route needs its row in ROUTES');
    for (const [route, row] of Object.entries(ROUTES))
      assert.ok(row.open || row.viewer || row.otherTeam || row.lists, `${route}: checks nothing`);
  });

  test("a viewer's write is 403 admin_role_required and changes nothing; a viewer's read is served", async () => {
    for (const [route, row] of Object.entries(ROUTES)) {
      if (!row.viewer) continue;
      const method = route.split(' ')[0]!;
      const version = server.control.read().version;
      const r = await client.call(method, filled(row.viewer.path), row.viewer.body, viewer);
      if (row.viewer.expect === 403) {
        assert.deepEqual([r.status, r.body.error.type, r.body.error.code], [403, 'access_denied', 'admin_role_required'], route);
        assert.equal(server.control.read().version, version, `${route}: the refusal changed nothing`);
      } else assert.notEqual(r.status, 403, `${route}: a viewer may (${JSON.stringify(r.body)})`);
    }
    for (const [route, row] of Object.entries(ROUTES))
      if (row.lists)
        assert.equal((await client.call('GET', filled(row.lists.path), undefined, viewer)).status, 200, `${route}: a viewer reads`);
  });

  test("another team's resource is 404 naming its parameter, and changes nothing", async () => {
    for (const [route, row] of Object.entries(ROUTES)) {
      if (!row.otherTeam) continue;
      const version = server.control.read().version;
      const r = await client.call(route.split(' ')[0]!, filled(row.otherTeam.path), row.otherTeam.body, admin);
      assert.deepEqual([r.status, r.body.error?.type, r.body.error?.param], [404, 'not_found', row.otherTeam.param], route);
      assert.equal(server.control.read().version, version, `${route}: the refusal changed nothing`);
    }
    const doc = server.control.read();
    assert.equal(doc.apps.find((a) => a.id === 'app_other')!.name, "Another team's app");
    assert.equal(doc.members.find((m) => m.id === 'mem_other_boss')!.role, 'admin');
  });

  test("a list never shows another team's resources", async () => {
    for (const [route, row] of Object.entries(ROUTES)) {
      if (!row.lists) continue;
      const r = await client.call('GET', filled(row.lists.path), undefined, admin);
      assert.equal(r.status, 200, route);
      assert.ok(r.body.data.length > 0, `${route}: the team's own are listed`);
      const text = JSON.stringify(r.body);
      for (const id of row.lists.never.map(filled)) assert.ok(!text.includes(id), `${route} shows ${id}`);
    }
  });
});
