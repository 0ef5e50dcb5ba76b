// Who may do what on the admin surface (D-65), for every route of /admin/v1 that takes a credential:
// a viewer calling a route its row marks `adminOnly` (src/api/admin/*.ts) is 403 admin_role_required,
// any other is served; another team's keys, apps, members, tokens and audit entries are 404 (or absent
// from a list); neither changes anything. The table holds only the requests that probe each route; a
// route added to the admin surface fails the first test until it has its probes here.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { adminClient, bearer, DEMO_ADMIN, seedMember, TEST_HASH_COST } from './support/admin-client.ts';
import { draft } from './support/control-suite.ts';
import { OTHER_TEAM_KEY, startTestServer, type TestServer } from './support/helpers.ts';

interface Row {
  /** Called by a viewer (a valid request): 403 when the route is `adminOnly`, else anything but 403. */
  viewer?: { path: string; body?: unknown };
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
/** Webhook endpoints seeded in `before`, disabled (D-86: their deliveries are `skipped`, nothing is sent). */
const DEMO_ENDPOINT = 'endpoint_demo_access';
const OTHER_ENDPOINT = 'endpoint_other_access';
/** Filled in `before`: the events of a conversation made in each team's app (D-83). */
const DEMO_EVENT = '{demo_event}';
const OTHER_EVENT = '{other_event}';
let demoEvent = '';
let otherEvent = '';
const filled = (path: string) => path.replace(OTHER_CONV, otherConv).replace(DEMO_EVENT, demoEvent).replace(OTHER_EVENT, otherEvent);
const endpoint = { url: 'https://hooks.example/in', events: ['conversation.created'] };

/** Every route of /admin/v1 that takes a credential (the open ones, signing in and accepting an invitation, have none to check), by `METHOD pattern`. */
const ROUTES: Record<string, Row> = {
  'GET /session': { viewer: { path: '/session' } },
  'DELETE /sessions/current': { viewer: { path: '/sessions/current' } },
  'GET /tokens': { lists: { path: '/tokens', never: [OTHER_TOKEN] } },
  'POST /tokens': { viewer: { path: '/tokens', body: { name: 'viewer' } } },
  'DELETE /tokens/:token_id': { otherTeam: { path: `/tokens/${OTHER_TOKEN}`, param: 'token_id' } },
  'GET /keys': { lists: { path: '/keys', never: ['key_other_secret'] } },
  'POST /keys': { viewer: { path: '/keys', body: { type: 'secret', name: 'x' } } },
  'POST /keys/:key_id/roll': {
    viewer: { path: '/keys/key_demo_secret/roll', body: {} },
    otherTeam: { path: '/keys/key_other_secret/roll', body: {}, param: 'key_id' },
  },
  'POST /keys/:key_id/revoke': {
    viewer: { path: '/keys/key_demo_secret/revoke' },
    otherTeam: { path: '/keys/key_other_secret/revoke', param: 'key_id' },
  },
  'PUT /keys/:key_id/scenario': {
    viewer: { path: '/keys/key_demo_secret/scenario', body: { script: ['status=503'] } },
    otherTeam: { path: '/keys/key_other_secret/scenario', body: { script: ['status=503'] }, param: 'key_id' },
  },
  'DELETE /keys/:key_id/scenario': {
    viewer: { path: '/keys/key_demo_secret/scenario' },
    otherTeam: { path: '/keys/key_other_secret/scenario', param: 'key_id' },
  },
  'GET /audit': { lists: { path: '/audit?limit=100', never: ['other.team.action'] } },
  'GET /credits': { viewer: { path: '/credits' } },
  'GET /usage': {
    viewer: { path: '/usage' },
    otherTeam: { path: '/usage?app_id=app_other', param: 'app_id' },
  },
  'GET /apps': { lists: { path: '/apps', never: ['app_other'] } },
  'POST /apps': { viewer: { path: '/apps', body: { name: 'x' } } },
  'GET /apps/:app_id': { otherTeam: { path: '/apps/app_other', param: 'app_id' } },
  'PATCH /apps/:app_id': {
    viewer: { path: '/apps/app_demo', body: { name: 'x' } },
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
    viewer: { path: `/apps/app_inactive/conversations/${SEEDED_CONV}/restore` },
    otherTeam: { path: `/apps/app_other/conversations/${OTHER_CONV}/restore`, param: 'app_id' },
  },
  'GET /members': { lists: { path: '/members', never: ['mem_other_boss'] } },
  'POST /members': { viewer: { path: '/members', body: { email: 'x@demo.example', role: 'admin' } } },
  'PATCH /members/:member_id': {
    viewer: { path: '/members/mem_demo_admin', body: { role: 'viewer' } },
    otherTeam: { path: '/members/mem_other_boss', body: { role: 'viewer' }, param: 'member_id' },
  },
  'DELETE /members/:member_id': {
    viewer: { path: '/members/mem_demo_admin' },
    otherTeam: { path: '/members/mem_other_boss', param: 'member_id' },
  },
  'POST /members/:member_id/invite': {
    viewer: { path: '/members/mem_demo_admin/invite' },
    otherTeam: { path: '/members/mem_other_boss/invite', param: 'member_id' },
  },
  // A wrong body: the route is open to a viewer (their own password), and nothing changes.
  'POST /password': { viewer: { path: '/password', body: {} } },
  // Webhooks (docs/webhooks.md, D-81, D-87, D-88): an admin changes them and listens, a viewer reads.
  'GET /webhook_endpoints': { lists: { path: '/webhook_endpoints', never: [OTHER_ENDPOINT] } },
  'POST /webhook_endpoints': {
    viewer: { path: '/webhook_endpoints', body: { app_id: 'app_demo', ...endpoint } },
    otherTeam: { path: '/webhook_endpoints', body: { app_id: 'app_other', ...endpoint }, param: 'app_id' },
  },
  'GET /webhook_endpoints/:endpoint_id': {
    viewer: { path: `/webhook_endpoints/${DEMO_ENDPOINT}` },
    otherTeam: { path: `/webhook_endpoints/${OTHER_ENDPOINT}`, param: 'endpoint_id' },
  },
  'PATCH /webhook_endpoints/:endpoint_id': {
    viewer: { path: `/webhook_endpoints/${DEMO_ENDPOINT}`, body: { enabled: true } },
    otherTeam: { path: `/webhook_endpoints/${OTHER_ENDPOINT}`, body: { description: 'x' }, param: 'endpoint_id' },
  },
  // D-115: the deprecated alias of PATCH.
  'POST /webhook_endpoints/:endpoint_id': {
    viewer: { path: `/webhook_endpoints/${DEMO_ENDPOINT}`, body: { enabled: true } },
    otherTeam: { path: `/webhook_endpoints/${OTHER_ENDPOINT}`, body: { description: 'x' }, param: 'endpoint_id' },
  },
  'DELETE /webhook_endpoints/:endpoint_id': {
    viewer: { path: `/webhook_endpoints/${DEMO_ENDPOINT}` },
    otherTeam: { path: `/webhook_endpoints/${OTHER_ENDPOINT}`, param: 'endpoint_id' },
  },
  // D-129: a test event is an admin's, as a redeliver is.
  'POST /webhook_endpoints/:endpoint_id/test': {
    viewer: { path: `/webhook_endpoints/${DEMO_ENDPOINT}/test`, body: { type: 'conversation.created' } },
    otherTeam: { path: `/webhook_endpoints/${OTHER_ENDPOINT}/test`, body: { type: 'conversation.created' }, param: 'endpoint_id' },
  },
  'GET /webhook_deliveries': {
    lists: { path: '/webhook_deliveries', never: [OTHER_EVENT, OTHER_ENDPOINT] },
    otherTeam: { path: `/webhook_deliveries?endpoint_id=${OTHER_ENDPOINT}`, param: 'endpoint_id' },
  },
  'POST /webhook_deliveries/redeliver': {
    viewer: { path: '/webhook_deliveries/redeliver', body: { since: 0 } },
    otherTeam: { path: '/webhook_deliveries/redeliver', body: { since: 0, endpoint_id: OTHER_ENDPOINT }, param: 'endpoint_id' },
  },
  'GET /events/:event_id': {
    viewer: { path: `/events/${DEMO_EVENT}` },
    otherTeam: { path: `/events/${OTHER_EVENT}`, param: 'event_id' },
  },
  'POST /events/:event_id/redeliver': {
    viewer: { path: `/events/${DEMO_EVENT}/redeliver`, body: {} },
    otherTeam: { path: `/events/${OTHER_EVENT}/redeliver`, body: {}, param: 'event_id' },
  },
  'GET /webhook_events/stream': {
    viewer: { path: '/webhook_events/stream?app_id=app_demo' },
    otherTeam: { path: '/webhook_events/stream?app_id=app_other', param: 'app_id' },
  },
};

/** The id of the one event of `team`'s disabled endpoint, read as that team's admin reads it (D-87). */
async function eventOf(auth: Record<string, string>, endpointId: string): Promise<string> {
  const r = await client.call('GET', `/webhook_deliveries?endpoint_id=${endpointId}`, undefined, auth);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.data.length, 1, `one event for ${endpointId}`);
  assert.equal(r.body.data[0].state, 'skipped');
  return r.body.data[0].event_id;
}

