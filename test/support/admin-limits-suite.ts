// What one team may learn of and do to the others through the admin surface, on both stores (run on
// the data directory's files by test/admin-limits.test.ts, on PostgreSQL by
// test/proof/pg-admin-limits.test.ts): emails checked and normalised, and never said to be another
// team's (D-172); caps per team and paginated lists (D-173); a rolled key's successor keeps a lifetime (D-174).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ParleyOptions } from '../../src/app.ts';
import { type AdminAnswer, adminClient, bearer, DEMO_ADMIN, seedMember, TEST_HASH_COST } from './admin-client.ts';
import type { TestServer } from './helpers.ts';

type Start = (o: ParleyOptions) => Promise<TestServer>;

/** The other team's admin, put into the control plane by the suite. */
const OTHER = { id: 'mem_other_boss', team_id: 'team_other', email: 'boss@other.example', role: 'admin' as const };

export function adminLimitsSuite(name: string, start: Start): void {
  describe(`emails, caps and lists on the admin surface: ${name}`, () => {
    let server: TestServer;
    let client: ReturnType<typeof adminClient>;
    let demo: Record<string, string>;
    let other: Record<string, string>;
    const call = (method: string, path: string, body?: unknown, as: Record<string, string> = demo) => client.call(method, path, body, as);
    const refused = async (answer: Promise<AdminAnswer>, status: number, code: string, param: string | null) => {
      const version = server.control.read().version;
      const r = await answer;
      assert.deepEqual([r.status, r.body.error?.code, r.body.error?.param], [status, code, param], JSON.stringify(r.body));
      assert.equal(server.control.read().version, version, 'a refusal changes nothing');
      return r;
    };

    before(async () => {
      server = await start({ passwordHashCost: TEST_HASH_COST });
      client = adminClient(new URL(server.baseUrl).origin);
      demo = bearer(await client.token(DEMO_ADMIN.email, DEMO_ADMIN.password));
      await seedMember(server.control, OTHER, 'other-password');
      other = bearer(await client.token(OTHER.email, 'other-password'));
    });
    after(() => server?.close());

    describe('emails (D-172)', () => {
      test('a control or invisible character is refused with words saying so; nothing is added', async () => {
        for (const email of ['ada\u0000@demo.example', 'ada@demo.example\u0000', 'a\u200bda@demo.example', 'ada@demo\u2028.example']) {
          const r = await refused(call('POST', '/members', { email, role: 'viewer' }), 400, 'invalid_value', 'email');
          assert.match(r.body.error.message, /control or invisible characters/);
          await refused(client.call('POST', '/sessions', { email, password: 'whatever-password' }), 400, 'invalid_value', 'email');
        }
      });

      test('lookalike forms of one address (full-width letters, case) are one account: they sign in, and are taken in the team', async () => {
        const wide = 'ＡＤＭＩＮ＠ｄｅｍｏ．ｅｘａｍｐｌｅ';
        await client.session(wide, DEMO_ADMIN.password);
        await client.session('Admin@Demo.Example', DEMO_ADMIN.password);
        await refused(call('POST', '/members', { email: wide, role: 'viewer' }), 409, 'email_taken', 'email');
        const added = await call('POST', '/members', { email: 'ｌｉｇａｔｕｒｅ＠ﬁ.example', role: 'viewer' });
        assert.equal(added.body.email, 'ligature@fi.example', 'kept in its normal form');
      });

      test("adding another team's email answers as any new email does; accepting the invitation is 409 email_taken", async () => {
        const taken = await call('POST', '/members', { email: 'BOSS@other.example', role: 'viewer' });
        const fresh = await call('POST', '/members', { email: 'nobody-yet@demo.example', role: 'viewer' });
        assert.deepEqual([taken.status, fresh.status], [200, 200], JSON.stringify(taken.body));
        const shape = (b: any) => ({
          ...b,
          id: typeof b.id,
          email: typeof b.email,
          created_at: typeof b.created_at,
          invite: Object.keys(b.invite),
        });
        assert.deepEqual(shape(taken.body), shape(fresh.body), 'the same answer whether another team has the email or not');
        const accepted = await refused(
          client.call('POST', '/invites/accept', { token: taken.body.invite.token, password: 'a-new-password' }),
          409,
          'email_taken',
          'token',
        );
        assert.match(accepted.body.error.message, /has an account already/);
        // The account stays the other team's: it signs in there, with its own password.
        const s = await client.call('POST', '/sessions', { email: OTHER.email, password: 'other-password' });
        assert.deepEqual([s.status, s.body.team.id], [200, 'team_other']);
        const set = await client.call('POST', '/invites/accept', { token: fresh.body.invite.token, password: 'a-new-password' });
        assert.equal(set.status, 200, 'an email nobody has is accepted');
        // Added with a password, the email still signs in to the account that had it first.
        const withPassword = await call(
          'POST',
          '/members',
          { email: DEMO_ADMIN.email, role: 'viewer', password: 'other-chose-this' },
          other,
        );
        assert.deepEqual([withPassword.status, withPassword.body.password_set], [200, true]);
        assert.equal((await client.call('POST', '/sessions', { email: DEMO_ADMIN.email, password: 'other-chose-this' })).status, 401);
        const demoSession = await client.call('POST', '/sessions', DEMO_ADMIN);
        assert.deepEqual([demoSession.status, demoSession.body.team.id], [200, 'team_demo']);
      });
    });

    describe('lists a page at a time (D-173)', () => {
      test('keys and tokens: limit and after walk the list in the order it was made; an unknown cursor is 400 invalid_cursor', async () => {
        const all = server.control.read().keys.filter((k) => k.team_id === 'team_demo');
        const seen: string[] = [];
        for (let after: string | undefined, more = true; more; ) {
          const page = await call('GET', `/keys?limit=1${after ? `&after=${after}` : ''}`);
          assert.equal(page.status, 200, JSON.stringify(page.body));
          seen.push(...page.body.data.map((k: any) => k.id));
          ({ has_more: more, last_id: after } = page.body);
        }
        assert.deepEqual(
          seen,
          all.map((k) => k.id),
        );
        await refused(call('GET', '/keys?after=key_other_secret'), 400, 'invalid_cursor', 'after');
        await refused(call('GET', '/keys?limit=101'), 400, 'invalid_value', 'limit');
        const t1 = await call('POST', '/tokens', { name: 'one' });
        const t2 = await call('POST', '/tokens', { name: 'two' });
        await call('DELETE', `/tokens/${t1.body.id}`);
        const first = await call('GET', '/tokens?limit=1');
        assert.equal(first.body.has_more, true);
        const rest = await call('GET', `/tokens?after=${t1.body.id}`);
        assert.deepEqual(
          rest.body.data.map((t: any) => t.id),
          [t2.body.id],
          'a revoked token is still a cursor',
        );
      });
    });

    describe('a rolled key keeps a lifetime (D-174)', () => {
      test("the successor of a key with an expiry gets the predecessor's lifetime from now; an expired key's too; a key without one, none", async () => {
        const now = () => Math.floor(Date.now() / 1000);
        const made = await call('POST', '/keys', { type: 'secret', name: 'hour', expires_in_seconds: 3600 });
        const rolled = await call('POST', `/keys/${made.body.id}/roll`, { expires_in_seconds: 0 });
        assert.equal(rolled.status, 200, JSON.stringify(rolled.body));
        assert.ok(Math.abs(rolled.body.expires_at - (now() + 3600)) <= 2, `expires_at ${rolled.body.expires_at}`);
        const old = await call('POST', '/keys', { type: 'publishable', name: 'expired', expires_in_seconds: 600 });
        await server.control.apply((d) => {
          const k = d.keys.find((x) => x.id === old.body.id)!;
          k.created_at -= 3600;
          k.expires_at = k.created_at + 600;
          return [];
        });
        const renewed = await call('POST', `/keys/${old.body.id}/roll`, {});
        assert.ok(renewed.body.expires_at !== null, 'rolling an expired key never makes one that never expires');
        assert.ok(Math.abs(renewed.body.expires_at - (now() + 600)) <= 2);
        const again = await call('POST', `/keys/${made.body.id}/roll`, { expires_in_seconds: 0 });
        assert.ok(Math.abs(again.body.expires_at - (now() + 3600)) <= 2, 'a key rolled twice: the lifetime of its line');
        const forever = await call('POST', '/keys', { type: 'secret', name: 'forever' });
        assert.equal((await call('POST', `/keys/${forever.body.id}/roll`, {})).body.expires_at, null);
      });
    });

    describe('caps per team (D-173)', () => {
      let capped: TestServer;
      let c: ReturnType<typeof adminClient>;
      let boss: Record<string, string>;
      before(async () => {
        capped = await start({
          passwordHashCost: TEST_HASH_COST,
          teamMaxKeys: 2,
          teamMaxTokens: 2,
          teamMaxWebhookEndpoints: 1,
          teamMaxApps: 2,
          teamMaxMembers: 2,
        });
        c = adminClient(new URL(capped.baseUrl).origin);
        await seedMember(capped.control, OTHER, 'other-password');
        boss = bearer(await c.token(OTHER.email, 'other-password'));
      });
      after(() => capped?.close());

      const atCap = async (answer: Promise<AdminAnswer>, cap: number, words: RegExp) => {
        const version = capped.control.read().version;
        const r = await answer;
        assert.deepEqual(
          [r.status, r.body.error?.type, r.body.error?.code],
          [409, 'invalid_request_error', 'limit_reached'],
          JSON.stringify(r.body),
        );
        assert.match(r.body.error.message, new RegExp(`cap of ${cap} `));
        assert.match(r.body.error.message, words);
        assert.equal(capped.control.read().version, version, 'a refusal changes nothing');
      };

      test('keys: working ones counted, revoked and expired ones not; a roll is never refused', async () => {
        // The other team has one working key (the fixtures').
        const k = await c.call('POST', '/keys', { type: 'secret', name: 'second' }, boss);
        assert.equal(k.status, 200);
        await atCap(c.call('POST', '/keys', { type: 'secret', name: 'third' }, boss), 2, /working API keys/);
        assert.equal((await c.call('POST', `/keys/${k.body.id}/roll`, {}, boss)).status, 200, 'a roll replaces a key');
        await c.call('POST', `/keys/${k.body.id}/revoke`, undefined, boss);
        await capped.control.apply((d) => {
          d.keys.find((x) => x.id === 'key_other_secret')!.expires_at = 1;
          return [];
        });
        assert.equal((await c.call('POST', '/keys', { type: 'secret', name: 'room' }, boss)).status, 200);
      });

      test('tokens, members, apps and webhook endpoints each stop at their cap, per team', async () => {
        // The token the suite signed in with is one.
        assert.equal((await c.call('POST', '/tokens', { name: 'two' }, boss)).status, 200);
        await atCap(c.call('POST', '/tokens', { name: 'three' }, boss), 2, /personal access tokens/);
        assert.equal((await c.call('POST', '/members', { email: 'm2@other.example', role: 'viewer' }, boss)).status, 200);
        await atCap(c.call('POST', '/members', { email: 'm3@other.example', role: 'viewer' }, boss), 2, /members/);
        assert.equal((await c.call('POST', '/apps', { name: 'second app' }, boss)).status, 200);
        await atCap(c.call('POST', '/apps', { name: 'third app' }, boss), 2, /apps/);
        const hook = { app_id: 'app_other', url: 'http://127.0.0.1:9/hook', events: ['conversation.created'] };
        assert.equal((await c.call('POST', '/webhook_endpoints', hook, boss)).status, 200);
        await atCap(c.call('POST', '/webhook_endpoints', hook, boss), 1, /webhook endpoints/);
        // Another team's records are its own: the demo team's first endpoint is made.
        const demoAdmin = bearer(await c.token(DEMO_ADMIN.email, DEMO_ADMIN.password));
        assert.equal((await c.call('POST', '/webhook_endpoints', { ...hook, app_id: 'app_demo' }, demoAdmin)).status, 200);
      });
    });
  });
}
