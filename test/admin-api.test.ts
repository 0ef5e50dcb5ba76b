// The admin surface /admin/v1 (docs/control-plane.md, D-65…D-70, D-75): sessions with their CSRF token,
// personal access tokens, API keys (create, roll, revoke: in effect on /v1 at once) and the audit log;
// every refusal a clear error that changes nothing; another team's ids are 404; a viewer's write is 403.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashPassword } from '../src/services/admin/passwords.ts';
import { draft } from './support/control-suite.ts';
import { APP, KEY, startTestServer, type TestServer } from './support/helpers.ts';

let server: TestServer;
let admin: string;
let origin: string;
before(async () => {
  server = await startTestServer({ passwordHashCost: 10 });
  origin = new URL(server.baseUrl).origin;
  const hash = await hashPassword('viewer-password', 10);
  await server.control.apply((d) => {
    d.members.push({
      id: 'mem_viewer',
      team_id: 'team_demo',
      email: 'viewer@demo.example',
      name: null,
      role: 'viewer',
      created_at: 0,
      password_hash: hash,
      invite: null,
      last_sign_in_at: null,
    });
    return [draft('team_demo', 'member.added')];
  });
  admin = await signIn('admin@demo.example', 'parley-demo-admin');
});
after(() => server.close());

interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

