// Issue 25 item 10, D-78: the control plane of two real Parley processes on one PostgreSQL database. A
// key created, rolled and revoked through one instance, and an app changed through the control
// document by a third party, take effect on the other instance by themselves; the test waits for each
// effect (bound 30 s), including a revoked key refused by the instance that served it a moment before.
// The 2 s figure is measured in `npm run bench` (bench/control-propagation.ts), not here.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PgControlPlane } from '../../src/store/pg/control.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { loadFixtures } from '../../src/store/tenants.ts';
import { draft } from '../support/control-suite.ts';
import { startFleet, type Fleet, type Instance } from '../support/fleet.ts';
import { APP, FIXTURES_DIR, KEY, TARGET_JSON } from '../support/helpers.ts';
import { until } from '../support/live-reply.ts';
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

  test('a key created on one instance is accepted by the other; rolled, both keys work there; revoked, it is refused there', async () => {
    const created = await admin(a, token, 'POST', '/keys', { type: 'secret', name: 'fleet' });
    await until('the key created on A is accepted by B', async () => (await statusOf(b, created.key)) === 200);

    const rolled = await admin(a, token, 'POST', `/keys/${created.id}/roll`, { expires_in_seconds: 3600 });
    await until('the rolled key is accepted by B', async () => (await statusOf(b, rolled.key)) === 200);
    assert.equal(await statusOf(b, created.key), 200, 'the old key works through its grace period');

    // B served the key a moment ago; revoked on A, B refuses it by itself.
    assert.equal(await statusOf(b, rolled.key), 200);
    await admin(a, token, 'POST', `/keys/${rolled.id}/revoke`);
    assert.equal(await statusOf(a, rolled.key), 401, 'refused at once by the instance that revoked it');
    await until('the revoked key is refused by B', async () => (await statusOf(b, rolled.key)) === 401);
    assert.equal(await statusOf(b, KEY), 200, 'the other keys still work');
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
      for (const i of [a, b]) await until(`${i.origin} refuses the deactivated app`, async () => (await statusOf(i, KEY)) === 403);
      await control.apply((d) => {
        d.apps.find((x) => x.id === APP)!.active = true;
        return [draft('team_demo', 'app.updated', { target: { type: 'app', id: APP }, changes: { active: [false, true] } })];
      });
      for (const i of [a, b]) await until(`${i.origin} serves the app again`, async () => (await statusOf(i, KEY)) === 200);
    } finally {
      await control.close();
      await store.close();
    }
  });
});
