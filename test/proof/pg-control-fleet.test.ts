// Issue 25 item 10, D-78: the control plane of two real Parley processes on one PostgreSQL database. A
// key created, rolled and revoked through one instance, and an app changed through the control
// document by a third party, are in effect on the other instance by the time the change is answered,
// including a revoked key refused by the instance that served it a moment before. The time a change
// takes to reach the others is measured in `npm run bench` (bench/control.ts), not here.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { PgControlPlane } from '../../src/store/pg/control.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { loadFixtures } from '../../src/store/fixtures.ts';
import { draft } from '../support/control-suite.ts';
import { startFleet, type Fleet, type Instance } from '../support/fleet.ts';
import { APP, FIXTURES_DIR, KEY, TARGET_JSON } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

const ADMIN = TARGET_JSON.admin as { email: string; password: string };

/** GET /apps/{app}/config with `key` on an instance: its status. */
async function statusOf(i: Instance, key: string, app = APP): Promise<number> {
  const res = await fetch(`${i.base}/apps/${app}/config`, { headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

async function admin(i: Instance, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${i.origin}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await res.json();
  assert.equal(res.status, 200, JSON.stringify(answer));
  return answer;
}

/** A personal access token of the demo admin, made through `i`. */
async function tokenOn(i: Instance): Promise<string> {
  const s = await fetch(`${i.origin}/admin/v1/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  assert.equal(s.status, 200);
  const { csrf_token } = (await s.json()) as { csrf_token: string };
  const cookie = s.headers.get('set-cookie')!.split(';')[0]!;
  const t = await fetch(`${i.origin}/admin/v1/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf_token },
    body: JSON.stringify({ name: 'fleet proof' }),
  });
  return ((await t.json()) as { token: string }).token;
}

describe('the control plane across two instances on PostgreSQL (D-78)', () => {
  let url: string;
  let fleet: Fleet;
  let a: Instance;
  let b: Instance;
  let token: string;
  before(async () => {
    url = await freshDatabase();
    fleet = await startFleet(2, { databaseUrl: url });
    [a, b] = fleet.instances as [Instance, Instance];
    token = await tokenOn(a);
  });
  after(async () => {
    await fleet?.close();
  });

  test('a key created on one instance is accepted by the other as soon as the admin hears of it; rolled, both keys work there; revoked, refused there', async () => {
    // D-78: an admin change is answered once every live instance holds it, so nothing here waits.
    const created = await admin(a, token, 'POST', '/keys', { type: 'secret', name: 'fleet' });
    assert.equal(await statusOf(b, created.key), 200, 'the key created on A is accepted by B at once');

    const rolled = await admin(a, token, 'POST', `/keys/${created.id}/roll`, { expires_in_seconds: 3600 });
    assert.equal(await statusOf(b, rolled.key), 200, 'the rolled key is accepted by B at once');
    assert.equal(await statusOf(b, created.key), 200, 'the old key works through its grace period');

    // B served the key a moment ago; revoked on A, B refuses it.
    await admin(a, token, 'POST', `/keys/${rolled.id}/revoke`);
    assert.equal(await statusOf(a, rolled.key), 401, 'refused at once by the instance that revoked it');
    assert.equal(await statusOf(b, rolled.key), 401, 'refused at once by the other');
    assert.equal(await statusOf(b, KEY), 200, 'the other keys still work');
  });

  test('a change is not held up by a gone instance, and is answered after a bound when a live one never takes it in', async () => {
    const store = new PgStore({ url, max: 2 });
    await store.open();
    const logged: string[] = [];
    const control = await PgControlPlane.open(store.sql, { fixtures: await loadFixtures(FIXTURES_DIR), log: (m) => logged.push(m) });
    // A stuck instance: its liveness lock held (D-90) on a connection of its own, its version never moving.
    const stuck = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const flip = (active: boolean) =>
        control.apply((d) => {
          d.apps.find((x) => x.id === APP)!.active = active;
          return [draft('team_demo', 'app.updated', { target: { type: 'app', id: APP }, changes: { active: [!active, active] } })];
        });
      await store.sql`INSERT INTO control_seen (instance, version) VALUES ('gone', 0), ('stuck', 0)`;
      logged.length = 0;
      await flip(false);
      assert.deepEqual(logged, [], 'the row of an instance whose lock is free is not waited for');
      assert.equal(await statusOf(b, KEY), 403, 'B took the change in before it was answered');

      await stuck`SELECT pg_advisory_lock(hashtextextended('stuck', 0))`;
      await flip(true);
      assert.match(logged.join('\n'), /1 instance\(s\) did not take in version \d+ within 2000 ms/);
      assert.equal(await statusOf(b, KEY), 200);
    } finally {
      await stuck.end();
      await control.close();
      await store.close();
    }
  });

  test('an app changed through the control document (a third party on the database) is seen by both instances', async () => {
    const store = new PgStore({ url, max: 2 });
    await store.open();
    const control = await PgControlPlane.open(store.sql, { fixtures: await loadFixtures(FIXTURES_DIR) });
    try {
      assert.equal(await statusOf(a, KEY), 200);
      await control.apply((d) => {
        d.apps.find((x) => x.id === APP)!.active = false;
        return [draft('team_demo', 'app.updated', { target: { type: 'app', id: APP }, changes: { active: [true, false] } })];
      });
      // A tool on the database holds no version itself, and waits for the instances like they do.
      for (const i of [a, b]) assert.equal(await statusOf(i, KEY), 403, `${i.origin} refuses the deactivated app`);
      await control.apply((d) => {
        d.apps.find((x) => x.id === APP)!.active = true;
        return [draft('team_demo', 'app.updated', { target: { type: 'app', id: APP }, changes: { active: [false, true] } })];
      });
      for (const i of [a, b]) assert.equal(await statusOf(i, KEY), 200, `${i.origin} serves the app again`);
    } finally {
      await control.close();
      await store.close();
    }
  });
});
