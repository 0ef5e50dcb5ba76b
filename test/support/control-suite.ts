// The behaviours every control-plane backend keeps (src/store/control.ts, D-75…D-78), whatever stores
// them: one suite, run against the data directory's files and PostgreSQL by test/control-store.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuditAction } from '../../src/contract/audit-actions.ts';
import type { ControlDocT, FixturesT } from '../../src/core/control.ts';
import type { AuditDraft, ControlPlane } from '../../src/store/control.ts';
import { loadFixtures } from '../../src/store/fixtures.ts';
import { FIXTURES_DIR } from './helpers.ts';

export interface ControlHarness {
  /** New, empty storage; `open` opens a control plane over it (each open a new instance). */
  fresh(): Promise<{ open(fixtures: FixturesT, log?: (m: string) => void, now?: () => number): Promise<ControlPlane> }>;
}

/** An entry to store; the stores keep any action, so tests name their own (`test.…`) beside D-75's. */
export const draft = (team: string, action: string, over: Partial<AuditDraft> = {}): AuditDraft => ({
  team_id: team,
  action: action as AuditAction,
  actor: { type: 'member', id: 'mem_demo_admin', email: 'admin@demo.example' },
  address: '127.0.0.1',
  user_agent: 'test',
  request_id: 'req_test',
  target: { type: 'app', id: 'app_demo' },
  changes: {},
  ...over,
});

const rename = (name: string) => (d: ControlDocT) => {
  const app = d.apps.find((a) => a.id === 'app_demo')!;
  const before = app.name;
  app.name = name;
  return [draft('team_demo', 'app.updated', { changes: { name: [before, name] } })];
};