let server: TestServer;
/** Whether the route's row marks it `adminOnly`, as the server mounted it. */
const adminOnly = (route: string) => server.adminRoutes.find((r) => `${r.method} ${r.pattern}` === route)!.adminOnly;
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
    const seeded = {
      ...endpoint,
      description: '',
      enabled: false,
      disabled_reason: 'manual' as const,
      signing_key_id: null,
      created_at: 0,
      updated_at: 0,
    };
    d.webhook_endpoints.push(
      { ...seeded, id: DEMO_ENDPOINT, team_id: 'team_demo', app_id: 'app_demo' },
      { ...seeded, id: OTHER_ENDPOINT, team_id: 'team_other', app_id: 'app_other' },
    );
    return [draft('team_other', 'other.team.action')];
  });
  assert.equal((await server.call('POST', '/apps/app_demo/conversations', {})).status, 200);
  const made = await server.call('POST', '/apps/app_other/conversations', {}, { key: OTHER_TEAM_KEY });
  assert.equal(made.status, 200);
  otherConv = made.body.id;
  admin = bearer(await client.token(DEMO_ADMIN.email, DEMO_ADMIN.password));
  viewer = bearer(await client.token('viewer@demo.example', 'viewer-password'));
  demoEvent = await eventOf(admin, DEMO_ENDPOINT);
  otherEvent = await eventOf(bearer(await client.token('boss@other.example', 'boss-password')), OTHER_ENDPOINT);
});
after(() => server.close());

describe('every admin route, by role and by team (D-65)', () => {
  test('the table has one row per route of /admin/v1 that takes a credential, and each row checks something', () => {
    const routes = server.adminRoutes.filter((r) => !r.open).map((r) => `${r.method} ${r.pattern}`);
    assert.deepEqual([...routes].sort(), Object.keys(ROUTES).sort(), 'a new admin route needs its row in ROUTES');
    for (const [route, row] of Object.entries(ROUTES)) assert.ok(row.viewer || row.otherTeam || row.lists, `${route}: checks nothing`);
    // Both branches of the viewer's check run.
    const probed = Object.entries(ROUTES).filter(([, row]) => row.viewer);
    assert.ok(probed.some(([route]) => adminOnly(route)) && probed.some(([route]) => !adminOnly(route)));
  });

  test("a viewer's write is 403 admin_role_required and changes nothing; a viewer's read is served", async () => {
    for (const [route, row] of Object.entries(ROUTES)) {
      if (!row.viewer) continue;
      const method = route.split(' ')[0]!;
      const version = server.control.read().version;
      const r = await client.call(method, filled(row.viewer.path), row.viewer.body, viewer);
      if (adminOnly(route)) {
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