async function adminCall(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${origin}/admin/v1${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

/** Signs in and returns a personal access token of the member. */
async function signIn(email: string, password: string): Promise<string> {
  const s = await adminCall('POST', '/sessions', { email, password });
  assert.equal(s.status, 200, JSON.stringify(s.body));
  const cookie = s.headers.get('set-cookie')!.split(';')[0]!;
  const t = await adminCall('POST', '/tokens', { name: 'tests' }, { cookie, 'x-csrf-token': s.body.csrf_token });
  assert.equal(t.status, 200, JSON.stringify(t.body));
  return t.body.token;
}

const as = (token: string) => ({ authorization: `Bearer ${token}` });
const v1 = (key: string) => server.call('GET', `/apps/${APP}/config`, undefined, { key });

describe('sessions (D-66, D-67, D-69)', () => {
  test('a session cookie (HttpOnly, SameSite=Strict) reads with GET; a write needs its CSRF token', async () => {
    const s = await adminCall('POST', '/sessions', { email: 'ADMIN@demo.example', password: 'parley-demo-admin' });
    assert.equal(s.status, 200);
    assert.match(s.headers.get('set-cookie')!, /^parley_session=[\w-]{43}; HttpOnly; SameSite=Strict; Path=\//);
    assert.deepEqual([s.body.member.email, s.body.member.role, s.body.team.id], ['admin@demo.example', 'admin', 'team_demo']);
    assert.equal(s.body.member.password_hash, undefined);
    const cookie = s.headers.get('set-cookie')!.split(';')[0]!;
    assert.equal((await adminCall('GET', '/session', undefined, { cookie })).body.csrf_token, s.body.csrf_token);
    const version = server.control.read().version;
    const noCsrf = await adminCall('POST', '/keys', { type: 'secret', name: 'x' }, { cookie });
    assert.deepEqual([noCsrf.status, noCsrf.body.error.code, noCsrf.body.error.param], [403, 'csrf_failed', 'X-CSRF-Token']);
    assert.equal(server.control.read().version, version, 'the refusal changed nothing');
    const out = await adminCall('DELETE', '/sessions/current', undefined, { cookie, 'x-csrf-token': s.body.csrf_token });
    assert.equal(out.status, 200);
    const after = await adminCall('GET', '/keys', undefined, { cookie });
    assert.deepEqual([after.status, after.body.error.code], [401, 'invalid_admin_credential']);
  });

  test('a wrong password and an unknown email answer the same; failures back off per (email, address) with 429 and Retry-After', async () => {
    const wrong = await adminCall('POST', '/sessions', { email: 'admin@demo.example', password: 'not the password' });
    const unknown = await adminCall('POST', '/sessions', { email: 'nobody@demo.example', password: 'not the password' });
    assert.deepEqual([wrong.status, wrong.body.error], [401, { ...unknown.body.error }]);
    assert.equal(wrong.body.error.code, 'invalid_admin_credential');
    let last: Answer | undefined;
    for (let i = 0; i < 6; i++) last = await adminCall('POST', '/sessions', { email: 'guess@demo.example', password: 'guess' });
    assert.deepEqual([last!.status, last!.body.error.code], [429, 'sign_in_throttled']);
    assert.ok(Number(last!.headers.get('retry-after')) >= 1);
    const bad = await adminCall('POST', '/sessions', { email: 'not an email', password: 'x' });
    assert.deepEqual([bad.status, bad.body.error.param], [400, 'email']);
  });
});

describe('credentials never cross surfaces (D-65)', () => {
  test('an API key on /admin/v1 is 401 invalid_admin_credential saying so; a personal access token on /v1 is 401 invalid_api_key', async () => {
    const r = await adminCall('GET', '/keys', undefined, as(KEY));
    assert.deepEqual([r.status, r.body.error.type, r.body.error.code], [401, 'invalid_api_key', 'invalid_admin_credential']);
    assert.match(r.body.error.message, /API keys do not work/);
    assert.equal((await v1(admin)).status, 401);
    assert.equal((await v1(admin)).body.error.type, 'invalid_api_key');
    const none = await adminCall('GET', '/keys');
    assert.equal(none.body.error.code, 'invalid_admin_credential');
  });
});

describe('API keys (D-70)', () => {
  test("a team lists its own keys, redacted, with their last use; never another team's", async () => {
    await v1(KEY);
    const r = await adminCall('GET', '/keys', undefined, as(admin));
    assert.equal(r.status, 200);
    const ids = r.body.data.map((k: any) => k.id);
    assert.ok(ids.includes('key_demo_secret'));
    assert.ok(!ids.includes('key_other_secret'));
    const demo = r.body.data.find((k: any) => k.id === 'key_demo_secret');
    assert.equal(demo.redacted, 'sk_live_…C9P3');
    assert.ok(demo.last_used_at > 0);
    assert.ok(!JSON.stringify(r.body).includes('sha256'));
  });

  test('create shows the key once and it works at once; roll keeps the old one for its grace; revoke refuses it at once; all audited', async () => {
    const made = await adminCall('POST', '/keys', { type: 'secret', name: 'Made by a test' }, as(admin));
    assert.equal(made.status, 200);
    assert.match(made.body.key, /^sk_live_[0-9A-Za-z]{38}$/);
    assert.equal((await v1(made.body.key)).status, 200);
    const rolled = await adminCall('POST', `/keys/${made.body.id}/roll`, { expires_in_seconds: 3600 }, as(admin));
    assert.equal(rolled.status, 200);
    assert.equal((await v1(rolled.body.key)).status, 200, 'the new key works at once');
    assert.equal((await v1(made.body.key)).status, 200, 'the old key works until its grace ends');
    const revoked = await adminCall('POST', `/keys/${made.body.id}/revoke`, undefined, as(admin));
    assert.equal(revoked.status, 200);
    assert.equal((await v1(made.body.key)).status, 401, 'revoked: refused at once');
    const audit = await adminCall('GET', '/audit?limit=4', undefined, as(admin));
    assert.deepEqual(
      audit.body.data.map((a: any) => a.action),
      ['key.revoked', 'key.created', 'key.rolled', 'key.created'],
    );
    assert.equal(audit.body.has_more, true);
    assert.equal(audit.body.data[0].actor.email, 'admin@demo.example');
    assert.ok(!JSON.stringify(audit.body).includes(made.body.key), 'never a secret');
    const next = await adminCall('GET', `/audit?limit=100&after=${audit.body.last_id}`, undefined, as(admin));
    assert.ok(next.body.data.some((a: any) => a.action === 'session.created'));
  });

  test("another team's key is 404 on every key route; bad input is a 400 naming its field; a viewer's write is 403; none changes anything", async () => {
    const version = server.control.read().version;
    for (const path of ['/keys/key_other_secret/roll', '/keys/key_other_secret/revoke']) {
      const r = await adminCall('POST', path, undefined, as(admin));
      assert.deepEqual([r.status, r.body.error.type, r.body.error.param], [404, 'not_found', 'key_id'], path);
    }
    const bad = await adminCall('POST', '/keys', { type: 'root', name: 'x' }, as(admin));
    assert.deepEqual([bad.status, bad.body.error.param], [400, 'type']);
    const long = await adminCall('POST', '/keys/key_demo_secret/roll', { expires_in_seconds: 8 * 86_400 }, as(admin));
    assert.deepEqual([long.status, long.body.error.param], [400, 'expires_in_seconds']);
    const viewer = await signIn('viewer@demo.example', 'viewer-password');
    const denied = await adminCall('POST', '/keys', { type: 'secret', name: 'x' }, as(viewer));
    assert.deepEqual([denied.status, denied.body.error.code], [403, 'admin_role_required']);
    assert.equal((await adminCall('GET', '/keys', undefined, as(viewer))).status, 200, 'a viewer reads');
    const audit = await adminCall('GET', '/audit?action=key.created', undefined, as(viewer));
    assert.ok(audit.body.data.every((a: any) => a.action === 'key.created'));
    assert.ok(server.control.read().version <= version + 2, 'only the viewer token and its sign-in changed the document');
    assert.equal(server.control.read().keys.filter((k) => k.name === 'x').length, 0);
  });
});

describe('personal access tokens (D-68)', () => {
  test('a token is listed without its secret and, once revoked, refused', async () => {
    const token = await signIn('admin@demo.example', 'parley-demo-admin');
    const list = await adminCall('GET', '/tokens', undefined, as(token));
    const mine = list.body.data.find((t: any) => token.endsWith(t.redacted.slice(-4)));
    assert.ok(mine);
    assert.ok(!JSON.stringify(list.body).includes(token));
    assert.equal((await adminCall('DELETE', '/tokens/tok_unknown', undefined, as(token))).status, 404);
    assert.equal((await adminCall('DELETE', `/tokens/${mine.id}`, undefined, as(token))).status, 200);
    assert.equal((await adminCall('GET', '/keys', undefined, as(token))).status, 401);
  });
});
