// Apps (D-71), members (D-72) and the password change (D-67) on the admin surface, through HTTP: one
// suite, run on the data directory's files by test/admin-manage.test.ts and on PostgreSQL by
// test/proof/pg-admin-manage.test.ts. Each change is seen by the next /v1 request; each refusal is a clear
// error naming its field that changes nothing; the audit log says who changed what, never a secret.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sha256Hex } from '../../src/core/api-keys.ts';
import { signJwt } from '../../src/pipeline/widget-tokens.ts';
import { type AdminAnswer, adminClient, bearer, DEMO_ADMIN, seedMember, TEST_HASH_COST } from './admin-client.ts';
import type { TestServer } from './helpers.ts';
import { PK, widgetCall } from './widget.ts';

const DEMO_SECRET = 'idsec_demo_T3kq9VnW2xLp8RbY4mZc6HsJ0aFgUeD1';
const NEW_SECRET = 'a-new-identity-secret-of-40-characters-xyz9';

export function adminManageSuite(name: string, start: (o: { passwordHashCost: number }) => Promise<TestServer>): void {
  describe(`apps and members on the admin surface: ${name}`, () => {
    let server: TestServer;
    let client: ReturnType<typeof adminClient>;
    let admin: Record<string, string>;
    const call = (method: string, path: string, body?: unknown, as: Record<string, string> = admin) => client.call(method, path, body, as);
    /** Asserts a refusal and that the document did not move. */
    const refused = async (answer: Promise<AdminAnswer>, status: number, code: string, param: string | null) => {
      const version = server.control.read().version;
      const r = await answer;
      assert.deepEqual(
        [r.status, r.body.error?.code ?? r.body.error?.type, r.body.error?.param],
        [status, code, param],
        JSON.stringify(r.body),
      );
      assert.equal(server.control.read().version, version, 'a refusal changes nothing');
      return r;
    };
    const lastAudit = async (action: string) => (await call('GET', `/audit?action=${action}&limit=1`)).body.data[0];

    before(async () => {
      server = await start({ passwordHashCost: TEST_HASH_COST });
      client = adminClient(new URL(server.baseUrl).origin);
      admin = bearer(await client.token(DEMO_ADMIN.email, DEMO_ADMIN.password));
    });
    after(() => server?.close());

    describe('apps (D-71)', () => {
      test("the team's apps are listed and read; the identity secret never in full, only which one is set", async () => {
        const list = await call('GET', '/apps');
        assert.equal(list.status, 200);
        const ids = list.body.data.map((a: any) => a.id);
        assert.ok(ids.includes('app_demo') && ids.includes('app_inactive'));
        assert.ok(!ids.includes('app_other'), "never another team's app");
        const demo = await call('GET', '/apps/app_demo');
        assert.deepEqual(demo.body.widget, {
          origins: ['http://localhost:3000', 'http://127.0.0.1:3000', 'https://shop.example'],
          identity_secret_set: true,
          identity_secret_redacted: '…UeD1',
        });
        assert.deepEqual(demo.body.agent, {
          active: true,
          name: 'Parley Assistant',
          instructions: server.tenants.apps.get('app_demo')!.agent.instructions,
          model: 'local',
          knowledge_base: 'demo',
        });
        assert.ok(!JSON.stringify(list.body).includes(DEMO_SECRET.slice(0, 12)), 'no identity secret in full');
        await refused(call('GET', '/apps/app_other'), 404, 'not_found', 'app_id');
      });

      test('an app created with a name serves /v1 at once; deactivated, the next request is 403 app_inactive; audited', async () => {
        const made = await call('POST', '/apps', { name: 'Made by a test' });
        assert.equal(made.status, 200, JSON.stringify(made.body));
        assert.match(made.body.id, /^app_[0-9a-f]{24}$/);
        assert.deepEqual(
          [made.body.active, made.body.stream, made.body.plan, made.body.agent.model, made.body.widget],
          [true, false, 'developer', 'local', null],
        );
        const conv = `/apps/${made.body.id}/conversations`;
        assert.equal((await server.call('POST', conv, {})).status, 200, 'the demo key reaches the new app of its team at once');
        const off = await call('PATCH', `/apps/${made.body.id}`, { active: false });
        assert.equal(off.body.active, false);
        const refusedV1 = await server.call('POST', conv, {});
        assert.deepEqual([refusedV1.status, refusedV1.body.error.type], [403, 'app_inactive']);
        assert.equal((await call('PATCH', `/apps/${made.body.id}`, { active: true })).status, 200);
        assert.equal((await server.call('GET', conv)).status, 200, 'active again');
        const created = await lastAudit('app.created');
        assert.deepEqual([created.target, created.changes.name], [{ type: 'app', id: made.body.id }, [null, 'Made by a test']]);
        const updated = await lastAudit('app.updated');
        assert.deepEqual(updated.changes, { active: [false, true] });
      });

      test('every setting changes and is served by the next request: agent, engine, streaming, generative UI, plan, widget', async () => {
        const id = (await call('POST', '/apps', { name: 'Settings', agent: { name: 'Helper' } })).body.id;
        const r = await call('PATCH', `/apps/${id}`, {
          name: 'Settings 2',
          stream: true,
          generative_ui: true,
          plan: 'limited',
          agent: { name: 'Helper 2', instructions: 'Be brief.', knowledge_base: 'demo', model: 'local' },
          widget: { origins: ['https://shop.example', 'https://shop.example'], identity_secret: NEW_SECRET },
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual(r.body.widget, {
          origins: ['https://shop.example'],
          identity_secret_set: true,
          identity_secret_redacted: '…xyz9',
        });
        const config = await server.call('GET', `/apps/${id}/config`);
        assert.deepEqual([config.body.stream, config.body.generative_ui, config.body.agent.name], [true, true, 'Helper 2']);
        const live = server.tenants.apps.get(id)!;
        assert.deepEqual([live.plan, live.agent.knowledge_base, live.widget?.identity_secret], ['limited', 'demo', NEW_SECRET]);
        const audit = await lastAudit('app.updated');
        assert.deepEqual(audit.changes['widget.identity_secret'], [null, '…xyz9']);
        assert.deepEqual(audit.changes.plan, ['developer', 'limited']);
        assert.ok(!JSON.stringify(audit).includes(NEW_SECRET), 'never a secret in the audit log');
        // The widget reads the new origins and identity secret at once (D-53, D-50).
        const identity = signJwt({ sub: 'user-7', iat: Math.floor(Date.now() / 1000) }, NEW_SECRET);
        const v = await widgetCall(server, 'POST', `/apps/${id}/visitors`, { auth: PK, body: { identity } });
        assert.deepEqual([v.status, v.body.external_user_id], [200, 'user-7'], JSON.stringify(v.body));
        const elsewhere = await widgetCall(server, 'POST', `/apps/${id}/visitors`, { auth: PK, body: {}, origin: 'http://localhost:3000' });
        assert.equal(elsewhere.status, 403, 'an origin no longer listed');
        const agentOff = await call('PATCH', `/apps/${id}`, { agent: { active: false, knowledge_base: null }, widget: null });
        assert.deepEqual([agentOff.body.agent.active, agentOff.body.agent.knowledge_base, agentOff.body.widget], [false, null, null]);
        const conv = await server.call('POST', `/apps/${id}/conversations`, {});
        const send = await server.call('POST', `/apps/${id}/conversations/${conv.body.id}`, { input: 'hello' });
        assert.deepEqual([send.status, send.body.error.type], [403, 'agent_unavailable']);
      });

      test("bad input is a 400 naming its field, another team's app a 404, and neither changes anything", async () => {
        await refused(call('PATCH', '/apps/app_demo', { plan: 'platinum' }), 400, 'invalid_value', 'plan');
        await refused(
          call('PATCH', '/apps/app_demo', { agent: { knowledge_base: 'nowhere' } }),
          400,
          'invalid_value',
          'agent.knowledge_base',
        );
        await refused(call('PATCH', '/apps/app_demo', { agent: { model: 'gpt' } }), 400, 'invalid_value', 'agent.model');
        await refused(
          call('PATCH', '/apps/app_demo', { widget: { identity_secret: 'short' } }),
          400,
          'invalid_value',
          'widget.identity_secret',
        );
        await refused(
          call('PATCH', '/apps/app_demo', { widget: { origins: ['https://shop.example/path'] } }),
          400,
          'invalid_value',
          'widget.origins.0',
        );
        await refused(call('PATCH', '/apps/app_demo', { colour: 'red' }), 400, 'unknown_parameter', 'colour');
        await refused(call('PATCH', '/apps/app_demo', { name: '   ' }), 400, 'invalid_value', 'name');
        await refused(call('POST', '/apps', {}), 400, 'missing_parameter', 'name');
        await refused(call('PATCH', '/apps/app_other', { name: 'Mine now' }), 404, 'not_found', 'app_id');
        const version = server.control.read().version;
        const same = await call('PATCH', '/apps/app_demo', { name: 'Demo app', agent: { model: 'local' } });
        assert.deepEqual([same.status, same.body.name], [200, 'Demo app']);
        assert.equal(server.control.read().version, version, 'a change to what is there is no step, and no audit entry');
        assert.equal(server.tenants.apps.get('app_other')!.name, "Another team's app");
      });
    });

    describe('members (D-72)', () => {
      test('an admin adds a member with a password (who then signs in); an email is taken whatever its case (409 email_taken)', async () => {
        const r = await call('POST', '/members', { email: 'Added@Demo.Example', role: 'viewer', password: 'added-password' });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual([r.body.email, r.body.role, r.body.password_set, r.body.invite], ['added@demo.example', 'viewer', true, null]);
        await client.session('added@demo.example', 'added-password');
        await refused(call('POST', '/members', { email: 'ADDED@demo.example', role: 'admin' }), 409, 'email_taken', 'email');
        await refused(call('POST', '/members', { email: 'not-an-email', role: 'admin' }), 400, 'invalid_value', 'email');
        await refused(call('POST', '/members', { email: 'x@demo.example', role: 'owner' }), 400, 'invalid_value', 'role');
        await refused(
          call('POST', '/members', { email: 'x@demo.example', role: 'viewer', password: 'short' }),
          400,
          'invalid_value',
          'password',
        );
        const list = await call('GET', '/members');
        assert.ok(list.body.data.some((m: any) => m.email === 'added@demo.example'));
        assert.ok(!JSON.stringify(list.body).includes('scrypt'), 'never a password hash');
        const audit = await lastAudit('member.added');
        assert.deepEqual(audit.changes.email, [null, 'added@demo.example']);
        assert.ok(!JSON.stringify(audit).includes('added-password'));
      });

      test('an invitation answers its set-password token once; the token sets the password once; a new link replaces the old', async () => {
        const r = await call('POST', '/members', { email: 'invited@demo.example', role: 'viewer', name: 'Invited' });
        assert.equal(r.status, 200);
        assert.equal(r.body.password_set, false);
        assert.ok(r.body.invite.expires_at > Date.now() / 1000 + 6 * 86_400);
        // D-72: the link opens the dashboard's set-password page, the token in its fragment.
        assert.equal(r.body.invite.accept_url, `${new URL(server.baseUrl).origin}/dashboard#/invite/${r.body.invite.token}`);
        const first = r.body.invite.token as string;
        assert.equal((await client.call('POST', '/sessions', { email: 'invited@demo.example', password: 'x' })).status, 401);
        const again = await call('POST', `/members/${r.body.id}/invite`);
        assert.equal(again.status, 200);
        await refused(
          client.call('POST', '/invites/accept', { token: first, password: 'invited-password' }),
          400,
          'invalid_value',
          'token',
        );
        const set = await client.call('POST', '/invites/accept', { token: again.body.invite.token, password: 'invited-password' });
        assert.deepEqual([set.status, set.body.password_set], [200, true]);
        await client.session('invited@demo.example', 'invited-password');
        await refused(
          client.call('POST', '/invites/accept', { token: again.body.invite.token, password: 'other-password' }),
          400,
          'invalid_value',
          'token',
        );
        await refused(call('POST', `/members/${r.body.id}/invite`), 400, 'invalid_value', 'member_id');
        const late = await call('POST', '/members', { email: 'late@demo.example', role: 'viewer' });
        await server.control.apply((d) => {
          d.members.find((m) => m.id === late.body.id)!.invite!.expires_at = Math.floor(Date.now() / 1000) - 1;
          return [];
        });
        await refused(
          client.call('POST', '/invites/accept', { token: late.body.invite.token, password: 'late-password' }),
          400,
          'invalid_value',
          'token',
        );
        const audit = await call('GET', '/audit?limit=20');
        assert.ok(audit.body.data.some((a: any) => a.action === 'member.password_set' && a.actor.id === r.body.id));
        assert.ok(!JSON.stringify(audit.body).includes(first), 'never a token in the audit log');
      });

      test('a role changes at once; the last admin of a team cannot be demoted or removed (409 last_admin)', async () => {
        await seedMember(
          server.control,
          { id: 'mem_other_admin', team_id: 'team_other', email: 'boss@other.example', role: 'admin' },
          'other-password',
        );
        const other = bearer(await client.token('boss@other.example', 'other-password'));
        await refused(call('PATCH', '/members/mem_other_admin', { role: 'viewer' }, other), 409, 'last_admin', 'member_id');
        await refused(call('DELETE', '/members/mem_other_admin', undefined, other), 409, 'last_admin', 'member_id');
        const second = await call('POST', '/members', { email: 'second@other.example', role: 'admin', password: 'second-password' }, other);
        assert.equal(second.status, 200);
        const demoted = await call('PATCH', '/members/mem_other_admin', { role: 'viewer' }, other);
        assert.deepEqual([demoted.status, demoted.body.role], [200, 'viewer']);
        const now = await call('POST', '/members', { email: 'third@other.example', role: 'viewer' }, other);
        assert.deepEqual([now.status, now.body.error.code], [403, 'admin_role_required'], 'the demotion holds for the next request');
        const audit = await call(
          'GET',
          '/audit?action=member.updated&limit=1',
          undefined,
          bearer(await client.token('second@other.example', 'second-password')),
        );
        assert.deepEqual(audit.body.data[0].changes, { role: ['admin', 'viewer'] });
        await refused(call('PATCH', `/members/${second.body.id}`, { role: 'viewer' }), 404, 'not_found', 'member_id');
      });

      test('removing a member ends their sessions and access tokens at once', async () => {
        const m = await call('POST', '/members', { email: 'leaving@demo.example', role: 'admin', password: 'leaving-password' });
        const s = await client.session('leaving@demo.example', 'leaving-password');
        const token = bearer(await client.token('leaving@demo.example', 'leaving-password'));
        assert.equal((await call('GET', '/keys', undefined, token)).status, 200);
        const gone = await call('DELETE', `/members/${m.body.id}`);
        assert.deepEqual(gone.body, { id: m.body.id, object: 'member', deleted: true });
        assert.equal((await call('GET', '/keys', undefined, token)).status, 401);
        assert.equal((await call('GET', '/keys', undefined, { cookie: s.cookie })).status, 401);
        assert.ok(!server.control.read().tokens.some((t) => t.member_id === m.body.id));
        assert.equal(await server.control.sessions.get(sha256Hex(s.cookie.split('=')[1]!)), undefined, 'the session is forgotten');
        const audit = await lastAudit('member.removed');
        assert.deepEqual(audit.changes.email, ['leaving@demo.example', null]);
        await refused(call('DELETE', `/members/${m.body.id}`), 404, 'not_found', 'member_id');
      });
    });

    describe('password change (D-67, D-66)', () => {
      test('a member changes their password with the current one; their other sessions end, this one stays', async () => {
        await seedMember(
          server.control,
          { id: 'mem_changer', team_id: 'team_demo', email: 'changer@demo.example', role: 'viewer' },
          'first-password',
        );
        const here = await client.session('changer@demo.example', 'first-password');
        const elsewhere = await client.session('changer@demo.example', 'first-password');
        await refused(
          call('POST', '/password', { current_password: 'wrong-password', new_password: 'second-password' }, here.headers),
          400,
          'invalid_value',
          'current_password',
        );
        await refused(
          call('POST', '/password', { current_password: 'first-password', new_password: 'short' }, here.headers),
          400,
          'invalid_value',
          'new_password',
        );
        const ok = await call('POST', '/password', { current_password: 'first-password', new_password: 'second-password' }, here.headers);
        assert.equal(ok.status, 200, JSON.stringify(ok.body));
        assert.equal((await call('GET', '/session', undefined, here.headers)).status, 200, 'the session that changed it stays');
        assert.equal((await call('GET', '/session', undefined, elsewhere.headers)).status, 401, 'the others end');
        assert.equal((await client.call('POST', '/sessions', { email: 'changer@demo.example', password: 'first-password' })).status, 401);
        await client.session('changer@demo.example', 'second-password');
        const hash = server.control.read().members.find((m) => m.id === 'mem_changer')!.password_hash!;
        assert.match(hash, new RegExp(`^scrypt\\$${TEST_HASH_COST}\\$`), 'hashed at the configured cost');
        assert.equal((await lastAudit('member.password_changed')).actor.id, 'mem_changer');
      });
    });
  });
}