export function controlSuite(name: string, h: ControlHarness): void {
  describe(`control plane: ${name}`, () => {
    test('D-77: a new one is seeded from the fixtures (the demo admin with a scrypt hash); a reopen keeps its version', async () => {
      const fixtures = await loadFixtures(FIXTURES_DIR);
      const s = await h.fresh();
      const c = await s.open(fixtures);
      try {
        const doc = c.read();
        assert.equal(doc.version, 1);
        const admin = doc.members.find((m) => m.email === 'admin@demo.example');
        assert.equal(admin?.role, 'admin');
        assert.match(admin!.password_hash!, /^scrypt\$15\$8\$1\$/);
        assert.deepEqual(
          doc.apps.map((a) => a.id),
          fixtures.apps.map((a) => a.id),
        );
        await c.apply(rename('Renamed'));
      } finally {
        await c.close();
      }
      const again = await s.open(fixtures);
      try {
        assert.equal(again.read().version, 2);
        assert.equal(
          again.read().apps.find((a) => a.id === 'app_demo')!.name,
          'Renamed',
          'the change outlived the reopen; the fixtures did not overwrite it',
        );
      } finally {
        await again.close();
      }
    });

    test('D-75: a change and its audit entries land together; the log lists a team its own, newest first, by pages', async () => {
      const s = await h.fresh();
      const c = await s.open(await loadFixtures(FIXTURES_DIR));
      const seen: number[] = [];
      c.onChange((doc) => seen.push(doc.version));
      try {
        for (let i = 1; i <= 5; i++) await c.apply(rename(`Name ${i}`));
        await c.audit.append([draft('team_other', 'session.created'), draft('team_demo', 'session.failed', { target: null })]);
        assert.deepEqual(seen, [2, 3, 4, 5, 6], 'told of every version');
        const first = await c.audit.list({ team_id: 'team_demo', limit: 4 });
        assert.deepEqual(
          first.data.map((a) => a.action),
          ['session.failed', 'app.updated', 'app.updated', 'app.updated'],
        );
        assert.equal(first.has_more, true);
        assert.deepEqual(first.data[1]!.changes, { name: ['Name 4', 'Name 5'] });
        assert.match(first.data[0]!.id, /^aud_/);
        const second = await c.audit.list({ team_id: 'team_demo', limit: 4, after: first.data.at(-1)!.id });
        assert.deepEqual(
          second.data.map((a) => a.changes.name?.[1]),
          ['Name 2', 'Name 1'],
        );
        assert.equal(second.has_more, false);
        const other = await c.audit.list({ team_id: 'team_other', limit: 10 });
        assert.deepEqual(
          other.data.map((a) => a.action),
          ['session.created'],
          "a team never lists another's entries",
        );
        const only = await c.audit.list({ team_id: 'team_demo', limit: 10, action: 'session.failed' });
        assert.equal(only.data.length, 1);
        const newest = first.data[0]!.created_at;
        const oldest = second.data.at(-1)!.created_at;
        assert.equal((await c.audit.list({ team_id: 'team_demo', limit: 10, since: newest + 1 })).data.length, 0);
        assert.equal((await c.audit.list({ team_id: 'team_demo', limit: 10, until: oldest - 1 })).data.length, 0);
        assert.equal((await c.audit.list({ team_id: 'team_demo', limit: 10, since: oldest, until: newest })).data.length, 6);
        assert.equal((await c.audit.list({ team_id: 'team_demo', limit: 10, after: 'aud_unknown' })).data.length, 0);
      } finally {
        await c.close();
      }
    });

    test('a change that throws, or leaves a reference dangling, changes nothing and records nothing', async () => {
      const s = await h.fresh();
      const c = await s.open(await loadFixtures(FIXTURES_DIR));
      try {
        await assert.rejects(
          c.apply((d) => {
            d.apps[0]!.name = 'half done';
            throw new Error('refused');
          }),
          /refused/,
        );
        await assert.rejects(
          c.apply((d) => {
            d.apps[0]!.plan = 'no_such_plan';
            return [draft('team_demo', 'app.updated')];
          }),
          /unknown plan no_such_plan/,
        );
        assert.equal(c.read().version, 1);
        assert.notEqual(c.read().apps[0]!.name, 'half done');
        assert.equal((await c.audit.list({ team_id: 'team_demo', limit: 10 })).data.length, 0);
        const doc = await c.apply(rename('After'));
        assert.equal(doc.version, 2, 'the next change goes on from the last good one');
      } finally {
        await c.close();
      }
    });

    test('D-77: a later fixtures file adds the ids the control plane lacks, changes nothing else, and says so', async () => {
      const s = await h.fresh();
      const fixtures = await loadFixtures(FIXTURES_DIR);
      await (await s.open(fixtures)).close();
      const changedFixtures = structuredClone(fixtures);
      changedFixtures.apps.push({ ...structuredClone(fixtures.apps[0]!), id: 'app_added', name: 'Added later' });
      changedFixtures.apps[0]!.name = 'Changed in the file';
      const logged: string[] = [];
      const c = await s.open(changedFixtures, (m) => logged.push(m));
      try {
        const doc = c.read();
        assert.equal(doc.apps.find((a) => a.id === 'app_added')?.name, 'Added later');
        assert.equal(doc.apps[0]!.name, fixtures.apps[0]!.name, 'an existing record is left as it is');
        assert.ok(logged.some((m) => /added from the fixtures: apps\/app_added/.test(m)));
        assert.ok(logged.some((m) => /differ from the fixtures.*apps\/app_demo/.test(m)));
        assert.equal(doc.version, 2);
      } finally {
        await c.close();
      }
      const again = await s.open(changedFixtures);
      assert.equal(again.read().version, 2, 'nothing left to add: no change');
      await again.close();
    });

    test('D-77: the records the fixtures give no date are dated when seeded, and keep that date at every later start', async () => {
      const s = await h.fresh();
      const fixtures = await loadFixtures(FIXTURES_DIR);
      const seededMs = Date.UTC(2026, 10, 1, 12);
      const seeded = Math.floor(seededMs / 1000);
      const dates = (doc: ControlDocT) => [...doc.members, ...doc.keys].map((r) => [r.id, r.created_at]);
      const first = await s.open(fixtures, undefined, () => seededMs);
      const atSeed = dates(first.read());
      await first.close();
      assert.ok(atSeed.length >= 2);
      for (const [id, at] of atSeed) assert.equal(at, seeded, `${id} is dated at its seeding, not 1970`);
      const later = structuredClone(fixtures);
      later.keys.push({ ...structuredClone(fixtures.keys[0]!), id: 'key_added_later', sha256: 'a'.repeat(64) });
      const logged: string[] = [];
      const again = await s.open(
        later,
        (m) => logged.push(m),
        () => seededMs + 86_400_000,
      );
      try {
        const doc = again.read();
        assert.deepEqual(
          dates(doc).filter(([id]) => id !== 'key_added_later'),
          atSeed,
          'a restart does not re-date them',
        );
        assert.equal(
          doc.keys.find((k) => k.id === 'key_added_later')!.created_at,
          seeded + 86_400,
          'a record merged later: the time of its merge',
        );
        assert.ok(!logged.some((m) => /differ from the fixtures/.test(m)), `the seeding's date is no difference: ${logged.join(' | ')}`);
      } finally {
        await again.close();
      }
    });

    test('D-77: what a sign-in writes is no difference from the fixtures; a real change of the record (its role) still is', async () => {
      const s = await h.fresh();
      const fixtures = await loadFixtures(FIXTURES_DIR);
      const c = await s.open(fixtures);
      try {
        await c.apply((d) => {
          d.members.find((m) => m.id === 'mem_demo_admin')!.last_sign_in_at = 1_800_000_000;
          return [draft('team_demo', 'session.created', { target: { type: 'member', id: 'mem_demo_admin' } })];
        });
      } finally {
        await c.close();
      }
      const logged: string[] = [];
      const signedIn = await s.open(fixtures, (m) => logged.push(m));
      try {
        assert.ok(!logged.some((m) => /differ from the fixtures/.test(m)), logged.join(' | '));
        await signedIn.apply((d) => {
          d.members.find((m) => m.id === 'mem_demo_admin')!.role = 'viewer';
          return [draft('team_demo', 'member.updated', { target: { type: 'member', id: 'mem_demo_admin' } })];
        });
      } finally {
        await signedIn.close();
      }
      const changed: string[] = [];
      await (await s.open(fixtures, (m) => changed.push(m))).close();
      assert.ok(
        changed.some((m) => /differ from the fixtures.*members\/mem_demo_admin/.test(m)),
        changed.join(' | '),
      );
    });

    test("D-150: an endpoint's signing key outlives a reopen; one saved without is given the team's oldest working key, audited", async () => {
      const s = await h.fresh();
      const fixtures = await loadFixtures(FIXTURES_DIR);
      const c = await s.open(fixtures);
      const endpoint = (id: string, signing_key_id: string | null) => ({
        id,
        team_id: 'team_demo',
        app_id: 'app_demo',
        url: 'https://hooks.example/x',
        events: ['*'],
        description: '',
        enabled: true,
        disabled_reason: null,
        signing_key_id,
        created_at: 1,
        updated_at: 1,
      });
      try {
        await c.apply((d) => {
          const demo = d.keys.find((k) => k.id === 'key_demo_secret')!;
          // Made after the demo key (dated at its seeding, D-77): the demo key stays the oldest.
          d.keys.push({ ...demo, id: 'key_later', sha256: 'f'.repeat(64), created_at: demo.created_at + 100 });
          d.webhook_endpoints.push(endpoint('we_named', 'key_later'), endpoint('we_before', null));
          return [draft('team_demo', 'test.endpoints')];
        });
      } finally {
        await c.close();
      }
      const again = await s.open(fixtures);
      try {
        const byId = new Map(again.read().webhook_endpoints.map((e) => [e.id, e.signing_key_id]));
        assert.deepEqual([byId.get('we_named'), byId.get('we_before')], ['key_later', 'key_demo_secret']);
        const audit = await again.audit.list({ team_id: 'team_demo', action: 'webhook_endpoint.updated', limit: 10 });
        assert.deepEqual(
          audit.data.map((a) => [a.target?.id, a.actor.type, a.changes.signing_key_id]),
          [['we_before', 'system', [null, 'key_demo_secret']]],
        );
      } finally {
        await again.close();
      }
      const third = await s.open(fixtures);
      assert.equal(third.read().version, 3, 'assigned once: a later open changes nothing');
      await third.close();
    });

    test('D-67, D-69, D-70: sessions, sign-in failures and key use outlive a reopen', async () => {
      const s = await h.fresh();
      const fixtures = await loadFixtures(FIXTURES_DIR);
      const now = Date.now();
      const c = await s.open(fixtures);
      const base = { member_id: 'mem_demo_admin', team_id: 'team_demo', csrf_token: 'csrf', created_at: now, seen_at: now };
      try {
        await c.sessions.create({ id: 's1', ...base });
        await c.sessions.create({ id: 's2', ...base });
        await c.sessions.create({ id: 's3', ...base, member_id: 'mem_other' });
        await c.sessions.touch('s1', now + 5);
        await c.sessions.endMember('mem_demo_admin', 's1');
        const admitAll = () => 0;
        await c.signInFailures.reserve(['pair:a'], 0, now - 10, admitAll);
        await c.signInFailures.reserve(['pair:a', 'pair:b'], 0, now - 5, admitAll);
        await c.signInFailures.reserve(['pair:a'], 0, now - 4, admitAll);
        await c.signInFailures.release('pair:a', now - 4);
        await c.signInFailures.clear('pair:b');
        c.keyUse.record('key_demo_secret', now);
        assert.deepEqual([...(await c.keyUse.lastUsed(['key_demo_secret', 'key_x']))], [['key_demo_secret', Math.floor(now / 1000)]]);
      } finally {
        await c.close();
      }
      const again = await s.open(fixtures);
      try {
        assert.equal((await again.sessions.get('s1'))?.seen_at, now + 5);
        assert.equal(await again.sessions.get('s2'), undefined, "ended with the member's others");
        assert.equal((await again.sessions.get('s3'))?.member_id, 'mem_other');
        await again.sessions.end('s3');
        assert.equal(await again.sessions.get('s3'), undefined);
        let seen: number[][] = [];
        const refused = await again.signInFailures.reserve(['pair:a', 'pair:b'], now - 7, now, (failures) => {
          seen = failures;
          return 1;
        });
        assert.deepEqual([refused, seen], [1, [[now - 5], []]], 'the window, the release and the clear outlived the reopen');
        assert.equal((await again.keyUse.lastUsed(['key_demo_secret'])).get('key_demo_secret'), Math.floor(now / 1000), 'flushed at close');
      } finally {
        await again.close();
      }
    });
  });
}
